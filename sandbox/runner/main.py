"""The long-lived runner inside a sandbox container.

It imports torch once, warms it up, then serves jobs read from stdin: for each job it hands the
submission to a forked child (forked ahead of time, while the container waits), runs the tests one
at a time under a wall-clock limit it enforces itself with SIGKILL, and writes one frame per
test to its private copy of stdout. A test that hangs or crashes is charged to that test alone:
the remaining tests run in a fresh child. After each job every other process is killed and the
scratch space is wiped, so nothing one submission leaves behind reaches the next.
"""

from __future__ import annotations

import ctypes
import gc
import fcntl
import json
import math
import os
import selectors
import shutil
import signal
import stat
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.clear()
os.environ["OMP_NUM_THREADS"] = "1"

import torch  # noqa: E402

# One intra-op thread, set before any parallel work: an OpenMP pool must not exist when forking.
torch.set_num_threads(1)
torch.set_num_interop_threads(1)

import child  # noqa: E402
import frames  # noqa: E402
import values  # noqa: E402

# Every place a process in this read-only container can write; wiped after each job.
SCRATCH_DIRS = ("/tmp", "/dev/shm", "/dev/mqueue")
PR_SET_DUMPABLE = 4
FORK_RETRIES = 50
READ_CHUNK = 1 << 16
MAX_JOB_BYTES = 16 * 1024 * 1024
RUNNER_STATUSES = {"ok", "error", "memory", "output"}


def _warm_up() -> None:
    layer = torch.nn.Embedding(11, 8)
    out = layer(torch.tensor([[1, 2, 3]])) * math.sqrt(8)
    out.sum().backward()
    values.encode_value({"out": out.detach(), "n": 1, "x": 0.5}, 1 << 20)
    with torch.device("meta"):  # the meta device initialises lazily, and slowly, on first use
        torch.nn.Embedding(11, 8)
    torch.nn.Embedding.from_pretrained(torch.zeros(3, 2))
    # Objects that exist now are never collected: a child's garbage collector does not touch
    # (and so copy) the runner's pages after the fork.
    gc.collect()
    gc.freeze()


def _oom_kills() -> int:
    """The container's count of OOM kills (cgroup v2 memory.events, or v1 memory.oom_control)."""
    for path, key in (
        ("/sys/fs/cgroup/memory.events", "oom_kill"),
        ("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill"),
    ):
        try:
            with open(path) as events:
                for line in events:
                    name, _, count = line.partition(" ")
                    if name == key:
                        return int(count)
        except (OSError, ValueError):
            continue
    return 0


