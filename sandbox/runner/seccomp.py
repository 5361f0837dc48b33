"""A seccomp filter the child installs on itself before any submission code runs (stdlib + ctypes only).

The child runs with the same uid as the runner and the zygote, so the kernel's permission checks
alone let it signal, renice or re-limit them. The filter takes away what a PyTorch solution never
needs and what reaches beyond the child's own processes, and it is inherited by everything the
child starts; nothing can remove it:

- signals and scheduling aimed at the protected processes (the zygote, PID 1, and the runner), and
  at "every process" (kill(-1)): kill, tkill, tgkill, rt_(tg)sigqueueinfo, pidfd_open, prlimit64,
  sched_set*; setpriority except on the caller itself; ioprio_set and pidfd_send_signal altogether
  (a /proc/<pid> directory can stand in for a pidfd);
- other processes' memory: ptrace, process_vm_readv/writev, pidfd_getfd, process_madvise, kcmp;
- state that outlives a process: SysV shared memory, semaphores and message queues (the runner
  cannot even list them under gVisor), kernel keyrings;
- new processes and programs: fork, vfork, clone without CLONE_THREAD, execve, execveat (threads
  stay: torch needs them). Everything a submission runs is then one process, whose memory its rlimits
  bound and which the OOM killer, if it comes to that, finds as the biggest process of the container;
- new namespaces (unshare, setns, clone with CLONE_NEW*; clone3 answers ENOSYS so that the C
  library falls back to clone): a user namespace would make the child root in it;
- the page cache shared with every other container of the image, a channel between submissions:
  querying it (mincore, cachestat, preadv2 with RWF_NOWAIT), evicting it (fadvise64, madvise COLD,
  PAGEOUT, REMOVE) or filling it ahead (readahead, madvise WILLNEED and POPULATE_*);
  remap_file_pages; only the madvise advice that allocators use is let through;
- memory that no process's size shows and no rlimit bounds: memfd_create, memfd_secret;
- kernel attack surface a solution has no use for: io_uring, userfaultfd, perf_event_open, bpf;
- any other system call ABI (i386, x32), whose numbers the filter does not know.

Each is refused with EPERM (the caller sees an ordinary error), not a kill.
"""

from __future__ import annotations

import ctypes
import errno
import platform

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
OFFSET_NR = 0
OFFSET_ARCH = 4
OFFSET_ARGS = 16  # args[i] at 16 + 8 * i; its low 32 bits first (little-endian)
LD_W_ABS = 0x20
JA = 0x05  # BPF_JMP | BPF_JA: k instructions forward
JEQ_K = 0x15
JGE_K = 0x35
JSET_K = 0x45
RET_K = 0x06
CLONE_NEW_ANY = 0x7E020080  # NEWNS NEWCGROUP NEWUTS NEWIPC NEWUSER NEWPID NEWNET NEWTIME
X32_SYSCALL_BIT = 0x40000000

ARCHES = {
    "x86_64": 0xC000003E,
    "aarch64": 0xC00000B7,
}

# name -> (x86_64, generic: aarch64)
NUMBERS = {
    "shmget": (29, 194), "shmat": (30, 196), "shmctl": (31, 195), "shmdt": (67, 197),
    "semget": (64, 190), "semop": (65, 193), "semctl": (66, 191), "semtimedop": (220, 192),
    "msgget": (68, 186), "msgsnd": (69, 189), "msgrcv": (70, 188), "msgctl": (71, 187),
    "ptrace": (101, 117), "process_vm_readv": (310, 270), "process_vm_writev": (311, 271),
    "kcmp": (312, 272), "pidfd_getfd": (438, 438), "process_madvise": (440, 440),
    "process_mrelease": (448, 448), "pidfd_send_signal": (424, 424),
    "unshare": (272, 97), "setns": (308, 268), "clone": (56, 220), "clone3": (435, 435),
    "keyctl": (250, 219), "add_key": (248, 217), "request_key": (249, 218),
    "io_uring_setup": (425, 425), "io_uring_enter": (426, 426), "io_uring_register": (427, 427),
    "userfaultfd": (323, 282), "perf_event_open": (298, 241), "bpf": (321, 280),
    "kill": (62, 129), "tkill": (200, 130), "tgkill": (234, 131),
    "rt_sigqueueinfo": (129, 138), "rt_tgsigqueueinfo": (297, 240), "pidfd_open": (434, 434),
    "setpriority": (141, 140), "ioprio_set": (251, 30), "prlimit64": (302, 261),
    "sched_setparam": (142, 118), "sched_setscheduler": (144, 119), "sched_setaffinity": (203, 122),
    "sched_setattr": (314, 274), "migrate_pages": (256, 238), "move_pages": (279, 239),
    "execve": (59, 221), "execveat": (322, 281), "fork": (57, None), "vfork": (58, None),
    "mincore": (27, 232), "fadvise64": (221, 223), "readahead": (187, 213), "cachestat": (451, 451),
    "remap_file_pages": (216, 234), "memfd_create": (319, 279), "memfd_secret": (447, 447),
    "madvise": (28, 233), "preadv2": (327, 286), "pwritev2": (328, 287),
    "timer_create": (222, 107), "mq_notify": (244, 184), "fcntl": (72, 25),
}  # fmt: skip

