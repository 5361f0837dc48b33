"""What the child does to itself before any submission code runs, in two parts. Before its job comes
(a spare child waits for one, so this is off the submission's path): the limits that do not depend on
the job, the OOM killer's choice, Landlock. Once the job is read: its memory and CPU limits, then
seccomp (which must come last: it forbids what the steps before it need, prlimit64 among them).
Nothing the submission does afterwards can lift any of them."""

from __future__ import annotations

import ctypes
import math
import mmap
import os
import resource

from . import landlock, seccomp

ADDRESS_SPACE_SLACK = 512 * 1024 * 1024  # thread stacks and allocator reservations, where RLIMIT_AS is used
M_ARENA_MAX = -8
PR_SET_DUMPABLE = 4
MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_OPEN_FILES = 256


def _status_bytes(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _data_limit_enforced(memory: int) -> bool:
    """Whether the kernel applies RLIMIT_DATA to anonymous mappings (Linux >= 4.7 does; gVisor does not)."""
    try:
        probe = mmap.mmap(-1, memory + (64 << 20), flags=mmap.MAP_PRIVATE)
    except (OSError, ValueError, OverflowError):
        return True
    probe.close()
    return False


def _limit_memory(memory: int) -> None:
    # RLIMIT_DATA counts private anonymous mappings too (Linux >= 4.7), so torch's large allocations
    # fail with an allocator error instead of growing past the limit.
    data = _status_bytes("VmData") + memory
    resource.setrlimit(resource.RLIMIT_DATA, (data, data))
    if not _data_limit_enforced(memory):
        # Under gVisor an allocation past the container's memory would take the whole sandbox down
        # (the host sees one process): bound the address space instead, with room for thread stacks,
        # and at most two malloc arenas (each reserves 64 MiB of address space).
        try:
            ctypes.CDLL(None).mallopt(M_ARENA_MAX, 2)
        except (OSError, AttributeError):
            pass
        space = _status_bytes("VmSize") + memory + ADDRESS_SPACE_SLACK
        resource.setrlimit(resource.RLIMIT_AS, (space, space))


class Confinement:
    """One child's confinement: prepare() before its job is known, apply() once it is."""

    def __init__(self, protected: tuple[int, ...]) -> None:
        self.protected = protected
        self.filter: seccomp.Filter | None = None
        self.abi = 0

    def prepare(self) -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
        resource.setrlimit(resource.RLIMIT_NOFILE, (MAX_OPEN_FILES, MAX_OPEN_FILES))
        try:
            # The runner is not dumpable, and a child inherits that, which would leave its /proc files
            # owned by root: the child makes itself dumpable again (it only exposes itself).
            ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
            # The child, never the runner, is the one the kernel picks when memory runs out; Landlock
            # then keeps it from writing this file back.
            with open("/proc/self/oom_score_adj", "w") as adj:
                adj.write("1000")
        except OSError:
            pass
        self.abi = landlock.install()
        self.filter = seccomp.Filter.build(self.protected)

    def apply(self, memory_mb: int, cpu_budget_s: float, protect: tuple[int, ...] = (), pin: int = -1) -> int:
        """The job's limits, then seccomp; the Landlock ABI in force (0: none). A benchmark's child (bench_job.py)
        is also pinned to the CPU `pin` (for good: seccomp then refuses sched_setaffinity) and kept from
        signalling the processes in `protect` (the baseline it is timed against)."""
        if self.filter is None:
            raise OSError("the child was not prepared")
        _limit_memory(memory_mb * 1024 * 1024)
        cpu = int(math.ceil(cpu_budget_s))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        flt = self.filter
        if pin >= 0 or protect:
            if pin >= 0:
                os.sched_setaffinity(0, {pin})
            flt = seccomp.Filter.build((*self.protected, *protect), pinned=pin >= 0)
        # Last: from here on the child cannot signal, trace or re-limit the runner and the zygote, start a
        # process or a program, nor touch the page cache's state (seccomp.py).
        if not flt.install():
            raise OSError("the seccomp filter could not be installed")
        return self.abi


def prebuild(protected: tuple[int, ...]) -> None:
    """In the zygote, before its first fork: the children's seccomp filter, built once for them all."""
    seccomp.Filter.build(protected)


def confine(memory_mb: int, cpu_budget_s: float, protected: tuple[int, ...]) -> int:
    """Both parts at once: applies every limit to the calling process; the Landlock ABI in force."""
    confinement = Confinement(protected)
    confinement.prepare()
    return confinement.apply(memory_mb, cpu_budget_s)
