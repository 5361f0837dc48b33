"""What a problem check reports: a step per line, each with its errors as `file:line: field: message`."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field, computed_field

from grader.grading.model import ProblemSpec
from grader.grading.seeds import FIXED_SEED, derive, draws_fresh

STEPS = ("schema", "reference", "deterministic", "starter", "pitfalls", "alternatives", "tolerances", "impostors")


class StepStatus(StrEnum):
    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"


class CheckStep(BaseModel):
    name: str
    status: StepStatus
    summary: str
    details: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list, description="each 'file:line: field: message'")
    seconds: float = 0.0


class CheckReport(BaseModel):
    source: str
    problem_id: str | None = None
    version: str | None = None
    steps: list[CheckStep] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        return all(step.status != StepStatus.FAILED for step in self.steps)

    @property
    def errors(self) -> list[str]:
        return [error for step in self.steps for error in step.errors]


def numbers(indices: list[int]) -> str:
    """1-based test numbers with runs folded: [0, 2, 3, 4] -> '1, 3-5'."""
    parts: list[str] = []
    ordered = [i + 1 for i in sorted(indices)]
    if not ordered:
        return ""
    start = previous = ordered[0]
    for number in [*ordered[1:], None]:
        if number is not None and number == previous + 1:
            previous = number
            continue
        parts.append(str(start) if start == previous else f"{start}-{previous}")
        if number is not None:
            start = previous = number
    return ", ".join(parts)


SEEDS_CHECKED = 8  # draws of the fresh tests' inputs every step is run under, unless told otherwise
MAX_SEEDS = 1000


def check_seeds(problem: ProblemSpec, count: int = SEEDS_CHECKED) -> list[int | None]:
    """The seeds a problem is checked under: the one GRADER_SEEDS=fixed uses, then draws derived from the
    problem's version (so that a check can be repeated); just one when no test draws fresh inputs."""
    if not draws_fresh(problem):
        return [None]
    base = int(problem.version, 16) if problem.version else 0
    return [FIXED_SEED, *(derive(base, draw) for draw in range(1, max(1, min(count, MAX_SEEDS))))]


def merge_steps(steps: list[CheckStep], seeds: list[int | None]) -> CheckStep:
    """One step from its runs under several seeds: failed if any failed; an error or warning found under
    every seed is listed once, any other says which seed it was found under; details of the first."""
    if len(steps) == 1:
        return steps[0]
    merged = steps[0].model_copy(deep=True)
    merged.errors, merged.warnings = [], []
    everywhere = set.intersection(*(set(step.errors) | set(step.warnings) for step in steps))
    merged.errors = [error for error in steps[0].errors if error in everywhere]
    merged.warnings = [warning for warning in steps[0].warnings if warning in everywhere]
    for step, seed in zip(steps, seeds, strict=True):
        merged.errors += [f"{error} (seed {seed})" for error in step.errors if error not in everywhere]
        merged.warnings += [f"{warning} (seed {seed})" for warning in step.warnings if warning not in everywhere]
        merged.seconds = round(merged.seconds + (step.seconds if step is not steps[0] else 0), 3)
    failed = [step for step in steps if step.status == StepStatus.FAILED]
    if failed:
        merged.status = StepStatus.FAILED
        merged.summary = failed[0].summary
    merged.summary += f" (under {len(steps)} seeds)"
    return merged