DENIED = (
    "shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semctl", "semtimedop",
    "msgget", "msgsnd", "msgrcv", "msgctl", "ptrace", "process_vm_readv", "process_vm_writev",
    "kcmp", "pidfd_getfd", "process_madvise", "process_mrelease", "pidfd_send_signal",
    "unshare", "setns", "keyctl", "add_key", "request_key", "ioprio_set",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd", "perf_event_open", "bpf",
    "execve", "execveat", "fork", "vfork", "mincore", "fadvise64", "readahead", "cachestat",
    "remap_file_pages", "memfd_create", "memfd_secret",
)  # fmt: skip

CLONE_THREAD = 0x00010000
RWF_NOWAIT = 0x00000008
# madvise advice a memory allocator or a library has a use for; every other advice is refused.
# NORMAL RANDOM SEQUENTIAL DONTNEED FREE DONTFORK DOFORK MERGEABLE UNMERGEABLE HUGEPAGE NOHUGEPAGE
# DONTDUMP DODUMP WIPEONFORK KEEPONFORK
MADVISE_ALLOWED = (0, 1, 2, 4, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19)

# Allowed unless the argument (by index) names a protected process; -1 means "every process".
TARGETED = {
    "kill": 0, "tkill": 0, "tgkill": 0, "rt_sigqueueinfo": 0, "rt_tgsigqueueinfo": 0,
    "pidfd_open": 0, "prlimit64": 0, "sched_setparam": 0, "sched_setscheduler": 0,
    "sched_setaffinity": 0, "sched_setattr": 0, "migrate_pages": 0, "move_pages": 0,
}  # fmt: skip


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


# A benchmark's child (`pinned`): one CPU, one thread, and nothing that could wake it once stopped (a POSIX timer
# or a message queue's notice sending SIGCONT, an I/O signal set to SIGCONT with fcntl F_SETSIG).
PINNED_DENIED = ("sched_setaffinity", "clone", "timer_create", "mq_notify")
F_SETSIG = 10


