"""PID 1 of the sandbox container: a warm torch process that never sees a job and forks every child.

Why: a forked child is a copy of its parent's memory. If the runner, which reads jobs, forked the
children, a submission could find in its own memory (frame locals, gc.get_objects(), or freed heap
read through ctypes) the previous job (another person's source, every test's code) or the current
job's later tests. So the process that forks children is one that has never held a job: the zygote.
It imports torch and warms up, forks the runner (which serves jobs on stdin/stdout), and from then
on only forks children when the runner asks, over a Unix socket, passing the child's three pipe ends
along (SCM_RIGHTS). It reaps every process in the container and reports its children's exit
statuses to the runner, which enforces every limit.

The children's seccomp filter (seccomp.py) refuses signals to the zygote and the runner. Under runc
the zygote is protected twice over: as PID 1 of the container's PID namespace, the kernel drops
signals sent to it from inside unless it handles them (it handles only SIGCHLD), and kill(-1, ...)
never reaches it (gVisor does not shield a namespace's init). It is not dumpable, so it cannot be
ptraced nor its memory read through /proc. A runner stopped by SIGSTOP is continued at once. When
the runner dies the zygote ends the container, and the grader sees the sandbox lost.

Wire format on the socket: runner -> zygote, b"F" with three descriptors attached; zygote ->
runner, fixed 9-byte records (kind, pid, value): FORKED (value 0), FAILED (pid 0, value errno),
EXITED (value: the wait status).
"""

from __future__ import annotations

import errno
import os
import select
import selectors
import signal
import socket
import struct
import time
from collections.abc import Callable

from . import protocol

RECORD = struct.Struct(">cii")
FORK = b"F"
FORKED = b"P"
FAILED = b"E"
EXITED = b"X"
# The zygote answers a fork request in milliseconds; this long without an answer means it was
# stopped or killed (possible under gVisor, which does not shield a namespace's init from signals).
REPLY_TIMEOUT_S = 10.0


class ZygoteLost(Exception):
    """The zygote stopped answering: the runner cannot continue."""


class ZygoteClient:
    """The runner's side: ask for children, learn how they ended."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""
        self.exits: dict[int, int] = {}
        self.abandoned: set[int] = set()

    def fork_child(self, fds: tuple[int, ...]) -> int:
        """A new child running child_main on these descriptors (its three pipes' ends, and a benchmark module's
        shared area: shared.py); OSError when fork() fails."""
        try:
            socket.send_fds(self.sock, [FORK], list(fds))
        except OSError as exc:
            raise ZygoteLost(f"cannot reach the zygote: {exc}") from exc
        while True:
            kind, pid, value = self._record(block=True)
            if kind == FORKED:
                return pid
            if kind == FAILED:
                raise OSError(value, os.strerror(value))

    def exit_status(self, pid: int, block: bool) -> int | None:
        """The child's wait status once it has ended (None while it runs, when not blocking)."""
        while pid not in self.exits:
            if self._record(block) is None:
                return None
        return self.exits.pop(pid)

    def forget(self, pid: int) -> None:
        self.exits.pop(pid, None)

    def abandon(self, pid: int) -> None:
        """A child killed and not waited for (the container's clean-up waits for every process): its
        exit record, whenever it comes, is dropped."""
        if self.exits.pop(pid, None) is None:
            self.abandoned.add(pid)

    def _record(self, block: bool) -> tuple[bytes, int, int] | None:
        """Reads one record; EXITED records are filed under their pid."""
        while len(self.buffer) < RECORD.size:
            if block and not select.select([self.sock], [], [], REPLY_TIMEOUT_S)[0]:
                raise ZygoteLost("the zygote does not answer")
            try:
                data = self.sock.recv(4096, 0 if block else socket.MSG_DONTWAIT)
            except BlockingIOError:
                return None
            except OSError as exc:
                raise ZygoteLost(f"lost the zygote: {exc}") from exc
            if not data:
                raise ZygoteLost("the zygote closed its socket")
            self.buffer += data
        kind, pid, value = RECORD.unpack_from(self.buffer)
        self.buffer = self.buffer[RECORD.size :]
        if kind == EXITED and pid in self.abandoned:
            self.abandoned.discard(pid)
        elif kind == EXITED:
            self.exits[pid] = value
        return kind, pid, value


def _null_stdio() -> None:
    devnull = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)


