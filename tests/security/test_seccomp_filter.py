"""The child's seccomp filter (sandbox/runner/seccomp.py), run through a small BPF interpreter here:
what it refuses and what it lets through, for both architectures it knows. No Docker needed; the
attacks in test_attacks.py show the same filter at work in real sandboxes."""

from __future__ import annotations

import errno
import importlib.util
import struct
from pathlib import Path

import pytest

SECCOMP_PY = Path(__file__).resolve().parents[2] / "sandbox" / "runner" / "seccomp.py"
spec = importlib.util.spec_from_file_location("sandbox_seccomp", SECCOMP_PY)
assert spec is not None and spec.loader is not None
seccomp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(seccomp)

ZYGOTE, RUNNER = 1, 7
ALLOW, EPERM, ENOSYS = seccomp.RET_ALLOW, seccomp.RET_ERRNO | errno.EPERM, seccomp.RET_ERRNO | errno.ENOSYS
CLONE_NEWUSER, SIGCHLD = 0x10000000, 17
THREAD_FLAGS = 0x003D0F00  # what pthread_create passes to clone


def run(program: list[tuple[int, int, int, int]], data: bytes) -> int:
    """Classic BPF, the subset the filter uses."""
    accumulator, pc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        pc += 1
        if code == seccomp.LD_W_ABS:
            (accumulator,) = struct.unpack_from("<I", data, k)
        elif code == seccomp.JEQ_K:
            pc += jt if accumulator == k else jf
        elif code == seccomp.JGE_K:
            pc += jt if accumulator >= k else jf
        elif code == seccomp.JSET_K:
            pc += jt if accumulator & k else jf
        elif code == seccomp.JA:
            pc += k
        elif code == seccomp.RET_K:
            return k
        else:
            raise AssertionError(f"unexpected instruction {code:#x}")


def call(machine: str, name: str, *args: int, arch: int | None = None, number: int | None = None) -> int:
    column = 0 if machine == "x86_64" else 1
    nr = seccomp.NUMBERS[name][column] if number is None else number
    words = [(arg & 0xFFFFFFFFFFFFFFFF) for arg in args] + [0] * (6 - len(args))
    data = struct.pack("<iIQ6Q", nr, seccomp.ARCHES[machine] if arch is None else arch, 0, *words)
    return run(seccomp.build(machine, (ZYGOTE, RUNNER)), data)


MACHINES = ["x86_64", "aarch64"]


@pytest.mark.parametrize("machine", MACHINES)
def test_signals_to_the_runner_the_zygote_and_everyone_are_refused(machine: str) -> None:
    for target in (ZYGOTE, RUNNER, -1, -RUNNER, -ZYGOTE):
        assert call(machine, "kill", target, 9) == EPERM, target
        assert call(machine, "rt_sigqueueinfo", target, 9) == EPERM, target
        assert call(machine, "pidfd_open", target, 0) == EPERM, target
        assert call(machine, "prlimit64", target, 7) == EPERM, target
    assert call(machine, "tgkill", RUNNER, RUNNER, 19) == EPERM
    assert call(machine, "tkill", ZYGOTE, 19) == EPERM
    assert call(machine, "pidfd_send_signal", 3, 9) == EPERM


@pytest.mark.parametrize("machine", MACHINES)
def test_the_childs_own_processes_remain_its_own(machine: str) -> None:
    assert call(machine, "kill", 1234, 9) == ALLOW
    assert call(machine, "kill", 0, 9) == ALLOW  # its own process group
    assert call(machine, "kill", -1234, 9) == ALLOW
    assert call(machine, "prlimit64", 0, 7) == ALLOW  # setrlimit on itself
    assert call(machine, "setpriority", 0, 0, 5) == ALLOW  # os.nice
    assert call(machine, "clone", THREAD_FLAGS) == ALLOW  # a thread