class Child:
    """One forked child and the three pipes that connect it to the runner."""

    def __init__(self) -> None:
        cmd_r, self.cmd_w = os.pipe()
        self.res_r, res_w = os.pipe()
        self.out_r, out_w = os.pipe()
        pid = _fork()
        if pid == 0:
            try:
                os.close(self.cmd_w)
                os.close(self.res_r)
                os.close(self.out_r)
                child.child_main(cmd_r, res_w, out_w)
            finally:
                os._exit(70)
        self.pid = pid
        self.exit_status: int | None = None
        self.killed_by_runner = False
        for fd in (cmd_r, res_w, out_w):
            os.close(fd)
        for fd in (self.res_r, self.out_r):
            flags = fcntl.fcntl(fd, fcntl.F_GETFL)
            fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        self.reader = frames.FrameReader(max_body=0)
        self.output_bytes = 0
        self.res_open = True

    def send(self, kind: bytes, header: dict, body: bytes = b"") -> bool:
        try:
            frames.write_all(self.cmd_w, frames.encode(kind, header, body))
            return True
        except OSError:
            return False

    def kill(self) -> None:
        if self.exit_status is None:
            self.killed_by_runner = True
            _kill_others()
            self.reap(block=True)

    def reap(self, block: bool) -> bool:
        if self.exit_status is None:
            try:
                pid, status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
            except ChildProcessError:
                self.exit_status = -1
                return True
            if pid == 0:
                return False
            self.exit_status = status
        return True

    def close(self) -> None:
        self.kill()
        for fd in (self.cmd_w, self.res_r, self.out_r):
            try:
                os.close(fd)
            except OSError:
                pass

    def channel_closed(self, deadline: float, oom_before: int, phase: str) -> dict:
        """The result pipe reached EOF: the child exited, or closed its descriptors and lives on."""
        grace = min(deadline, time.monotonic() + 0.5)
        while time.monotonic() < grace:
            if self.reap(block=False):
                return self.death_outcome(oom_before, phase)
            time.sleep(0.005)
        if self.reap(block=False):
            return self.death_outcome(oom_before, phase)
        self.kill()
        message = f"the process closed its result channel during {phase}"
        return {"status": "error", "error_type": "Protocol", "message": message}

    def death_outcome(self, oom_before: int, phase: str) -> dict:
        """Why the child ended without sending its result, from the runner's own accounting."""
        self.reap(block=True)
        status = self.exit_status if self.exit_status is not None else -1
        if os.WIFSIGNALED(status):
            number = os.WTERMSIG(status)
            if number == signal.SIGKILL and _oom_kills() > oom_before:
                return {"status": "memory", "message": f"killed for using too much memory during {phase}"}
            if number == signal.SIGXCPU:
                return {"status": "timeout", "message": f"CPU time limit exceeded during {phase}"}
            name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else str(number)
            return {
                "status": "error",
                "error_type": "Crash",
                "message": f"the process was killed by {name} during {phase}",
            }
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
        return {"status": "error", "error_type": "Exit", "message": f"the process exited (code {code}) during {phase}"}

    def await_frame(
        self, expected_kind: bytes, deadline: float, output_limit: int, oom_before: int, phase: str
    ) -> tuple[dict, bytes]:
        """Waits for the child's next frame, enforcing the wall-clock and output limits."""
        selector = selectors.DefaultSelector()
        selector.register(self.res_r, selectors.EVENT_READ, "res")
        selector.register(self.out_r, selectors.EVENT_READ, "out")
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.kill()
                    return {"status": "timeout", "message": f"time limit exceeded during {phase}"}, b""
                for key, _ in selector.select(remaining):
                    try:
                        data = os.read(key.fd, READ_CHUNK)
                    except BlockingIOError:
                        continue
                    if key.data == "out":
                        if not data:
                            selector.unregister(self.out_r)
                            continue
                        self.output_bytes += len(data)
                        if self.output_bytes > output_limit:
                            self.kill()
                            return {
                                "status": "output",
                                "message": f"printed more than {output_limit // 1024} KiB during {phase}",
                            }, b""
                        continue
                    if not data:
                        return self.channel_closed(deadline, oom_before, phase), b""
                    try:
                        received = self.reader.feed(data)
                    except OverflowError:
                        self.kill()
                        return {"status": "output", "message": f"the result of {phase} is too large"}, b""
                    except frames.FrameError:
                        self.kill()
                        return {
                            "status": "error",
                            "error_type": "Protocol",
                            "message": f"malformed result during {phase}",
                        }, b""
                    for kind, header, body in received:
                        if kind != expected_kind:
                            self.kill()
                            return {
                                "status": "error",
                                "error_type": "Protocol",
                                "message": f"unexpected message during {phase}",
                            }, b""
                        return header, body
        finally:
            selector.close()


