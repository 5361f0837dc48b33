"""The runner's hold on one child: the pipes to it, its frames, its printed output, how it ended.

Every child is forked by the zygote (never by the runner, whose memory holds jobs). Whatever a child
writes on its result pipe, await_frame() returns an outcome: a frame, or the status the runner's own
accounting gives (time, output, tasks, the way the process ended). It never raises for the child's
bytes.
"""

from __future__ import annotations

import fcntl
import math
import os
import select
import selectors
import signal
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from . import cleanup, protocol, zygote
from .messages import Report, error
from .peak import MEMORY_GRACE_S, PeakMemory
from .protocol import CHILD_TEST_OUTCOMES, LOAD_OUTCOMES, Outcome

if TYPE_CHECKING:
    from .shared import SharedArea

READ_CHUNK = 1 << 16
FORK_RETRIES = 50
# Processes and threads a submission may have at once. Below the container's --pids-limit (which
# counts the runner and the zygote too), and the only such limit under gVisor, where the host's pids
# limit counts the runtime's own threads and an exhausted one takes the whole sandbox down.
MAX_TASKS = 96
TASK_POLL_S = 0.05
# How long after its result pipe closes a child's end may take to be reported by the zygote.
EXIT_REPORT_GRACE_S = 2.0
# What a child may print before its READY (its warm-up is the judge's code: normally nothing).
READY_OUTPUT_LIMIT = 1 << 20


def _fork_child(forker: zygote.ZygoteClient, fds: tuple[int, ...]) -> int:
    """A child from the zygote, retried while a submission's stragglers still hold the pid budget."""
    for _ in range(FORK_RETRIES):
        try:
            return forker.fork_child(fds)
        except BlockingIOError:
            cleanup.kill_others()
            time.sleep(0.02)
    return forker.fork_child(fds)


# The outcomes a child may report in each kind of frame it sends.
ALLOWED = {
    protocol.CHILD_READY: (Outcome.OK,),
    protocol.CHILD_LOAD: LOAD_OUTCOMES,
    protocol.CHILD_BUILT: LOAD_OUTCOMES,
    protocol.CHILD_RESULT: CHILD_TEST_OUTCOMES,
}


