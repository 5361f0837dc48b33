"""The zygote's own memory on transparent huge pages, once it is warm and before it forks anything.

Every child is a fork of the zygote, and `import torch` leaves its private memory (the Python heap,
torch's registrations) in 4 KiB pages: fork() copies a page-table entry for each of them, and every
child's end tears as many down. Collapsed into 2 MiB pages (MADV_COLLAPSE, Linux 6.1 and later), the
same memory takes far fewer entries, and a fork and a child's end cost a fraction of what they did
(docs/BENCHMARKS.md, "Costs behind the code"). A child that writes to a shared huge page has it split
and copies only the 4 KiB it writes, as before, so children cost no more memory.

Best effort: where the kernel or the runtime (gVisor) cannot collapse a range, it stays as it was.
"""

from __future__ import annotations

import ctypes

MADV_HUGEPAGE = 14
MADV_COLLAPSE = 25
HUGE_PAGE = 2 << 20


def _private_anonymous_ranges() -> list[tuple[int, int]]:
    """Writable private anonymous mappings and the heap, cut to whole huge pages."""
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) < 5:
                continue
            perms, path = fields[1], fields[5] if len(fields) > 5 else ""
            if not perms.startswith("rw") or perms[3] != "p" or path not in ("", "[heap]"):
                continue
            start, end = (int(bound, 16) for bound in fields[0].split("-"))
            low = -(-start // HUGE_PAGE) * HUGE_PAGE
            high = end // HUGE_PAGE * HUGE_PAGE
            if high > low:
                ranges.append((low, high))
    return ranges


def collapse() -> int:
    """Collapses what it can of this process's anonymous memory into huge pages; the bytes collapsed."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        ranges = _private_anonymous_ranges()
    except (OSError, AttributeError, ValueError):
        return 0
    collapsed = 0
    for low, high in ranges:
        madvise(low, high - low, MADV_HUGEPAGE)  # also keeps them huge when khugepaged scans
        if madvise(low, high - low, MADV_COLLAPSE) == 0:
            collapsed += high - low
    return collapsed
