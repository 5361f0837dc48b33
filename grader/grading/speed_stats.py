"""A speed-graded verdict's numbers, made on the trusted side from the times the runner measured
(sandbox/runner/timing.py: each child's CPU time where the kernel keeps it, else the wall clock; per call, net
of the harness's own time as the judge's null module measured it beside each; each timed region's time over
its calls).

Per size, the speed-up is the baseline's timed calls' total over the submission's: all of a module's work
counts, wherever it put it among its calls (a median of per-call ratios would credit a module that makes just
over half its calls cheap by doing their work in the others). Its 95 % interval is a bootstrap of the paired
calls (the calls made next to each other resampled together, a seeded draw: the same numbers give the same
interval). The score is the geometric mean of the sizes' speed-ups (or the smallest), its interval made of the
sizes' bounds.

Work done before the timed calls is not free: every call's inputs are in the child's memory from the start, so
a module could compute timed calls' results at import, on its first call or in the warm-up. What its import
took beyond the baseline's, and what each of its first and warm-up calls took beyond its own timed calls' mean,
less a grace for a load's noise, is charged to its timed calls, spread evenly over them: as if done there. It
is measured against its own calls, never the baseline's (a slow baseline's first calls are no credit to spend).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# How the judge times (sandbox/runner/timing.py): 1, each call alone with the harness on the clock; 2, regions of
# calls with the harness's own time measured beside them and taken off. Speed-ups of two versions do not compare.
TIMING_VERSION = 2
CONFIDENCE = 0.95
RESAMPLES = 2000
SETUP_GRACE_NS = 2_000_000  # what a load's own noise may differ by (a cold cache, a page fault storm)


class SizeSpeed(BaseModel):
    """One input size: the speed-up, its interval, the mean of the timed calls, the first calls."""

    model_config = ConfigDict(allow_inf_nan=False)  # a stored timing holding one reads as absent (public.py)

    name: str
    speedup: float
    interval: tuple[float, float]
    submission_ms: float  # the mean of the submission's timed calls, with the setup charge
    baseline_ms: float
    submission_first_ms: float
    baseline_first_ms: float
    repeats: int
    batch: int = 1  # the submission's calls in each timed region (autorange)
    baseline_batch: int = 1
    harness_ms: float = 0.0  # the harness's own time per call, taken off the submission's


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
    clock: Literal["cpu", "wall"] | None = None  # each module's CPU time, or the wall clock (under gVisor)
    message: str | None = None
    details: dict[str, Any] | None = None  # a wrong call's comparison (expected against got)
    timing_version: int = Field(1, ge=1, le=1000)  # TIMING_VERSION when timed; a stored timing without one: 1


def _rounded(value: float, digits: int = 4) -> float:
    return float(f"{value:.{digits}g}")


def ratio_interval(subject: Sequence[float], baseline: Sequence[float]) -> tuple[float, float]:
    """A 95 % bootstrap interval of sum(baseline) / sum(subject), the pairs resampled together (seeded)."""
    draw, n = random.Random(7), len(subject)
    ratios = []
    for _ in range(RESAMPLES):
        picked = [draw.randrange(n) for _ in range(n)]
        ratios.append(sum(baseline[i] for i in picked) / max(sum(subject[i] for i in picked), 1.0))
    ratios.sort()
    tail = int(RESAMPLES * (1 - CONFIDENCE) / 2)
    return ratios[tail], ratios[-tail - 1]


def size_speed(
    name: str,
    subject_ns: Sequence[float],
    baseline_ns: Sequence[float],
    warmup: int,
    charge_ns: float,
    batches: tuple[int, int] = (1, 1),
    harness_ns: float = 0.0,
) -> SizeSpeed:
    """One size's numbers from its times (in order: the first call, the warm-up calls, the timed regions' per
    call); `batches`, the calls in each module's timed regions."""
    subject = [ns + charge_ns for ns in subject_ns[1 + warmup :]]
    baseline = list(baseline_ns[1 + warmup :])
    low, high = ratio_interval(subject, baseline)
    return SizeSpeed(
        name=name,
        speedup=_rounded(sum(baseline) / max(sum(subject), 1.0)),
        interval=(_rounded(low), _rounded(high)),
        submission_ms=_rounded(sum(subject) / len(subject) / 1e6),
        baseline_ms=_rounded(sum(baseline) / len(baseline) / 1e6),
        submission_first_ms=_rounded(subject_ns[0] / 1e6),
        baseline_first_ms=_rounded(baseline_ns[0] / 1e6),
        repeats=len(subject),
        batch=batches[0],
        baseline_batch=batches[1],
        harness_ms=_rounded(harness_ns / 1e6),
    )


def setup_charge_ns(
    subject_import_ns: float,
    baseline_import_ns: float,
    sizes: Sequence[Sequence[int]],
    warmup: int,
    batches: Sequence[int] | None = None,
) -> float:
    """What each timed call of the submission is charged for the work it did before them: its import beyond the
    baseline's, and each first and warm-up call beyond its own timed calls' mean at that size, less the grace,
    spread over its timed calls (each timed region's time a call holds `batches[size]` calls). `sizes`: the
    submission's times per call, per size."""
    excess = max(0.0, subject_import_ns - baseline_import_ns)
    timed_calls = 0
    for index, times in enumerate(sizes):
        timed = times[1 + warmup :]
        mean = sum(timed) / len(timed)
        excess += sum(max(0.0, before - mean) for before in times[: 1 + warmup])
        timed_calls += len(timed) * (batches[index] if batches is not None else 1)
    return max(0.0, excess - SETUP_GRACE_NS) / max(timed_calls, 1)


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
