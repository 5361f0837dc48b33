"""A benchmark's children as the runner holds them (timing.py): their CPU time, their CPU, stopping and waking
them, their pipes, and the values kept of their calls."""

from __future__ import annotations

import fcntl
import os
import secrets
import signal
import time
from collections.abc import Callable
from typing import Protocol

from .child import Child
from .messages import Report
from .protocol import Outcome
from .zygote import ZygoteClient


class Host(Protocol):
    """What a benchmark needs of the runner (runner.py): its zygote, its frames out, its spare child."""

    forker: ZygoteClient

    def emit(self, kind: bytes, header: dict, body: bytes = b"", hold: bool = False) -> None: ...

    def drop_spare(self) -> None: ...


FREEZE_WAIT_S = 0.5
STOPPED_STATES = (b"T", b"t", b"Z", b"X")


def cpu_ns(pid: int) -> int | None:
    """The CPU time a process has had, in ns, every thread of it (a benchmark's child has one: seccomp refuses it
    another), from /proc/<pid>/task/*/schedstat; None where the kernel keeps none (gVisor)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    total = 0
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat", "rb") as stat:
                total += int(stat.read().split()[0])
        except (OSError, ValueError, IndexError):
            return None
    return total if tasks else None


def pick_cpu() -> int:
    """The CPU both children are pinned to: the highest this runner may use (the lowest takes more of the
    machine's interrupts), or -1 where affinity is not to be had."""
    try:
        return max(os.sched_getaffinity(0))
    except (OSError, ValueError, AttributeError):
        return -1


def _all_stopped(pid: int) -> bool:
    """Every thread of the process stopped (or gone)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/stat", "rb") as stat:
                data = stat.read()
        except OSError:
            continue
        at = data.rfind(b")")
        if data[at + 2 : at + 3] not in STOPPED_STATES:
            return False
    return True


def freeze(proc: Child) -> bool:
    """Stops every thread of the child, and waits until they have all stopped; False if they did not in time."""
    if proc.exit_status is not None:
        return True
    try:
        os.kill(proc.pid, signal.SIGSTOP)
    except OSError:
        return True
    deadline = time.monotonic() + FREEZE_WAIT_S
    while not _all_stopped(proc.pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.0002)
    return True


def end_alone(proc: Child) -> None:
    """Kills this child only, and waits for its end (Child.close kills every process of the container but the
    runner and the zygote: the next job's child, ready to be the subject, among them)."""
    if proc.exit_status is None:
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.reap(block=True)
    proc.close(wait=False)


PIPE_BYTES = (
    1 << 20
)  # a benchmark child's command and result pipes: a value of megabytes in a few reads, not 64 KB ones


def widen(proc: Child) -> Child:
    """The child's command and result pipes made PIPE_BYTES deep (where the kernel lets it), so that moving a
    call's inputs and its value costs a few wake-ups of the child instead of one per 64 KB."""
    for fd in (proc.cmd_w, proc.res_r):
        try:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        except (OSError, AttributeError):
            pass
    return proc


def thaw(proc: Child) -> None:
    try:
        os.kill(proc.pid, signal.SIGCONT)
    except OSError:
        pass


class Reservoir:
    """Up to `size` of the values offered, each offered call as likely as any other to be among them at the end
    (Algorithm R), drawn as they come: no module can know which of its calls are checked."""

    def __init__(self, size: int) -> None:
        self.size, self.seen = size, 0
        self.items: list[tuple[int, bytes]] = []

    def offer(self, call: int, body: bytes | Callable[[], bytes]) -> None:
        """`body`: the value, or how to have it (called only if it is kept)."""
        self.seen += 1
        at = len(self.items) if len(self.items) < self.size else secrets.randbelow(self.seen)
        if at >= self.size:
            return
        item = (call, body() if callable(body) else body)
        if at == len(self.items):
            self.items.append(item)
        else:
            self.items[at] = item

    def bytes(self) -> int:
        return sum(len(body) for _, body in self.items)


def inputs_failed(report: Report) -> Report:
    """The problem's inputs' code failed (BenchInputs: the problem's failure, never a module's)."""
    why = report.message or report.status
    return Report(Outcome.ERROR, error_type="BenchInputs", message=f"the benchmark's inputs: {why}")


def said(report: Report) -> str:
    return f"{report.error_type}: {report.message}" if report.error_type else str(report.message or report.status)
