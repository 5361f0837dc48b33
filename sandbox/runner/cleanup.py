"""Between jobs, and whenever a child must go: kill what a submission started, wipe every place it could
write, remove the IPC objects that outlive processes; and the counts the runner's limits read."""

from __future__ import annotations

import ctypes
import os
import signal
import stat
import time

# Every place a process in this read-only container can write; wiped after each job.
SCRATCH_DIRS = ("/tmp", "/dev/shm", "/dev/mqueue")


def oom_kills() -> int:
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


def submission_tasks() -> int:
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


def kill_others(keep: int | None = None) -> None:
    """SIGKILL to every process but this one and init (and `keep`): during a job those are all the
    submission's. Without `keep`, one kill(-1), which no process being created can slip past; with it,
    one kill per process listed, which is as thorough once the submission's processes are already
    killed (none can start another: seccomp.py refuses it)."""
    if keep is None:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        return
    for pid in _other_pids(keep):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _other_pids(keep: int | None) -> list[int]:
    mine = (1, os.getpid(), keep)
    return [int(name) for name in _listdir("/proc") if name.isdigit() and int(name) not in mine]


def clean_container(keep: int | None = None) -> bool:
    """Kills every process but the runner and the zygote (and `keep`: the next job's child, forked from
    the zygote after the submission's processes were killed), wipes scratch space; True when all is
    clean. Never raises: whatever a submission left that cannot be removed makes the container unclean
    (and so replaced), not the runner dead."""
    deadline = time.monotonic() + 2
    pause = 0.0005  # the killed processes are gone once the zygote has reaped them: soon, so look again soon
    while time.monotonic() < deadline:
        try:
            kill_others(keep)
            _remove_sysv_ipc()
            for directory in SCRATCH_DIRS:
                _wipe(directory, deadline)
            others = _other_pids(keep)
            if not others and not any(_listdir(d) for d in SCRATCH_DIRS) and not _sysv_ipc_left():
                return True
        except Exception:  # noqa: BLE001 - see the docstring
            pass
        time.sleep(pause)
        pause = min(pause * 2, 0.02)
    return False


def _listdir(directory: str) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []


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