class Child(PeakMemory):
    def __init__(self, forker: zygote.ZygoteClient, area: SharedArea | None = None) -> None:
        """`area`: a benchmark module's shared area (shared.py), handed to the child as it is forked."""
        self.forker = forker
        self.area = area
        cmd_r, self.cmd_w = os.pipe2(os.O_CLOEXEC)
        self.res_r, res_w = os.pipe2(os.O_CLOEXEC)
        self.out_r, out_w = os.pipe2(os.O_CLOEXEC)
        try:
            self.pid = _fork_child(forker, (cmd_r, res_w, out_w) + ((area.fd,) if area and area.fd is not None else ()))
        except BaseException:
            if area is not None:
                area.close()
            raise
        finally:
            for fd in (cmd_r, res_w, out_w):
                os.close(fd)
        if area is not None:
            area.forked()
        self.exit_status: int | None = None
        self.command_closed = False  # a command met a pipe with no reader (send)
        for fd in (self.res_r, self.out_r, self.cmd_w):
            flags = fcntl.fcntl(fd, fcntl.F_GETFL)
            fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        self.reader = protocol.FrameReader(max_body=0)
        self.output_bytes = 0  # printed during the current test (or the loading), for its limit
        self.shown_bytes = 0  # printed since the output was last taken (loading's goes to the first test)
        self.captured = bytearray()  # the first MAX_OUTPUT bytes of that, to be shown
        self.out_open = True
        self.ready = False  # its READY came: prepared and warmed up, waiting for its job
        self.peak_at_timeout: int | None = None  # MB resident at its peak, read when its time ran out
        self.memory_mb: int | None = None  # its job's memory limit, once it has a job
        self.graced = False  # the memory's grace (MEMORY_GRACE_S) given once
        # The current test's memory (reset_peak): whether its high-water mark was reset, the largest VmRSS
        # seen where there is no high-water mark (gVisor), and its peak read just before the runner killed it.
        self.peak_reset = False
        self.rss_seen: int | None = None
        self.peak_at_kill: int | None = None
        self.last_kind = b""  # the kind of the frame await_frame returned last
        self.queued: list[tuple[bytes, dict, bytes]] = []  # frames read with an earlier one, not yet taken
        # Made once for the child's life (each wait for a frame reuses it): a selector per wait cost four system
        # calls more per test, each a trap into the runtime under gVisor.
        self._selector: selectors.BaseSelector | None = None
        self._status_fd: int | None = None  # its /proc status, opened once (_memory)
        self._refs_fd: int | None = None  # its /proc clear_refs, opened once (reset_peak)

    def await_ready(self, deadline: float, oom_before: int, phase: str) -> Report | None:
        """Waits for the child's READY (sent once it has prepared its confinement and warmed up); None
        once it came, else the outcome of a child that never got ready (it is killed then)."""
        if not self.ready:
            report, _ = self.await_frame(protocol.CHILD_READY, deadline, READY_OUTPUT_LIMIT, oom_before, phase)
            if report.status != Outcome.OK:
                return report
            self.ready = True
            # Anything printed so far came from the judge's own warm-up, not from the submission.
            self.captured.clear()
            self.output_bytes = self.shown_bytes = 0
        return None

    # -- commands ----------------------------------------------------------------------------------
    def send(
        self, kind: bytes, header: dict, body: bytes, deadline: float, idle: Callable[[], None] | None = None
    ) -> bool:
        """Writes a command; False if the child does not take it all by the deadline (a child that stops
        reading its commands could otherwise block the runner on a full pipe) or is gone. idle(): called
        once if the child does not take it at once (the runner then writes what it held back first)."""
        view = memoryview(protocol.encode(kind, header, body))
        try:
            while view:
                try:
                    view = view[os.write(self.cmd_w, view) :]
                    continue
                except BlockingIOError:
                    pass
                if idle is not None:
                    call, idle = idle, None
                    call()
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([], [self.cmd_w], [], remaining)[1]:
                    return False
        except BrokenPipeError:
            self.command_closed = True  # no reader left: it ended, or closed its end (unsent_outcome)
            return False
        except (OSError, ValueError):
            return False
        return True

    def kill(self) -> None:
        if self.exit_status is None:
            self.peak_at_kill = self.test_peak_mb()
            cleanup.kill_others()
            self.reap(block=True)

    def reap(self, block: bool) -> bool:
        """True once the child has ended (its parent, the zygote, reports the wait status)."""
        if self.exit_status is None:
            status = self.forker.exit_status(self.pid, block)
            if status is None:
                return False
            self.exit_status = status
        return True

    def close(self, wait: bool = True) -> None:
        """Kills the child (if it still runs) and closes the pipes to it. wait=False: without waiting for
        its end, which the container's clean-up does (cleanup.clean_container waits for every process)."""
        if wait:
            self.kill()
        elif self.exit_status is None:
            cleanup.kill_others()
            self.forker.abandon(self.pid)
        if self._selector is not None:
            self._selector.close()
            self._selector = None
        self.close_memory()
        if self.area is not None:
            self.area.close()
        for fd in (self.cmd_w, self.res_r, self.out_r):
            try:
                os.close(fd)
            except OSError:
                pass

    # -- printed output ------------------------------------------------------------------------------
    def take_output(self) -> str | None:
        """What was printed since the last call, cut to MAX_OUTPUT characters with the cut shown."""
        if not self.shown_bytes:
            return None
        text = bytes(self.captured).decode("utf-8", "replace")
        if self.shown_bytes > len(self.captured):
            text += protocol.TRUNCATED
        self.captured.clear()
        self.shown_bytes = 0
        return protocol.bounded_text(text, protocol.MAX_OUTPUT + len(protocol.TRUNCATED))

    def _printed(self, data: bytes) -> None:
        self.output_bytes += len(data)
        self.shown_bytes += len(data)
        room = protocol.MAX_OUTPUT - len(self.captured)
        if room > 0:
            self.captured += data[:room]

    def _drain_output(self) -> None:
        """Reads what the child printed before it wrote its frame (it flushes first), so that the output
        is charged to the test that printed it."""
        while self.out_open:
            try:
                data = os.read(self.out_r, READ_CHUNK)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self.out_open = False
                return
            self._printed(data)

    # -- how the child ended -------------------------------------------------------------------------
    def channel_closed(self, oom_before: int, phase: str) -> Report:
        """The result pipe reached EOF: the child exited (the zygote reports how, soon; later under memory
        pressure), or it closed its descriptors and lives on."""
        if self._exit_reported():
            return self.death_outcome(oom_before, phase)
        self.kill()
        if cleanup.oom_kills() > oom_before:
            return Report(Outcome.MEMORY, message=f"killed for using too much memory during {phase}")
        return error(f"the process closed its result channel during {phase}", "Protocol")

    def unsent_outcome(self, oom_before: int, phase: str) -> Report:
        """A command could not be delivered: the child ended (its end of the pipe closed before the zygote
        reported it: waited for, as for a closed result channel), closed its end, or stopped reading."""
        if self.reap(block=False) or (self.command_closed and self._exit_reported()):
            return self.death_outcome(oom_before, phase)
        self.kill()
        if self.command_closed:
            return error(f"the process closed its command channel during {phase}", "Protocol")
        return Report(Outcome.TIMEOUT, message=f"the process stopped taking commands during {phase}")

    def _exit_reported(self) -> bool:
        """Whether the zygote reports the child's end within EXIT_REPORT_GRACE_S."""
        grace = time.monotonic() + EXIT_REPORT_GRACE_S
        while time.monotonic() < grace:
            if self.reap(block=False):
                return True
            time.sleep(0.005)
        return False

    def death_outcome(self, oom_before: int, phase: str) -> Report:
        """Why the child ended without sending its result, from the runner's own accounting."""
        self.reap(block=True)
        status = self.exit_status if self.exit_status is not None else -1
        if os.WIFSIGNALED(status):
            number = os.WTERMSIG(status)
            if number == signal.SIGKILL and cleanup.oom_kills() > oom_before:
                return Report(Outcome.MEMORY, message=f"killed for using too much memory during {phase}")
            if number == signal.SIGXCPU:
                return Report(Outcome.TIMEOUT, message=f"CPU time limit exceeded during {phase}")
            known = signal.Signals._value2member_map_
            name = signal.Signals(number).name if number in known else str(number)
            return error(f"the process was killed by {name} during {phase}", "Crash")
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
        return error(f"the process exited (code {code}) during {phase}", "Exit")

    # -- waiting for a frame -------------------------------------------------------------------------
    def await_frame(
        self,
        expected_kind: bytes | tuple[bytes, ...],
        deadline: float,
        output_limit: int,
        oom_before: int,
        phase: str,
        idle: tuple[float, Callable[[], None]] | None = None,
    ) -> tuple[Report, bytes]:
        """Waits for the child's next frame (of `expected_kind`, or one of them), enforcing the wall-clock, output
        and task limits. idle=(seconds, call): call() once the frame has not come for that long (the runner then
        writes what it held). `self.last_kind`: the kind of the frame returned."""
        if self.queued:  # a frame that came with the one before it
            return self._take(self.queued.pop(0), expected_kind, phase)
        selector = self._selector
        if selector is None:
            selector = self._selector = selectors.DefaultSelector()
            selector.register(self.res_r, selectors.EVENT_READ, "res")
            if self.out_open:
                selector.register(self.out_r, selectors.EVENT_READ, "out")
            # The command pipe's write end never reads; it is watched for its error, which comes once no reader is
            # left: a child that lets go of its commands after the runner wrote the next one is told so, not timed.
            if not self.command_closed:
                selector.register(self.cmd_w, selectors.EVENT_READ, "cmd")
        next_census = time.monotonic() + TASK_POLL_S
        idle_at, on_idle = (time.monotonic() + idle[0], idle[1]) if idle is not None else (math.inf, None)
        while True:
            now = time.monotonic()
            remaining = deadline - now
            if remaining <= 0:
                peak = self.peak_mb()  # before it is gone: was it filling its memory?
                if self._memory_grace(peak):
                    deadline = now + MEMORY_GRACE_S
                    continue
                self.peak_at_timeout = peak
                self.kill()
                return Report(Outcome.TIMEOUT, message=f"time limit exceeded during {phase}"), b""
            if now >= next_census:
                next_census = now + TASK_POLL_S
                if not self.peak_reset:
                    self._sample_memory()
                if cleanup.submission_tasks() > MAX_TASKS:
                    self.kill()
                    message = f"more than {MAX_TASKS} processes and threads at once during {phase}"
                    return error(message, "Resources"), b""
            if on_idle is not None and now >= idle_at:
                call, on_idle, idle_at = on_idle, None, math.inf
                call()
            for key, _ in selector.select(max(0.0, min(remaining, TASK_POLL_S, idle_at - now))):
                outcome = self._readable(key, selector, expected_kind, deadline, output_limit, oom_before, phase)
                if outcome is not None:
                    return outcome

    def _readable(
        self,
        key: selectors.SelectorKey,
        selector: selectors.BaseSelector,
        expected_kind: bytes | tuple[bytes, ...],
        deadline: float,
        output_limit: int,
        oom_before: int,
        phase: str,
    ) -> tuple[Report, bytes] | None:
        if key.data == "cmd":
            return self._let_go(selector, expected_kind, deadline, output_limit, oom_before, phase)
        try:
            data = os.read(key.fd, READ_CHUNK)
        except BlockingIOError:
            return None
        except OSError:
            data = b""
        if key.data == "out":
            if not data:
                self.out_open = False
                if self.out_r in selector.get_map():
                    selector.unregister(self.out_r)
                return None
            self._printed(data)
            if self.output_bytes > output_limit:
                self.kill()
                return Report(
                    Outcome.OUTPUT, message=f"printed more than {output_limit // 1024} KiB during {phase}"
                ), b""
            return None
        if not data:
            return self.channel_closed(oom_before, phase), b""
        try:
            received = self.reader.feed(data)
        except OverflowError:
            self.kill()
            if self.area is not None:  # its values go through its area: a large body is none of its frames
                return error(f"malformed result during {phase}: a value outside its area", "Protocol"), b""
            return Report(Outcome.OUTPUT, message=f"the result of {phase} is too large"), b""
        except Exception:  # noqa: BLE001 - FrameError, or anything else the child's bytes provoke
            self.kill()
            return error(f"malformed result during {phase}", "Protocol"), b""
        if not received:
            return None
        self.queued.extend(received[1:])  # a child that wrote more than one: the next wait takes the next
        return self._take(received[0], expected_kind, phase)

    def _let_go(
        self,
        selector: selectors.BaseSelector,
        expected_kind: bytes | tuple[bytes, ...],
        deadline: float,
        output_limit: int,
        oom_before: int,
        phase: str,
    ) -> tuple[Report, bytes]:
        """No reader is left on the command pipe while a frame is awaited: what the child wrote before is taken
        first (its result, or the end of its channel), then it is told as a command that could not be delivered."""
        selector.unregister(self.cmd_w)
        self.command_closed = True
        results = selector.get_key(self.res_r)
        for _ in range(64):  # at most 4 MiB already written: a frame larger than that is not waited for
            outcome = self._readable(results, selector, expected_kind, deadline, output_limit, oom_before, phase)
            if outcome is not None:
                return outcome
            if not select.select([self.res_r], [], [], 0)[0]:
                break
        return self.unsent_outcome(oom_before, phase), b""

    def _take(
        self, frame: tuple[bytes, dict, bytes], expected_kind: bytes | tuple[bytes, ...], phase: str
    ) -> tuple[Report, bytes]:
        kind, header, body = frame
        if kind not in (expected_kind if isinstance(expected_kind, tuple) else (expected_kind,)):
            self.kill()
            return error(f"unexpected message during {phase}", "Protocol"), b""
        self._drain_output()
        self.last_kind = kind
        return Report.from_child(header, ALLOWED[kind], indexed=kind == protocol.CHILD_RESULT), body
