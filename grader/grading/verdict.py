"""A verdict and how per-test results add up to one (the vocabulary: grader/vocabulary.py). Verdicts are data,
not exceptions."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from grader.grading.speed_stats import SpeedResult

# The words themselves, and what each test status makes of the submission: one table (grader/vocabulary.py).
from grader.vocabulary import FINAL, LOAD_TO_STATUS, RUNNER_TO_TEST, TEST_TO_STATUS, Status, TestStatus

__all__ = ["FINAL", "LOAD_TO_STATUS", "RUNNER_TO_TEST", "TEST_TO_STATUS", "Status", "TestStatus"]


class TestResult(BaseModel):
    """One test's result as stored; the public view hides hidden tests' fields."""

    index: int
    name: str
    visible: bool
    weight: float = 1.0
    status: TestStatus
    message: str | None = None
    time_ms: float | None = None
    # The test's peak resident memory (measured by the runner, reset before each test) and its limit, in MB;
    # memory_mb is None where it could not be measured (the process ended by itself, or under gVisor sometimes).
    memory_mb: int | None = None
    memory_limit_mb: int | None = None
    hint: str | None = None
    details: dict[str, Any] | None = None
    traceback: str | None = None
    line: int | None = None
    output: str | None = None  # what the submission printed during the test


class Verdict(BaseModel):
    status: Status
    score: float = 0.0
    message: str | None = None
    hint: str | None = None
    line: int | None = None
    traceback: str | None = None
    tests: list[TestResult] = Field(default_factory=list)
    speed: SpeedResult | None = None  # a speed-graded problem's, once every test passed (grading/speed.py)


def overall(tests: list[TestResult]) -> tuple[Status, float]:
    """The status of the first test, in file order, that did not pass; score = weighted fraction passed."""
    total = sum(t.weight for t in tests) or 1.0
    score = sum(t.weight for t in tests if t.status == TestStatus.PASSED) / total
    for test in tests:
        if test.status != TestStatus.PASSED:
            return TEST_TO_STATUS[test.status], round(score, 6)
    return Status.ACCEPTED, round(score, 6)
