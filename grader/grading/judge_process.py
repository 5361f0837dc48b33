"""One judge process (grading/isolated_worker.py) and its two pipes, as grading/isolated.py uses them: a request
out, an answer back, read as hostile bytes; how a request that went wrong ends, and whose fault it was."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from multiprocessing.connection import Connection
from typing import Any

from grader.containers.protocol import FrameError, loads_bounded

log = logging.getLogger(__name__)

MAX_ANSWER_BYTES = 1024 * 1024
MAX_ANSWER_DEPTH = 16
# What a judge process inherits of the environment: nothing of the service's configuration or secrets.
ENVIRONMENT = ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "HOME", "VIRTUAL_ENV")


class JudgeUnavailable(Exception):
    """No judge process could be had: the judge's own failure, never the submission's."""


class JudgeStopped(JudgeUnavailable):
    """A judge process was stopped from outside while it judged (no value can stop it): asked again once, in
    a fresh process, then the judge's failure."""


class JudgeLimit(Exception):
    """A request ended its judge process (or took too long): the values it carried were too much to judge."""


def _environment() -> dict[str, str]:
    env = {name: os.environ[name] for name in ENVIRONMENT if name in os.environ}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


class JudgeProcess:
    """One judge process and its two pipes."""

    def __init__(self, memory_mb: int, cpu_s: float) -> None:
        self.memory_mb, self.cpu_s = memory_mb, cpu_s
        requests_in, requests_out = os.pipe()
        answers_in, answers_out = os.pipe()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "grader.grading.isolated_worker", str(memory_mb), str(cpu_s)],
                stdin=requests_in,
                stdout=answers_out,
                stderr=subprocess.DEVNULL,
                env=_environment(),
                cwd="/",
                close_fds=True,
                start_new_session=True,  # a Ctrl-C meant for the service is the service's to handle
            )
        except BaseException:
            for fd in (requests_out, answers_in):
                os.close(fd)
            raise
        finally:
            os.close(requests_in)
            os.close(answers_out)
        self._requests = Connection(requests_out, readable=False)
        self._answers = Connection(answers_in, writable=False)
        self.specs: set[bytes] = set()  # the specs it was sent (it may have dropped some since)
        self.alive = True

    def ask(self, request: bytes, timeout_s: float) -> dict[str, Any]:
        """One request's answer; JudgeLimit when the process ended, stalled or answered nonsense (it is
        then gone)."""
        try:
            self._requests.send_bytes(request)
            if not self._answers.poll(timeout_s):
                stopped = self.stopped()
                self.kill()
                if stopped:  # something outside stopped it (no value can): the judge's failure, not the test's
                    raise JudgeStopped("a judge process was stopped from outside while it judged")
                raise JudgeLimit(f"more than {timeout_s:g} s")
            raw = self._answers.recv_bytes(MAX_ANSWER_BYTES)
        except (EOFError, OSError):
            self.kill()
            raise JudgeLimit(self._why()) from None
        try:
            answer = loads_bounded(raw, MAX_ANSWER_DEPTH)
        except FrameError:
            answer = None
        if not isinstance(answer, dict):
            self.kill()
            raise JudgeLimit("an answer that is not one")
        if "limit" in answer:
            raise JudgeLimit(f"more than its {self.memory_mb} MB of memory")
        return answer

    def _why(self) -> str:
        try:
            code = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        if code == -signal.SIGXCPU:
            return f"more than {self.cpu_s:g} s of CPU"
        return f"more than its {self.memory_mb} MB of memory" if code is not None and code < 0 else "a lost process"

    def stopped(self) -> bool:
        """Whether the process is stopped (SIGSTOP, a debugger), as the kernel says (/proc/<pid>/stat)."""
        try:
            with open(f"/proc/{self.process.pid}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            return False
        return bool(fields) and fields[0] in (b"T", b"t")

    def healthy(self) -> bool:
        """Alive and running: an idle process that died or was stopped is replaced before it is used."""
        return self.alive and self.process.poll() is None and not self.stopped()

    def kill(self) -> None:
        self.alive = False
        try:
            self.process.kill()
        except OSError:
            pass

    def close(self) -> None:
        """Ends the process: its requests' pipe closes, and it exits; killed if it does not."""
        self.alive = False
        for connection in (self._requests, self._answers):
            try:
                connection.close()
            except OSError:
                pass
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