@pytest.mark.parametrize("machine", MACHINES)
def test_no_new_process_and_no_program(machine: str) -> None:
    assert call(machine, "clone", SIGCHLD) == EPERM  # fork() in the C library
    assert call(machine, "clone", 0x4111) == EPERM  # CLONE_VM | CLONE_VFORK | SIGCHLD: posix_spawn
    assert call(machine, "clone", THREAD_FLAGS | CLONE_NEWUSER) == EPERM
    for name in ("execve", "execveat") + (("fork", "vfork") if machine == "x86_64" else ()):
        assert call(machine, name, 0, 0, 0) == EPERM, name


@pytest.mark.parametrize("machine", MACHINES)
def test_the_page_cache_can_be_neither_queried_nor_evicted(machine: str) -> None:
    for name in ("mincore", "fadvise64", "readahead", "cachestat", "remap_file_pages", "memfd_create"):
        assert call(machine, name, 3, 0, 4096, 4) == EPERM, name
    madv_willneed, madv_remove, madv_cold, madv_pageout, madv_populate_read = 3, 9, 20, 21, 22
    for advice in (madv_willneed, madv_remove, madv_cold, madv_pageout, madv_populate_read, 25, 100):
        assert call(machine, "madvise", 0x7F0000000000, 4096, advice) == EPERM, advice
    assert call(machine, "madvise", 0x7F0000000000, 4096, (1 << 32) | 4) == EPERM  # high bits set
    for advice in (0, 4, 8, 14, 15):  # NORMAL, DONTNEED, FREE, HUGEPAGE, NOHUGEPAGE: allocators use them
        assert call(machine, "madvise", 0x7F0000000000, 4096, advice) == ALLOW, advice
    rwf_nowait, rwf_hipri = 8, 1
    assert call(machine, "preadv2", 3, 0, 1, 0, 0, rwf_nowait) == EPERM
    assert call(machine, "pwritev2", 3, 0, 1, 0, 0, rwf_nowait | rwf_hipri) == EPERM
    assert call(machine, "preadv2", 3, 0, 1, 0, 0, 0) == ALLOW


@pytest.mark.parametrize("machine", MACHINES)
def test_ipc_that_outlives_a_process_namespaces_and_other_memory_are_refused(machine: str) -> None:
    for name in ("shmget", "shmat", "semget", "msgget", "keyctl", "add_key", "ptrace", "process_vm_readv"):
        assert call(machine, name, 0, 0, 0) == EPERM, name
    assert call(machine, "unshare", CLONE_NEWUSER) == EPERM
    assert call(machine, "clone", CLONE_NEWUSER | SIGCHLD) == EPERM
    assert call(machine, "clone3", 0, 88) == ENOSYS  # the C library falls back to clone
    assert call(machine, "setpriority", 2, 10001, 19) == EPERM  # PRIO_USER: every process of the uid
    assert call(machine, "setpriority", 0, RUNNER, 19) == EPERM


def test_other_system_call_abis_are_refused() -> None:
    assert call("x86_64", "kill", 1234, 0, arch=0x40000003) == EPERM  # i386 via int 0x80
    assert call("x86_64", "kill", 1234, 0, number=0x40000000 | 62) == EPERM  # x32
    assert call("aarch64", "kill", 1234, 0, arch=0x40000028) == EPERM  # arm32


def test_ordinary_calls_pass_and_the_program_is_well_formed() -> None:
    for machine in MACHINES:
        assert call(machine, "kill", 1234, 0, number=0) in (ALLOW,)  # read / io_setup: not listed
        program = seccomp.build(machine, (ZYGOTE, RUNNER, 0))
        assert len(program) < 4096
        assert all(0 <= jt <= 255 and 0 <= jf <= 255 for _, jt, jf, _ in program)
        # 0 (the caller itself) is never protected, even if asked.
        data = struct.pack(
            "<iIQ6Q",
            seccomp.NUMBERS["kill"][0 if machine == "x86_64" else 1],
            seccomp.ARCHES[machine],
            0,
            0,
            9,
            0,
            0,
            0,
            0,
        )
        assert run(program, data) == ALLOW


