"""Reads every file of the image into the host's page cache, before any submission runs.

Every container of the image shares the image's read-only files, so the same inodes and the same
pages of the host's page cache. A submission that reads chosen pages of a big file makes them
resident; a submission in another container that times reads of the same pages (a resident page
reads in about two microseconds, one from disk in fifty or more) learns which ones: a channel
between sandboxes, for hidden tests' code among other things. Evicting a page or asking whether it
is resident is refused to the submission (the child's seccomp filter: mincore, fadvise, readahead,
cachestat, madvise...). What is left, making a page resident by reading it, changes nothing once
every page of every file is resident already (SECURITY.md, "The page-cache channel").

Three uses:
- read_image_files(), in the zygote at container start, before anything is forked (main.py), unless
  the container's command line says --no-prewarm (under gVisor, whose sentry would copy every file
  into the sandbox's own memory; and to measure the channel). A backstop: pages evicted since the
  pool started are resident again when a container starts.
- `prewarm.py --keep`, the pool's keeper container (grader/containers/prewarm.py): keep_image_files()
  maps every file and locks it in memory, so that no reclaim evicts any page while the pool runs.
- `prewarm.py`, a one-off read when the pool does not pin the image.

Cheap when the pages are resident already (see _Reader): about half a second for the image's
13 500 files and 820 MB on a warm host, two on a cold one. Bounded in time; every error is ignored
(a file that cannot be read by this uid cannot be read by a submission either).
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import sys
import time
from collections.abc import Iterator

NO_PREWARM = "--no-prewarm"
BUDGET_S = 30.0
# Never walked into, whatever /proc/self/mountinfo says: not the image's files.
SKIP = frozenset({"/proc", "/sys", "/dev", "/tmp", "/run/secrets"})
MADV_POPULATE_READ = 22  # Linux 5.14; not in Python 3.11's mmap module
CHUNK = 64 << 20  # populate or read in pieces, so that the deadline is checked within big files
BUFFER = 1 << 20


def _mount_points() -> set[str]:
    """Every mount point but the root: tmpfs, proc, sysfs, and the files Docker binds in (/etc/hosts)."""
    points: set[str] = set()
    try:
        with open("/proc/self/mountinfo", "rb") as handle:
            for line in handle:
                fields = line.split()
                if len(fields) > 4:
                    # Octal escapes for space, tab, newline and backslash.
                    point = fields[4].decode("utf-8", "surrogateescape")
                    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
                        point = point.replace(code, char)
                    points.add(point)
    except OSError:
        pass
    points.discard("/")
    return points


class _Reader:
    """A file's first megabyte is read into a reused buffer, which for most files (Python modules) is
    the whole file, known by the short read; the rest of a bigger file is mapped and its page-table
    entries filled from the page cache (MADV_POPULATE_READ, no copy), then unmapped. Where the kernel
    lacks MADV_POPULATE_READ (before 5.14) the rest is read too."""

    def __init__(self) -> None:
        self.populate = True
        self.view = memoryview(bytearray(BUFFER))

    def read(self, fd: int, deadline: float) -> int:
        """Brings the file's pages into the page cache; returns the bytes covered."""
        done = os.readv(fd, [self.view])
        if done < len(self.view):
            return done  # a short read of a regular file: its end
        size = os.fstat(fd).st_size
        if self.populate:
            try:
                return done + self._populate(fd, done, size, deadline)
            except OSError as exc:
                if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                    raise
                self.populate = False
        while time.monotonic() < deadline:
            count = os.readv(fd, [self.view])
            if not count:
                break
            done += count
        return done

    @staticmethod
    def _populate(fd: int, start: int, size: int, deadline: float) -> int:
        if size <= start:
            return 0
        with mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ) as mapping:
            done = start
            while done < size and time.monotonic() < deadline:
                length = min(CHUNK, size - done)
                mapping.madvise(MADV_POPULATE_READ, done, length)
                done += length
            return done - start


def _image_files(deadline: float) -> Iterator[str]:
    """Every regular file of the root filesystem: not other mounts, not through symlinks."""
    skip = SKIP | _mount_points()
    try:
        root_dev = os.lstat("/").st_dev
    except OSError:
        return
    stack = ["/"]
    while stack and time.monotonic() < deadline:
        directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            path = entry.path
            if path in skip:
                continue
            try:
                # The entry's type comes with the directory listing (no stat); symlinks are skipped.
                if entry.is_dir(follow_symlinks=False):
                    if entry.stat(follow_symlinks=False).st_dev == root_dev:  # not another filesystem
                        stack.append(path)
                elif entry.is_file(follow_symlinks=False):
                    yield path
            except OSError:
                continue


def _open(path: str) -> int:
    return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)


def read_image_files(budget_s: float = BUDGET_S) -> dict[str, float]:
    """Reads every regular file of the root filesystem (not other mounts, not through symlinks)."""
    started = time.monotonic()
    deadline = started + budget_s
    files = 0
    covered = 0
    reader = _Reader()
    for path in _image_files(deadline):
        try:
            fd = _open(path)
        except OSError:
            continue
        try:
            covered += reader.read(fd, deadline)
            files += 1
        except (OSError, ValueError):
            pass
        finally:
            os.close(fd)
    return {"files": files, "bytes": covered, "seconds": round(time.monotonic() - started, 4)}


def keep_image_files(budget_s: float = BUDGET_S) -> tuple[dict[str, float], list[tuple[int, int]]]:
    """Maps every regular file of the image and locks the mappings in memory (mlock), which reads
    every page and keeps it resident, unevictable by any reclaim, as long as this process lives;
    where locking is refused (RLIMIT_MEMLOCK), the pages are only read and left mapped (still passed
    over by reclaim that takes only unmapped pages, such as the proactive reclaim of some hosts).
    Returns the counts and the mappings (address, length), which the caller keeps."""
    started = time.monotonic()
    deadline = started + budget_s
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.mlock.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    mappings: list[tuple[int, int]] = []
    locked = 0
    covered = 0
    lock = True
    for path in _image_files(deadline):
        try:
            fd = _open(path)
        except OSError:
            continue
        try:
            size = os.fstat(fd).st_size
            if size <= 0:
                continue
            address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        except OSError:
            continue
        finally:
            os.close(fd)
        if address in (None, ctypes.c_void_p(-1).value):
            continue
        mappings.append((address, size))
        if lock and libc.mlock(address, size) == 0:
            locked += size
        else:
            lock = False  # refused once (RLIMIT_MEMLOCK): read the rest, left mapped
            libc.madvise(address, size, MADV_POPULATE_READ)
        covered += size
    counts = {
        "files": len(mappings),
        "bytes": covered,
        "locked_bytes": locked,
        "seconds": round(time.monotonic() - started, 4),
    }
    return counts, mappings


if __name__ == "__main__":
    # The pool runs this file on its own in a container of the image (grader/containers/prewarm.py): once
    # to read everything, or with --keep to hold every page of the image resident until stdin closes.
    import json

    if "--keep" in sys.argv[1:]:
        counts, kept = keep_image_files()
        sys.stdout.write(json.dumps(counts) + "\n")
        sys.stdout.flush()
        while sys.stdin.buffer.read(1 << 16):  # the pool holds stdin open; EOF when it closes or dies
            pass
    else:
        sys.stdout.write(json.dumps(read_image_files()) + "\n")
