"""A speed-graded verdict's numbers, made on the trusted side from the raw times the runner measured
(sandbox/runner/timing.py): per size, the speed-up is the median of the paired ratios (the baseline's call
over the submission's call made next to it), with a distribution-free 95 % interval for that median; the
score is the geometric mean of the sizes' speed-ups (or the smallest), its interval made of the sizes'.

Work done before the timed calls is not free: the submission's import, first calls and warm-up calls, beyond
what the baseline's took (and a grace for the noise of a load), are charged to its timed calls, spread evenly
over all of them: a module that does its work at import, on its first call or while it is warmed up (every
call's inputs are in its memory from the start) pays for it as if it had done it in the timed calls.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

CONFIDENCE = 0.95


class SizeSpeed(BaseModel):
    """One input size: the speed-up, its interval, the medians of the timed calls, the first calls."""

    model_config = ConfigDict(allow_inf_nan=False)  # a stored timing holding one reads as absent (public.py)

    name: str
    speedup: float
    interval: tuple[float, float]
    submission_ms: float  # median of the submission's timed calls, with the setup charge
    baseline_ms: float
    submission_first_ms: float
    baseline_first_ms: float
    repeats: int


class SpeedResult(BaseModel):
    """What a speed-graded verdict says of speed (verdict.py Verdict.speed)."""

    model_config = ConfigDict(allow_inf_nan=False)

    baseline: str
    device: str = "cpu"
    score: str = "geomean"
    threshold: float
    speedup: float | None = None  # the score: None when it was not measured
    interval: tuple[float, float] | None = None
    passed: bool = False
    sizes: list[SizeSpeed] = Field(default_factory=list)
    submission_import_ms: float | None = None
    baseline_import_ms: float | None = None
    setup_charge_ms: float = 0.0  # added to each of the submission's timed calls
    cpu: int | None = None
    message: str | None = None
    details: dict[str, Any] | None = None  # a wrong call's comparison (expected against got)


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """A distribution-free interval for the median: the order statistics x(k) and x(n+1-k), for the largest k
    with P(Binomial(n, 1/2) < k) at most (1 - confidence) / 2 (every value, for samples too small for that)."""
    ordered = sorted(values)
    n = len(ordered)
    tail, k, below = (1 - confidence) / 2, 0, 0.0
    while k < n // 2:
        below += math.comb(n, k) / 2**n  # P(Binomial < k + 1)
        if below > tail:
            break
        k += 1
    k = max(k, 1)
    return ordered[k - 1], ordered[n - k]


def _rounded(value: float, digits: int = 4) -> float:
    return float(f"{value:.{digits}g}")


def size_speed(
    name: str, subject_ns: Sequence[float], baseline_ns: Sequence[float], warmup: int, charge_ns: float
) -> SizeSpeed:
    """One size's numbers from its raw times (every call, in order: the first, the warm-up, the timed ones)."""
    timed_subject = [ns + charge_ns for ns in subject_ns[1 + warmup :]]
    timed_baseline = list(baseline_ns[1 + warmup :])
    ratios = [b / max(a, 1.0) for a, b in zip(timed_subject, timed_baseline, strict=True)]
    low, high = median_interval(ratios)
    return SizeSpeed(
        name=name,
        speedup=_rounded(median(ratios)),
        interval=(_rounded(low), _rounded(high)),
        submission_ms=_rounded(median(timed_subject) / 1e6),
        baseline_ms=_rounded(median(timed_baseline) / 1e6),
        submission_first_ms=_rounded(subject_ns[0] / 1e6),
        baseline_first_ms=_rounded(baseline_ns[0] / 1e6),
        repeats=len(ratios),
    )


SETUP_GRACE_NS = 2_000_000  # what a load's own noise may differ by (a cold cache, a page fault storm)


def work_ns(
    subject: Sequence[int],
    subject_done: Sequence[int],
    baseline: Sequence[int],
    baseline_done: Sequence[int],
    warmup: int,
) -> tuple[list[float], list[float]]:
    """Each call's work, the subject's and the baseline's: the time until the module's child said the call
    returned, plus what its value then took to come beyond the usual (the median of the baseline's timed calls
    at this size, the same value's sending: the subject cannot move it). Encoding and sending a value is the
    judge's work, the same for both, and not timed; work a child moves past its word that it returned is, as
    the excess."""

    def sending(full: Sequence[int], done: Sequence[int]) -> list[int]:
        return [max(0, whole - returned) for whole, returned in zip(full, done, strict=True)]

    timed = sending(baseline, baseline_done)[1 + warmup :]
    usual = median(timed) if timed else 0.0

    def work(full: Sequence[int], done: Sequence[int]) -> list[float]:
        pairs = zip(full, done, strict=True)
        return [min(returned, whole) + max(0.0, whole - returned - usual) for whole, returned in pairs]

    return work(subject, subject_done), work(baseline, baseline_done)


def setup_charge_ns(
    subject_import_ns: float, baseline_import_ns: float, subject_before_ns: float, baseline_before_ns: float, calls: int
) -> float:
    """What each timed call of the submission is charged for the work it did before them: its import, first and
    warm-up calls, beyond the baseline's and the grace, spread over its `calls` timed calls."""
    excess = (subject_import_ns + subject_before_ns) - (baseline_import_ns + baseline_before_ns) - SETUP_GRACE_NS
    return max(0.0, excess) / max(calls, 1)


def geometric_mean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(max(value, 1e-12)) for value in values) / len(values))


def score(sizes: Sequence[SizeSpeed], how: str) -> tuple[float, tuple[float, float]]:
    """The score and its interval: the geometric mean of the sizes' (and of their bounds), or the smallest."""
    if how == "min":
        worst = min(sizes, key=lambda size: size.speedup)
        return worst.speedup, worst.interval
    return (
        _rounded(geometric_mean([size.speedup for size in sizes])),
        (
            _rounded(geometric_mean([size.interval[0] for size in sizes])),
            _rounded(geometric_mean([size.interval[1] for size in sizes])),
        ),
    )