def run(
    serve: Callable[[ZygoteClient], None],
    child_main: Callable[..., None],
    before_forks: Callable[[tuple[int, int]], None] = lambda protected: None,
) -> None:
    """Becomes the zygote: forks the runner (which calls serve) and then serves fork requests.
    before_forks(protected) runs once, before the first child: what every child would otherwise
    compute alike (its seccomp filter) is then inherited ready."""
    zygote_end, runner_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    runner_pid = os.fork()
    if runner_pid == 0:
        try:
            zygote_end.close()
            serve(ZygoteClient(runner_end))
        finally:
            os._exit(0)
    runner_end.close()
    before_forks((os.getpid(), runner_pid))
    _Zygote(zygote_end, runner_pid, child_main).serve()


class _Zygote:
    def __init__(self, sock: socket.socket, runner_pid: int, child_main: Callable[..., None]) -> None:
        self.sock = sock
        self.pid = os.getpid()
        self.runner_pid = runner_pid
        self.child_main = child_main
        self.children: set[int] = set()
        # Only the runner holds the container's stdin and stdout (the grader's channel). The container's
        # stderr is kept for one line: why the zygote ended the container (children close it first thing).
        self.log = os.dup(2)
        _null_stdio()
        # As PID 1, a signal without a handler cannot be sent to this process from inside the
        # container; Python's own SIGINT handler is removed so that SIGINT cannot be either.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.selector = selectors.DefaultSelector()
        self.selector.register(sock, selectors.EVENT_READ, "runner")
        self.selector.register(self.wake_r, selectors.EVENT_READ, "wake")

    def serve(self) -> None:
        while True:
            for key, _ in self.selector.select(1.0):
                if key.data == "wake":
                    self._drain_wakeups()
                else:
                    self._fork_request()
            self._reap()

    def _drain_wakeups(self) -> None:
        try:
            while os.read(self.wake_r, 512):
                pass
        except BlockingIOError:
            pass

    def _send(self, kind: bytes, pid: int, value: int) -> None:
        try:
            self.sock.sendall(RECORD.pack(kind, pid, value))
        except OSError as exc:
            self._end(f"cannot report to the runner: {type(exc).__name__}")

    def _fork_request(self) -> None:
        try:
            message, fds, _flags, _addr = socket.recv_fds(self.sock, 1, 4)
        except OSError:
            message, fds = b"", []
        if not message:
            status = self._runner_status(0.5)  # its socket closes as it ends: say how it ended, if it did
            self._end("the runner closed its socket" if status is None else f"the runner ended ({_described(status)})")
        if message != FORK or len(fds) not in (3, 4):
            for fd in fds:
                os.close(fd)
            return
        try:
            pid = os.fork()
        except OSError as exc:
            for fd in fds:
                os.close(fd)
            self._send(FAILED, 0, exc.errno or errno.EAGAIN)
            return
        if pid == 0:
            self._become_child(fds)
        self.children.add(pid)
        for fd in fds:
            os.close(fd)
        self._send(FORKED, pid, 0)

    def _become_child(self, fds: list[int]) -> None:
        try:
            self.selector.close()
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            for fd in (self.wake_r, self.wake_w, self.log, self.sock.fileno()):
                os.close(fd)
            # The child's seccomp filter keeps it from signalling these two (seccomp.py).
            self.child_main(*fds, protected=(self.pid, self.runner_pid))
        finally:
            os._exit(70)

    def _reap(self) -> None:
        # A submission may stop the runner with SIGSTOP (same uid): it is continued at once, so the
        # runner's clock keeps running and the submission is killed at its time limit as usual.
        try:
            pid, status = os.waitpid(self.runner_pid, os.WNOHANG | os.WUNTRACED)
            if pid == self.runner_pid and os.WIFSTOPPED(status):
                os.kill(self.runner_pid, signal.SIGCONT)
            elif pid == self.runner_pid:
                self._end(f"the runner ended ({_described(status)})")
        except ChildProcessError:
            self._end("the runner is gone")
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            except InterruptedError:
                continue
            if pid == 0:
                return
            if pid == self.runner_pid:
                self._end(f"the runner ended ({_described(status)})")
            if pid in self.children:
                self.children.discard(pid)
                self._send(EXITED, pid, status)

    def _runner_status(self, wait_s: float) -> int | None:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                pid, status = os.waitpid(self.runner_pid, os.WNOHANG)
            except ChildProcessError:
                return None
            if pid == self.runner_pid:
                return status
            time.sleep(0.01)
        return None

    def _end(self, reason: str) -> None:
        protocol.log_line(self.log, "zygote", reason)
        _end()


def _described(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"exit code {os.WEXITSTATUS(status)}" if os.WIFEXITED(status) else f"status {status}"


def _end() -> None:
    """The runner is gone: take every process down and end the container."""
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
    deadline = time.monotonic() + 1
    while time.monotonic() < deadline:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
    os._exit(0)
