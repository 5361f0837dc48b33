"""How a load, a test or a call ended, told in terms of the limit that ended it (the runner's and the
benchmark's reading of a child's report, with the runner's own measures of it)."""

from __future__ import annotations

from .child import Child
from .messages import Report
from .protocol import Outcome

# A test whose time ran out while it held this much of its memory limit was filling its memory (a bomb that
# page-faults its way towards the limit on a loaded machine): its failure is the memory's, not the clock's.
MEMORY_NEAR_LIMIT = 0.85


def memory_outcome(report: Report, proc: Child) -> Report:
    """A test's or a load's report, told in terms of the memory limit when memory is what ended it: the
    limit named, never an allocator's own words; a timeout at the edge of the limit is the memory's."""
    memory_mb, peak = proc.memory_mb or 0, proc.peak_at_timeout
    if report.status == Outcome.TIMEOUT and peak is not None and peak >= MEMORY_NEAR_LIMIT * memory_mb:
        message = f"ran out of memory: it held {peak} MB of its {memory_mb} MB when its time ran out"
        return Report(Outcome.MEMORY, message=message)
    if report.status == Outcome.MEMORY:
        report.message = f"used more than its memory limit of {memory_mb} MB"
    return report