BASELINE, NULL, INPUTS = 42, 43, 44  # a benchmark's other children: the subject's filter protects them too


def bench_call(machine: str, name: str, *args: int, pinned: bool = True) -> int:
    column = 0 if machine == "x86_64" else 1
    words = [(arg & 0xFFFFFFFFFFFFFFFF) for arg in args] + [0] * (6 - len(args))
    data = struct.pack("<iIQ6Q", seccomp.NUMBERS[name][column], seccomp.ARCHES[machine], 0, *words)
    return run(seccomp.build(machine, (ZYGOTE, RUNNER, BASELINE, NULL, INPUTS), pinned), data)


@pytest.mark.parametrize("machine", MACHINES)
def test_a_benchmarks_other_children_are_each_protected_however_many(machine: str) -> None:
    """The subject may signal none of the baseline, the judge's null module and the inputs' child (and the program
    holds however many processes are protected: each jump within BPF's 255 instructions)."""
    for pid in (BASELINE, NULL, INPUTS):
        for name in ("kill", "tgkill", "pidfd_open", "sched_setaffinity", "prlimit64"):
            assert bench_call(machine, name, pid, 19) == EPERM, (name, pid)
            assert bench_call(machine, name, -pid, 19) == EPERM, (name, pid)
    many = tuple(range(100, 140))
    for pid in many:
        data = struct.pack("<iIQ6Q", seccomp.NUMBERS["kill"][0], seccomp.ARCHES["x86_64"], 0, pid, 9, 0, 0, 0, 0)
        assert run(seccomp.build("x86_64", many), data) == EPERM


@pytest.mark.parametrize("machine", MACHINES)
def test_a_benchmarks_subject_keeps_its_cpu_and_leaves_the_baseline_alone(machine: str) -> None:
    """Pinned to one CPU before its module loads, the subject cannot move any thread of its own to another (more
    CPUs than the baseline has), nor stop, slow or kill the baseline it is timed against."""
    for target in (0, 1234):
        assert bench_call(machine, "sched_setaffinity", target, 8, 0) == EPERM
        assert bench_call(machine, "sched_setaffinity", target, 8, 0, pinned=False) == ALLOW
    for name in ("kill", "tkill", "pidfd_open", "prlimit64", "sched_setscheduler", "sched_setattr"):
        assert bench_call(machine, name, BASELINE, 19) == EPERM, name
    assert bench_call(machine, "kill", BASELINE + 100, 19) == ALLOW  # another process: as for any child
    assert bench_call(machine, "setpriority", 0, BASELINE, 19) == EPERM  # only the caller itself, as always


@pytest.mark.parametrize("machine", MACHINES)
def test_a_benchmarks_subject_has_one_thread_and_nothing_to_wake_it_when_stopped(machine: str) -> None:
    """Stopped while the baseline runs, it could be woken by a SIGCONT of its own making: a POSIX timer, a
    message queue's notice, an I/O signal set with F_SETSIG; and a thread of its own would hide its work."""
    assert bench_call(machine, "clone", THREAD_FLAGS) == EPERM
    assert bench_call(machine, "clone", THREAD_FLAGS, pinned=False) == ALLOW
    for name in ("timer_create", "mq_notify"):
        assert bench_call(machine, name, 1, 0, 0) == EPERM, name
        assert bench_call(machine, name, 1, 0, 0, pinned=False) == ALLOW, name
    F_SETSIG, F_GETFL, F_SETFL = 10, 3, 4
    assert bench_call(machine, "fcntl", 3, F_SETSIG, 18) == EPERM
    assert bench_call(machine, "fcntl", 3, F_SETSIG, 18, pinned=False) == ALLOW
    for command in (F_GETFL, F_SETFL):
        assert bench_call(machine, "fcntl", 3, command, 0) == ALLOW
