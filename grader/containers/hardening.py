"""How a sandbox container is hardened beyond what its run options say in container.py: its private IPC
namespace's limits, no log driver, and what changes under gVisor."""

from __future__ import annotations

import os

from docker.types import LogConfig

from grader.config_grading import SandboxSettings


def ipc_sysctls(sandbox: SandboxSettings) -> dict[str, str]:
    """Limits of the container's private IPC namespace. SysV shared memory is not a file: without
    these it could hold all the container's memory, and outlive the process that made it, so that the
    OOM killer, with no child left to pick, would take the runner. Capped like the scratch tmpfs, and
    destroyed when its last user detaches or dies (shm_rmid_forced)."""
    page = os.sysconf("SC_PAGE_SIZE")
    shm_bytes = sandbox.tmpfs_mb * 1024 * 1024
    return {
        "kernel.shm_rmid_forced": "1",
        "kernel.shmmax": str(shm_bytes),
        "kernel.shmall": str(shm_bytes // page),
        "kernel.shmmni": "64",
        "kernel.msgmni": "16",
        "kernel.msgmnb": "65536",
        "fs.mqueue.queues_max": "16",
    }


def is_gvisor(runtime: str) -> bool:
    return "runsc" in runtime or "gvisor" in runtime


# Under gVisor the host's limits see the runtime, not the processes inside: its own threads count
# against --pids-limit (the runner bounds the submission's tasks itself), and its memory holds the
# files it has read (torch's libraries) on top of the processes' memory.
GVISOR_PIDS_FACTOR = 8
GVISOR_EXTRA_MEMORY_MB = 1024


def no_host_logs() -> LogConfig:
    """The log driver of every container the service creates: none. What a container writes reaches the
    trusted side over its attach stream only, bounded there; the engine's default (json-file) would also
    keep every byte of it in a file on the host until the container goes, whatever its size."""
    return LogConfig(type=LogConfig.types.NONE)
