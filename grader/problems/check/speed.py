"""The check's `speed` step, for a speed-graded problem: its benchmark timed as a submission's would be.

- The reference against the baseline: it loads, returns on every call what it returns on the same inputs
  (the benchmark's inputs build), and reaches the threshold (else no submission may be able to).
- The reference against itself: its speed-up stays within the noise (its interval holds 1, or it is within
  NOISE of 1), so that a speed-up is not the timing's doing; measured again once before it fails.
- Each alternative against the baseline: it reaches the threshold too (a correct solution written another
  way is not refused as slow).
- Each slow pitfall (correct, too slow) against the baseline: it is refused as slow (time_limit_exceeded, timed
  below the threshold or stopped as too slow to reach it).
The graders's own SpeedGrader does the timing, in the check's sandboxes: only the author's code runs there.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from grader.grading.expected import ExpectedCache
from grader.grading.judge import LOCAL
from grader.grading.speed import SpeedGrader
from grader.grading.verdict import Status, Verdict
from grader.problems.check.locate import Locator
from grader.problems.check.report import CheckStep, StepStatus

if TYPE_CHECKING:
    from grader.config_grading import SandboxSettings
    from grader.grading.model import Sandboxes
    from grader.problems.registry import LoadedProblem

NOISE = 1.25  # the reference against itself: within [1 / NOISE, NOISE] when its interval does not hold 1


def _told(verdict: Verdict) -> str:
    speed = verdict.speed
    if speed is None or speed.speedup is None or speed.interval is None:
        return verdict.message or verdict.status.value
    low, high = speed.interval
    return f"{speed.speedup:g}x [{low:g}-{high:g}]"


def _steady(verdict: Verdict) -> bool:
    """The reference against itself is 1x within the noise: its interval holds 1, or it is within NOISE of 1."""
    speed = verdict.speed
    if speed is None or speed.interval is None or speed.speedup is None:
        return False
    return speed.interval[0] <= 1.0 <= speed.interval[1] or 1 / NOISE <= speed.speedup <= NOISE


def _against_itself(grader: SpeedGrader, problem: LoadedProblem, seed: int | None, accepted: Verdict) -> Verdict:
    """The reference timed against itself, once more if the first measure is not steady (a machine busy with
    other work can tilt one benchmark; a problem whose calls truly differ in cost tilts both)."""
    against = ("the reference", problem.reference)
    first = grader.grade(problem, problem.reference, seed, accepted, against=against)
    if _steady(first) or first.status == Status.INTERNAL_ERROR:
        return first
    return grader.grade(problem, problem.reference, seed, accepted, against=against)


def speed_step(
    sandbox: SandboxSettings, sandboxes: Sandboxes, problem: LoadedProblem, locate: Locator, seed: int | None
) -> CheckStep:
    speed = problem.speed
    assert speed is not None
    started = time.monotonic()
    expected = ExpectedCache(sandbox, sandboxes, load=lambda key: None, save=lambda key, data: None)
    grader = SpeedGrader(sandbox, sandboxes, expected, LOCAL)
    accepted = Verdict(status=Status.ACCEPTED, score=1.0)
    errors: list[str] = []
    details: list[str] = []

    reference = grader.grade(problem, problem.reference, seed, accepted)
    details.append(f"the reference against the baseline {speed.baseline!r}: {_told(reference)}")
    if reference.status != Status.ACCEPTED:
        errors.append(locate.error(("speed", "threshold"), f"the reference against the baseline: {reference.message}"))
    itself = _against_itself(grader, problem, seed, accepted)
    details.append(f"the reference against itself: {_told(itself)}")
    result = itself.speed
    if itself.status == Status.INTERNAL_ERROR or result is None or result.interval is None:
        errors.append(locate.error(("speed",), f"the reference against itself: {itself.message}"))
    elif not _steady(itself):
        errors.append(
            locate.error(
                ("speed",),
                f"the reference against itself is {_told(itself)}, not 1x within the noise: the timing is not "
                "steady here, or the calls' inputs differ in cost (each call should do the same work)",
            )
        )
    for index, alternative in enumerate(problem.alternatives):
        verdict = grader.grade(problem, alternative.code, seed, accepted)
        details.append(f"alternative {alternative.name!r}: {_told(verdict)}")
        if verdict.status != Status.ACCEPTED:
            errors.append(locate.error(("alternatives", index), f"not fast enough, or wrong: {verdict.message}"))
    for index, pitfall in enumerate(problem.pitfalls):
        if not pitfall.slow:
            continue
        verdict = grader.grade(problem, pitfall.module, seed, accepted)
        details.append(f"slow pitfall {pitfall.name!r}: {_told(verdict)}")
        if verdict.status != Status.TIME_LIMIT_EXCEEDED or verdict.speed is None:
            message = f"not refused as slow: {verdict.status.value} ({verdict.message})"
            errors.append(locate.error(("pitfalls", index), message))
    seconds = round(time.monotonic() - started, 3)
    return CheckStep(
        name="speed",
        status=StepStatus.FAILED if errors else StepStatus.OK,
        summary=f"the reference {_told(reference)} the baseline {speed.baseline!r}; "
        f"threshold {speed.threshold:g}x ({speed.score})",
        details=details,
        errors=errors,
        seconds=seconds,
    )
