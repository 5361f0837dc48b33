"""Where one submission's time goes: named phases, timed where they happen, summed per submission.

The grading code marks its phases with `timed("name")` (or `add`); a Processor opens `recording()`
around one submission and, once it is done, hands the sums to the metrics (torchjudge_phase_seconds),
which `make bench` reads to print the breakdown. Outside a recording nothing is kept: the problem
check and the expected outputs run the same code unrecorded. Standard library only, so that every
layer may use it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# The phases, in the order of a submission's path (the bench prints them so).
PHASES = (
    "queue",  # stored, then waiting for a worker
    "take",  # the worker marks it running (one conditional UPDATE)
    "expected",  # the reference's outputs for its seed: a cache lookup, or a run of the reference
    "handout",  # a warm container from the pool
    "job",  # the job sent, until its last result is in (the next five are parts of it)
    "load",  # the runner's time to load the submission (reported by the runner)
    "first test",  # the first test, as timed by the runner
    "other tests",  # every other test, as timed by the runner
    "compare",  # each result judged against the expected output (decoded and compared in a judge process)
    "progress",  # tests stored as they land
    "store",  # the verdict stored
)

_current: ContextVar[dict[str, float] | None] = ContextVar("torchjudge_phases", default=None)


@contextmanager
def recording() -> Iterator[dict[str, float]]:
    """Collects the phases timed in this thread (context) until the block ends: name -> seconds."""
    spent: dict[str, float] = {}
    token = _current.set(spent)
    try:
        yield spent
    finally:
        _current.reset(token)


def add(phase: str, seconds: float) -> None:
    spent = _current.get()
    if spent is not None and seconds >= 0:
        spent[phase] = spent.get(phase, 0.0) + seconds


@contextmanager
def timed(phase: str) -> Iterator[None]:
    if _current.get() is None:
        yield
        return
    started = time.perf_counter()
    try:
        yield
    finally:
        add(phase, time.perf_counter() - started)


def transport(spent: dict[str, float]) -> float:
    """The part of the job that is neither the runner's work nor this side's handling of the results:
    the job's and the frames' trips through the engine, and the runner's own bookkeeping."""
    inside = ("load", "first test", "other tests", "compare", "progress")
    return max(0.0, spent.get("job", 0.0) - sum(spent.get(name, 0.0) for name in inside))