def build(machine: str, protected: tuple[int, ...], pinned: bool = False) -> list[tuple[int, int, int, int]]:
    """The filter program: (code, jt, jf, k) instructions. Jumps to "deny"/"enosys" are resolved
    to the shared return instructions at the end. `pinned`: a benchmark's child, pinned to one CPU before
    it is confined: PINNED_DENIED refused whatever their arguments, and fcntl's F_SETSIG."""
    arch = ARCHES[machine]
    column = 0 if machine == "x86_64" else 1
    number = {name: pair[column] for name, pair in NUMBERS.items() if pair[column] is not None}
    program: list[tuple[int, str | int, str | int, int]] = []

    def emit(code: int, k: int, jt: str | int = 0, jf: str | int = 0) -> None:
        program.append((code, jt, jf, k))

    emit(LD_W_ABS, OFFSET_ARCH)
    emit(JEQ_K, arch, 0, "deny")
    emit(LD_W_ABS, OFFSET_NR)
    if machine == "x86_64":
        emit(JGE_K, X32_SYSCALL_BIT, "deny", 0)
    for name in (*DENIED, *PINNED_DENIED) if pinned else DENIED:
        if name in number:  # aarch64 has no fork or vfork
            emit(JEQ_K, number[name], "deny", 0)
    if pinned:  # fcntl(fd, F_SETSIG, ...): args[1]; any other fcntl is let through
        emit(JEQ_K, number["fcntl"], 0, 2)
        emit(LD_W_ABS, OFFSET_ARGS + 8)
        emit(JEQ_K, F_SETSIG, "deny", "allow")
    emit(JEQ_K, number["clone3"], "enosys", 0)
    # clone: a thread (CLONE_THREAD in args[0]) that asks for no new namespace; nothing else.
    emit(JEQ_K, number["clone"], 0, 3)
    emit(LD_W_ABS, OFFSET_ARGS)
    emit(JSET_K, CLONE_NEW_ANY, "deny", 0)
    emit(JSET_K, CLONE_THREAD, "allow", "deny")
    # madvise: only the advice in MADVISE_ALLOWED (args[2]; its high half must be zero too).
    emit(JEQ_K, number["madvise"], 0, 4 + len(MADVISE_ALLOWED))
    emit(LD_W_ABS, OFFSET_ARGS + 8 * 2 + 4)
    emit(JEQ_K, 0, 0, "deny")
    emit(LD_W_ABS, OFFSET_ARGS + 8 * 2)
    for advice in MADVISE_ALLOWED:
        emit(JEQ_K, advice, "allow", 0)
    emit(RET_K, RET_ERRNO | errno.EPERM)
    # preadv2 and pwritev2: not with RWF_NOWAIT (args[5]), which answers "not in the page cache".
    for name in ("preadv2", "pwritev2"):
        emit(JEQ_K, number[name], 0, 2)
        emit(LD_W_ABS, OFFSET_ARGS + 8 * 5)
        emit(JSET_K, RWF_NOWAIT, "deny", "allow")
    # setpriority: only the caller itself (PRIO_PROCESS, 0); PRIO_USER would renice every process of
    # the uid, on the whole host when the container shares the host's user namespace.
    emit(JEQ_K, number["setpriority"], 0, 4)
    emit(LD_W_ABS, OFFSET_ARGS)
    emit(JEQ_K, 0, 0, "deny")
    emit(LD_W_ABS, OFFSET_ARGS + 8)
    emit(JEQ_K, 0, "allow", "deny")
    # The shared returns, here: every jump above reaches them within a jump's 255 instructions, however many
    # processes are protected (each block below returns in place); a plain jump (k: 32 bits) steps over them.
    labels = {"allow": len(program) + 1, "deny": len(program) + 2, "enosys": len(program) + 3}
    program += [
        (JA, 0, 0, 3),
        (RET_K, 0, 0, RET_ALLOW),
        (RET_K, 0, 0, RET_ERRNO | errno.EPERM),
        (RET_K, 0, 0, RET_ERRNO | errno.ENOSYS),
    ]
    # A protected process, its process group, or -1: every process.
    pids = [pid for pid in protected if pid > 0]  # 0 is the caller itself: never protected from itself
    targets = sorted({pid & 0xFFFFFFFF for pid in pids} | {-pid & 0xFFFFFFFF for pid in pids} | {0xFFFFFFFF})
    for name, index in TARGETED.items():
        emit(JEQ_K, number[name], 0, 3 + len(targets))  # not this call: skip its block
        emit(LD_W_ABS, OFFSET_ARGS + 8 * index)
        for at, target in enumerate(targets):
            emit(JEQ_K, target, len(targets) - at, 0)  # to the block's own refusal
        emit(RET_K, RET_ALLOW)
        emit(RET_K, RET_ERRNO | errno.EPERM)
    emit(RET_K, RET_ALLOW)
    resolved = []
    for index, (code, jt, jf, k) in enumerate(program):
        jumps = []
        for target in (jt, jf):
            offset = labels[target] - index - 1 if isinstance(target, str) else target
            if not 0 <= offset <= 255:
                raise ValueError("seccomp jump out of range")
            jumps.append(offset)
        resolved.append((code, jumps[0], jumps[1], k))
    return resolved


_BUILT: dict[tuple[tuple[int, ...], bool], Filter] = {}


class Filter:
    """The filter, built ahead (while a spare child waits for its job), installed in two prctl calls."""

    def __init__(self, program: list[tuple[int, int, int, int]] | None) -> None:
        self.program = program
        self._fprog: _SockFprog | None = None
        if program is not None:
            self._instructions = (_SockFilter * len(program))(*[_SockFilter(*instruction) for instruction in program])
            self._fprog = _SockFprog(len(program), self._instructions)

    @classmethod
    def build(cls, protected: tuple[int, ...], pinned: bool = False) -> Filter:
        """The filter for these protected pids; built once per process (the zygote builds it before its
        first fork, so every child starts with it ready; a benchmark's child builds its own)."""
        built = _BUILT.get((protected, pinned))
        if built is None:
            machine = platform.machine()
            program = build(machine, protected, pinned) if machine in ARCHES else None
            built = _BUILT[(protected, pinned)] = cls(program)
        return built

    def install(self) -> bool:
        """Installs the filter on the calling process (and so on all it starts); False where unsupported."""
        if self._fprog is None:
            return False
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
            return False
        return libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(self._fprog), 0, 0) == 0


def install(protected: tuple[int, ...]) -> bool:
    """Builds and installs the filter on the calling process; False where unsupported."""
    return Filter.build(protected).install()