class Runner:
    def __init__(self) -> None:
        # The frame channel is a private copy of stdout; fds 1 and 2 are pointed at /dev/null so a
        # stray print from a library cannot corrupt a frame.
        self.channel = os.dup(1)
        devnull = os.open("/dev/null", os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.close(devnull)
        self.spare: Child | None = None

    def emit(self, kind: bytes, header: dict, body: bytes = b"") -> None:
        frames.write_all(self.channel, frames.encode(kind, header, body))

    def take_child(self) -> Child:
        spare, self.spare = self.spare, None
        return spare if spare is not None else Child()

    def run_job(self, job: dict) -> None:
        limits = job["limits"]
        time_limit = float(limits["time_s"])
        output_limit = int(limits["output_kb"]) * 1024
        compile_time = float(job.get("compile_time_s", 10))
        max_result = int(job["max_result_bytes"])
        tests = job["tests"]
        child_job = {
            "source": job["source"],
            "entry_points": job["entry_points"],
            "limits": limits,
            "tests": [None] * len(tests),
            "max_result_bytes": max_result,
        }
        job_bytes = json.dumps(child_job).encode()
        next_index = 0
        compile_reported = False
        while True:
            proc = self.take_child()
            proc.reader.max_body = max_result + 64 * 1024
            oom_before = _oom_kills()
            try:
                if not proc.send(frames.JOB, {}, job_bytes):
                    outcome, _ = proc.death_outcome(oom_before, "loading"), b""
                else:
                    outcome, _ = proc.await_frame(
                        frames.CHILD_COMPILE, time.monotonic() + compile_time, output_limit, oom_before, "loading"
                    )
                status = outcome.get("status")
                if not compile_reported:
                    compile_reported = True
                    if status == "timeout":
                        outcome = {"status": "timeout", "message": outcome.get("message")}
                    self.emit(
                        frames.COMPILE,
                        _clean(
                            outcome, {"ok", "compile_error", "runtime_error", "memory", "timeout", "output", "error"}
                        ),
                    )
                    if status != "ok":
                        return
                elif status != "ok":
                    for index in range(next_index, len(tests)):
                        self.emit(
                            frames.TEST,
                            {
                                "index": index,
                                "status": "error",
                                "time_ms": 0,
                                "message": "the submission failed to load again after a test ended its process",
                            },
                        )
                    return
                while next_index < len(tests):
                    index = next_index
                    next_index += 1
                    test = tests[index]
                    started = time.monotonic()
                    proc.output_bytes = 0  # the output limit is per test
                    if not proc.send(frames.TEST, {"index": index, "seed": int(test["seed"])}, test["code"].encode()):
                        outcome, body = proc.death_outcome(oom_before, f"test {index + 1}"), b""
                    else:
                        outcome, body = proc.await_frame(
                            frames.CHILD_RESULT, started + time_limit, output_limit, oom_before, f"test {index + 1}"
                        )
                    elapsed_ms = round((time.monotonic() - started) * 1000, 3)
                    header = _clean(outcome, RUNNER_STATUSES | {"timeout"})
                    if header["status"] == "ok" and outcome.get("index") != index:
                        header, body = (
                            {"status": "error", "error_type": "Protocol", "message": "result for the wrong test"},
                            b"",
                        )
                        proc.kill()
                    if header["status"] != "ok":
                        body = b""
                    header.update(index=index, time_ms=elapsed_ms)
                    self.emit(frames.TEST, header, body)
                    if proc.reap(block=False):
                        break  # the rest of the tests run in a fresh child
                if next_index >= len(tests):
                    return
            finally:
                proc.close()

    def cleanup(self) -> bool:
        """Kills every process but the runner and init, wipes scratch space; True when all is clean."""
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            _kill_others()
            _reap_all()
            _remove_sysv_ipc()
            for directory in SCRATCH_DIRS:
                _wipe(directory)
            others = [p for p in _listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())]
            if not others and not any(_listdir(directory) for directory in SCRATCH_DIRS) and not _sysv_ipc_left():
                return True
            time.sleep(0.02)
        return False

    def serve(self) -> None:
        _protect_runner()
        _warm_up()
        self.emit(frames.HELLO, {"torch": torch.__version__, "python": sys.version.split()[0]})
        self.spare = Child()
        while True:
            try:
                kind, _, body = frames.read_frame(0, max_body=MAX_JOB_BYTES)
            except EOFError:
                return
            if kind != frames.JOB:
                return
            job = json.loads(body)
            try:
                self.run_job(job)
            finally:
                clean = self.cleanup()
                self.spare = Child() if clean else None
                self.emit(frames.DONE, {"clean": clean})


def _clean(outcome: dict, statuses: set[str]) -> dict:
    """Keeps only known fields of a child's report, each bounded."""
    status = outcome.get("status")
    header: dict = {"status": status if status in statuses else "error"}
    for key, limit in (
        ("message", child.MAX_MESSAGE + 64),
        ("error_type", 200),
        ("traceback", child.MAX_TRACEBACK + 64),
    ):
        value = outcome.get(key)
        if isinstance(value, str):
            header[key] = value[:limit]
    line = outcome.get("line")
    if isinstance(line, int) and not isinstance(line, bool):
        header["line"] = line
    return header


def _kill_others() -> None:
    """SIGKILL to every process but this one and init: during a job those are all the submission's."""
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass


def _fork() -> int:
    """fork(), retried while a submission's stragglers still hold the container's pid budget."""
    for _ in range(FORK_RETRIES):
        try:
            return os.fork()
        except BlockingIOError:
            _kill_others()
            _reap_all()
            time.sleep(0.02)
    return os.fork()


def _reap_all() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _listdir(directory: str) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []


def _protect_runner() -> None:
    """Not dumpable: processes of the same uid cannot ptrace the runner or read its /proc memory and environ."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _wipe(root: str) -> None:
    def force(func, path, _exc):  # a submission may have taken away its own permissions
        try:
            parent = os.path.dirname(path)
            os.chmod(parent, stat.S_IRWXU)
            if os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, stat.S_IRWXU)
            func(path)
        except OSError:
            pass

    for name in _listdir(root):
        path = os.path.join(root, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, onerror=force)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


def _sysv_ipc_left() -> bool:
    for table in ("shm", "sem", "msg"):
        try:
            with open(f"/proc/sysvipc/{table}") as listing:
                if len(listing.read().splitlines()) > 1:
                    return True
        except OSError:
            continue
    return False


def _remove_sysv_ipc() -> None:
    """Shared memory, semaphores and message queues outlive processes: remove them."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return
    ipc_rmid = 0
    for table, remove in (("shm", libc.shmctl), ("sem", libc.semctl), ("msg", libc.msgctl)):
        try:
            with open(f"/proc/sysvipc/{table}") as listing:
                rows = listing.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 1:
                if table == "sem":
                    remove(int(fields[1]), 0, ipc_rmid)
                else:
                    remove(int(fields[1]), ipc_rmid, None)


if __name__ == "__main__":
    Runner().serve()
