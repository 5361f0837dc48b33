"""What a problem check reports: a step per line, each with its errors as `file:line: field: message`."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field, computed_field

STEPS = ("schema", "reference", "deterministic", "starter", "pitfalls", "tolerances")


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
