"""The long-lived runner inside a sandbox container.

The container's first process imports torch once, warms it up, and becomes the zygote (zygote.py):
PID 1, which never sees a job, forks the runner and then every child on the runner's request, so no
child ever holds a copy of a job that is not its own. The runner serves jobs read from stdin: for
each job it hands the submission to a child (forked ahead of time, while the container waits), runs
the tests one at a time under a wall-clock limit it enforces itself with SIGKILL, and writes one
frame per test to its private copy of stdout. A test that hangs or crashes is charged to that test alone:
the remaining tests run in a fresh child. After each job every other process is killed and the
scratch space is wiped, so nothing one submission leaves behind reaches the next.
"""

from __future__ import annotations

import ctypes
import fcntl
import gc
import json
import math
import os
import selectors
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
import prewarm  # noqa: E402
import values  # noqa: E402
import zygote  # noqa: E402

# Every place a process in this read-only container can write; wiped after each job.
SCRATCH_DIRS = ("/tmp", "/dev/shm", "/dev/mqueue")
PR_SET_DUMPABLE = 4
FORK_RETRIES = 50
READ_CHUNK = 1 << 16
MAX_JOB_BYTES = 16 * 1024 * 1024
RUNNER_STATUSES = {"ok", "error", "memory", "output"}
# Processes and threads a submission may have at once. Below the container's --pids-limit (which
# counts the runner and the zygote too), and the only such limit under gVisor, where the host's pids
# limit counts the runtime's own threads and an exhausted one takes the whole sandbox down.
MAX_TASKS = 96
TASK_POLL_S = 0.05


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
    """One child, forked by the zygote (never by the runner, whose memory holds jobs), and the three
    pipes that connect it to the runner."""

    def __init__(self, forker: zygote.ZygoteClient) -> None:
        self.forker = forker
        cmd_r, self.cmd_w = os.pipe2(os.O_CLOEXEC)
        self.res_r, res_w = os.pipe2(os.O_CLOEXEC)
        self.out_r, out_w = os.pipe2(os.O_CLOEXEC)
        try:
            self.pid = _fork_child(forker, (cmd_r, res_w, out_w))
        finally:
            for fd in (cmd_r, res_w, out_w):
                os.close(fd)
        self.exit_status: int | None = None
        self.killed_by_runner = False
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
        """True once the child has ended (its parent, the zygote, reports the wait status)."""
        if self.exit_status is None:
            status = self.forker.exit_status(self.pid, block)
            if status is None:
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
        next_census = time.monotonic() + TASK_POLL_S
        try:
            while True:
                now = time.monotonic()
                remaining = deadline - now
                if remaining <= 0:
                    self.kill()
                    return {"status": "timeout", "message": f"time limit exceeded during {phase}"}, b""
                if now >= next_census:
                    next_census = now + TASK_POLL_S
                    if _submission_tasks() > MAX_TASKS:
                        self.kill()
                        return {
                            "status": "error",
                            "error_type": "Resources",
                            "message": f"more than {MAX_TASKS} processes and threads at once during {phase}",
                        }, b""
                for key, _ in selector.select(min(remaining, TASK_POLL_S)):
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
    def __init__(self, forker: zygote.ZygoteClient) -> None:
        self.forker = forker
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
        return spare if spare is not None else Child(self.forker)

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
        """Kills every process but the runner and the zygote, wipes scratch space; True when all is clean.
        Never raises: whatever a submission left that cannot be removed makes the container unclean
        (and so replaced), not the runner dead."""
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            try:
                _kill_others()
                _remove_sysv_ipc()
                for directory in SCRATCH_DIRS:
                    _wipe(directory, deadline)
                others = [p for p in _listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())]
                if not others and not any(_listdir(d) for d in SCRATCH_DIRS) and not _sysv_ipc_left():
                    return True
            except Exception:  # noqa: BLE001 - see the docstring
                pass
            time.sleep(0.02)
        return False

    def serve(self) -> None:
        _protect_runner()
        self.cleanup()  # the first job starts as clean as any other (warm-up leaves files in /tmp)
        self.emit(frames.HELLO, {"torch": torch.__version__, "python": sys.version.split()[0]})
        self.spare = Child(self.forker)
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
                self.spare = Child(self.forker) if clean else None
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


def _submission_tasks() -> int:
    """Threads of every process but this one and the zygote: during a job, all the submission's."""
    count = 0
    for name in _listdir("/proc"):
        if name.isdigit() and int(name) not in (1, os.getpid()):
            count += 1
            try:  # status is readable whatever the process did to its dumpable flag
                with open(f"/proc/{name}/status") as status:
                    for line in status:
                        if line.startswith("Threads:"):
                            count += int(line.split()[1]) - 1
                            break
            except (OSError, ValueError):
                pass
    return count


def _kill_others() -> None:
    """SIGKILL to every process but this one and init: during a job those are all the submission's."""
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass


def _fork_child(forker: zygote.ZygoteClient, fds: tuple[int, int, int]) -> int:
    """A child from the zygote, retried while a submission's stragglers still hold the pid budget."""
    for _ in range(FORK_RETRIES):
        try:
            return forker.fork_child(fds)
        except BlockingIOError:
            _kill_others()
            time.sleep(0.02)
    return forker.fork_child(fds)


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


def _wipe(root: str, deadline: float) -> None:
    """Empties root, whatever the submission did to it: directories without permissions (taken back
    first: same owner, and every submission process is dead by now), trees deeper than any recursion
    or path length allows (walked iteratively, relative to descriptors), symlinks (removed, never
    followed). What cannot be removed in time stays, and the caller reports the container unclean."""
    try:
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    stack: list[tuple[int, int | None, str]] = [(top, None, "")]  # (directory, its parent, its name)
    while stack:
        directory, parent, name = stack[-1]
        descended = False
        if time.monotonic() < deadline:
            try:
                entries = list(os.scandir(directory))
            except OSError:
                entries = []
            for entry in entries:
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                if not is_dir:
                    try:
                        os.unlink(entry.name, dir_fd=directory)
                    except OSError:
                        pass
                    continue
                try:
                    os.chmod(entry.name, stat.S_IRWXU, dir_fd=directory)
                    inner = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=directory)
                except OSError:
                    continue  # out of descriptors (a very deep tree) or gone: left for the caller
                stack.append((inner, directory, entry.name))
                descended = True
                break
        if descended:
            continue
        stack.pop()
        os.close(directory)
        if parent is not None:
            try:
                os.rmdir(name, dir_fd=parent)
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


def _serve(forker: zygote.ZygoteClient) -> None:
    Runner(forker).serve()


if __name__ == "__main__":
    # Every page of the image's files into the host's page cache before anything is forked (prewarm.py).
    if prewarm.NO_PREWARM not in sys.argv[1:]:
        prewarm.read_image_files()
    # This process becomes the zygote (PID 1 of the container); it forks the runner after warming up.
    _protect_runner()
    _warm_up()
    zygote.run(_serve, child.child_main)
