"""The runner's measure of a child's memory: each test's peak, read from the kernel, never from the child."""

from __future__ import annotations

import os

STATUS_BYTES = 8192  # /proc/<pid>/status is some 1.5 KB
# Whether this kernel has clear_refs at all (gVisor's has not): looked up once, on the runner's own /proc.
HAS_CLEAR_REFS: list[bool] = []
# A test whose time runs out while it holds between these shares of its memory limit is given this much
# longer, once: a memory bomb on a loaded machine reaches its limit (and its MemoryError, or
# the edge that outcomes.memory_outcome reads) within it, so that it is never a timeout the memory caused.
MEMORY_GRACE_S = 1.0
MEMORY_GRACE_BAND = (0.4, 0.85)


# Where a status file's fields may start: after its first line, the process's name, which the child sets
# (prctl PR_SET_NAME, at most 15 bytes). Linux escapes a newline in it; gVisor does not, so that a name such as
# "\nVmRSS:\t0" would read as a field of its own if the search began inside it.
FIELDS_FROM = len(b"Name:\t") + 15


def _field_mb(text: bytes, key: bytes) -> int | None:
    """A /proc status field in kB (`key`: the field's name after a newline), in MB; None where it is absent."""
    at = text.find(key, FIELDS_FROM)
    if at < 0:
        return None
    return int(text[at + len(key) : text.find(b"\n", at + 1)].split()[0]) // 1024


class PeakMemory:
    """A child's memory as the runner measures it (child.py Child sets these attributes)."""

    pid: int
    exit_status: int | None
    memory_mb: int | None  # its job's memory limit, once it has a job
    graced: bool  # the memory's grace (MEMORY_GRACE_S) given once
    # The current test's memory (reset_peak): whether its high-water mark was reset, the largest VmRSS seen where
    # there is no high-water mark (gVisor), and its peak read just before the runner killed it.
    peak_reset: bool
    rss_seen: int | None
    peak_at_kill: int | None
    _status_fd: int | None  # its /proc status, opened once (_memory)
    _refs_fd: int | None  # its /proc clear_refs, opened once (reset_peak)

    def _memory_grace(self, peak: int | None) -> bool:
        if self.graced or peak is None or not self.memory_mb:
            return False
        low, high = MEMORY_GRACE_BAND
        self.graced = low * self.memory_mb <= peak < high * self.memory_mb
        return self.graced

    def _memory(self) -> tuple[int | None, int | None]:
        """(VmHWM, VmRSS) in MB, each None where /proc does not show it: gVisor has no VmHWM, and a process
        that has ended (a zombie) neither. Read through a descriptor opened once (it stays this process's
        file, whatever pid comes next), not opened again for every test."""
        try:
            if self._status_fd is None:
                self._status_fd = os.open(f"/proc/{self.pid}/status", os.O_RDONLY | os.O_CLOEXEC)
            text = os.pread(self._status_fd, STATUS_BYTES, 0)
            return _field_mb(text, b"\nVmHWM:"), _field_mb(text, b"\nVmRSS:")
        except (OSError, ValueError, IndexError):
            return None, None

    def peak_mb(self) -> int | None:
        """The child's peak resident memory in MB (VmHWM since the test began; gVisor has only VmRSS, what it
        holds now), while it lives; None when it cannot be read."""
        found = [value for value in self._memory() if value is not None]
        return max(found) if found else None

    def reset_peak(self) -> None:
        """Before a test: the kernel's high-water mark (VmHWM) back to what the child holds now, so that the peak
        read after the test is this test's, not the process's since it started. The child made itself dumpable
        (confine.py), so its /proc files are owned by its uid, the runner's, who may write its clear_refs
        (seccomp and Landlock confine the child, not the runner). gVisor has no clear_refs and no VmHWM: there
        the largest VmRSS seen during the test stands for its peak (test_peak_mb)."""
        self.peak_reset, self.rss_seen, self.peak_at_kill = False, None, None
        if not HAS_CLEAR_REFS:
            HAS_CLEAR_REFS.append(os.path.exists("/proc/self/clear_refs"))
        if not HAS_CLEAR_REFS[0]:
            return
        try:
            if self._refs_fd is None:  # opened once: a write on it resets the mark again (one system call a test)
                self._refs_fd = os.open(f"/proc/{self.pid}/clear_refs", os.O_WRONLY | os.O_CLOEXEC)
            self.peak_reset = os.write(self._refs_fd, b"5") == 1
        except OSError:
            pass

    def close_memory(self) -> None:
        """Closes the descriptors of its /proc files (the child is gone, or about to be)."""
        for name in ("_status_fd", "_refs_fd"):
            fd = getattr(self, name)
            if fd is not None:
                setattr(self, name, None)
                try:
                    os.close(fd)
                except OSError:
                    pass

    def _sample_memory(self) -> None:
        """Where there is no high-water mark to reset (gVisor): the largest VmRSS seen during the test."""
        hwm, rss = self._memory()
        if hwm is None and rss is not None:
            self.rss_seen = max(rss, self.rss_seen or 0)

    def test_peak_mb(self) -> int | None:
        """The current test's peak resident memory in MB, measured here (never what the child says): VmHWM since
        reset_peak(); under gVisor the largest VmRSS seen (read every TASK_POLL_S and at the end: a lower bound of
        the peak). None where it cannot be measured honestly: the process ended by itself (a crash, the OOM
        killer), or its high-water mark could not be reset (it would be the process's peak since it started)."""
        if self.exit_status is not None:
            return self.peak_at_kill  # read just before the runner killed it (its time ran out, say)
        hwm, rss = self._memory()
        if hwm is not None:
            return hwm if self.peak_reset else None
        return None if rss is None else max(rss, self.rss_seen or 0)
