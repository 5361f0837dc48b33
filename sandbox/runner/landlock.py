"""A Landlock ruleset the child puts on itself before any submission code runs (stdlib + ctypes only).

Seccomp sees system call numbers and arguments, never paths; Landlock decides by path. With it the
child reads only what a solution needs (the Python installation and its libraries, a few device
files, its own /proc status files) and writes only to its scratch space. What that takes away:

- writing anything under /proc: the child cannot lower its own oom_score_adj (so the kernel's OOM
  killer keeps choosing it, never the zygote or the runner), nor write its own memory file;
- /proc/self/pagemap, which tells which pages of a mapped file are in the host's page cache (with
  the kernel's fault-around, without reading them): a channel between containers;
- every file outside the allow list, the runner's sources and the container's cgroup files among them;
- signals to processes outside the child's domain (ABI 6), on top of the seccomp filter.

Where the kernel has no Landlock (gVisor, old kernels) install() returns 0 and seccomp stands alone.
"""

from __future__ import annotations

import ctypes
import os

SYS_CREATE_RULESET = 444  # the same number on x86_64 and aarch64
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

READ = READ_FILE | READ_DIR
SCRATCH = (
    (READ | WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO | MAKE_SYM)
    | REFER
    | TRUNCATE
)

# (path, rights): directories grant their whole tree, files only themselves.
ALLOWED = (
    ("/usr", READ),
    ("/etc", READ),
    ("/tmp", SCRATCH),
    ("/dev/shm", SCRATCH),
    ("/dev/mqueue", READ),
    ("/dev/null", READ_FILE | WRITE_FILE | TRUNCATE),
    ("/dev/zero", READ_FILE),
    ("/dev/full", READ_FILE | WRITE_FILE),
    ("/dev/random", READ_FILE),
    ("/dev/urandom", READ_FILE),
    ("/proc/cpuinfo", READ_FILE),
    ("/proc/meminfo", READ_FILE),
    ("/proc/stat", READ_FILE),
    ("/proc/self/status", READ_FILE),
    ("/proc/self/stat", READ_FILE),
    ("/proc/self/statm", READ_FILE),
    ("/proc/self/maps", READ_FILE),
    ("/proc/self/limits", READ_FILE),
    ("/proc/self/cmdline", READ_FILE),
    ("/sys/devices/system/cpu", READ),
)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def abi_version() -> int:
    """The kernel's Landlock ABI, 0 where there is none (or a seccomp profile hides it)."""
    try:
        version = _libc().syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(0, int(version))


def _handled(abi: int) -> int:
    rights = (MAKE_SYM << 1) - 1  # every right of ABI 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def install() -> int:
    """Restricts the calling process (and all it starts) to ALLOWED; the ABI used, 0 if unsupported.
    Raises OSError when Landlock exists but the ruleset cannot be applied: the child must not run the
    submission half-confined."""
    abi = abi_version()
    if abi <= 0:
        return 0
    libc = _libc()
    handled = _handled(abi)
    attr = _RulesetAttr(handled_access_fs=handled, handled_access_net=0, scoped=0)
    size = 8  # ABI 1-3: only handled_access_fs
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        size = ctypes.sizeof(_RulesetAttr)
    elif abi >= 4:
        size = 16
    ruleset = libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        for path, rights in ALLOWED:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # absent here (a device file under gVisor, say): nothing to allow
            try:
                if not os.path.isdir(path):
                    rights &= READ_FILE | WRITE_FILE | TRUNCATE | EXECUTE | IOCTL_DEV
                rule = _PathBeneathAttr(allowed_access=rights & handled, parent_fd=fd)
                if (
                    libc.syscall(
                        SYS_ADD_RULE,
                        ctypes.c_int(ruleset),
                        ctypes.c_int(RULE_PATH_BENEATH),
                        ctypes.byref(rule),
                        ctypes.c_uint32(0),
                    )
                    < 0
                ):
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
            finally:
                os.close(fd)
        libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
        if libc.syscall(SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    return abi
