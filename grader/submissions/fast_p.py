"""KernelBench's fast_p over a batch, for an evaluation harness (GET /api/batches/{id}).

fast_p is the share of items that are correct and faster than the baseline by more than p (Ouyang et al., 2025,
"KernelBench"). Over a batch it counts the items of speed-graded problems whose verdict is final: correct is every
test passed (a correct item too slow for the threshold is still correct), faster is the verdict's speed-up over the
problem's baseline. Two values of p: 1 (faster than the baseline at all) and each problem's own threshold. Items of
problems that are not speed-graded have no baseline and are left out; so are items still queued or running, until
they are final. An item the judge failed on (internal_error) counts as neither correct nor fast, and is told apart
(`judge_errors`: grade them again): left out, a submission that could make the judge fail would take its own slow
items out of the share. Everything read here comes from a stored verdict: each value is checked before it is used.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel, Field

from grader.grading.verdict import FINAL, Status


class FastP(BaseModel):
    items: int = Field(description="the batch's items of speed-graded problems that have their final verdict")
    correct: int = Field(description="of those, the items that passed every test")
    judge_errors: int = Field(
        0, description="of those, the items the judge failed on (internal_error): counted as not correct"
    )
    fast_1: float = Field(description="the share of those items correct and faster than the baseline (speed-up > 1)")
    fast_threshold: float = Field(
        description="the share of those items correct and faster than the baseline by more than the problem's "
        "threshold (speed-up > threshold)"
    )


def _number(value: object) -> float | None:
    return float(value) if type(value) in (int, float) and math.isfinite(value) else None  # type: ignore[arg-type]


def _final(status: object) -> bool:
    """A final verdict (the judge's own failure included)."""
    try:
        return Status(status) in FINAL
    except ValueError:
        return False


def fast_p(rows: Iterable[Any], speed_graded: Callable[[str], bool]) -> FastP | None:
    """fast_p over stored submissions (each with `problem_id`, `status`, `score` and `speed`, the stored timing or
    None); None when the batch has no final item of a speed-graded problem."""
    items = correct = judge_errors = fast_1 = fast_threshold = 0
    for row in rows:
        speed = row.speed if isinstance(row.speed, dict) else None
        if not _final(row.status) or not (speed is not None or speed_graded(row.problem_id)):
            continue
        items += 1
        if row.status == Status.INTERNAL_ERROR:
            judge_errors += 1
            continue
        if _number(row.score) != 1.0:
            continue
        correct += 1
        speedup = _number(speed.get("speedup")) if speed is not None else None
        threshold = _number(speed.get("threshold")) if speed is not None else None
        if speedup is None:
            continue
        fast_1 += speedup > 1.0
        fast_threshold += threshold is not None and speedup > threshold
    if items == 0:
        return None
    return FastP(
        items=items,
        correct=correct,
        judge_errors=judge_errors,
        fast_1=fast_1 / items,
        fast_threshold=fast_threshold / items,
    )
