"""The verdict vocabulary and how per-test results add up to one. Verdicts are data, not exceptions."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from grader.sandboxes.protocol import Outcome


class Status(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    ACCEPTED = "accepted"
    WRONG_ANSWER = "wrong_answer"
    RUNTIME_ERROR = "runtime_error"
    TIME_LIMIT_EXCEEDED = "time_limit_exceeded"
    MEMORY_LIMIT_EXCEEDED = "memory_limit_exceeded"
    OUTPUT_LIMIT_EXCEEDED = "output_limit_exceeded"
    COMPILE_ERROR = "compile_error"
    INTERNAL_ERROR = "internal_error"


FINAL = frozenset(Status) - {Status.QUEUED, Status.RUNNING}


class TestStatus(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    TIMEOUT = "timeout"
    MEMORY = "memory"
    OUTPUT = "output"
    SKIPPED = "skipped"


# What a test's status makes of the whole submission when it is the first test that did not pass.
TEST_TO_STATUS = {
    TestStatus.FAILED: Status.WRONG_ANSWER,
    TestStatus.ERROR: Status.RUNTIME_ERROR,
    TestStatus.TIMEOUT: Status.TIME_LIMIT_EXCEEDED,
    TestStatus.MEMORY: Status.MEMORY_LIMIT_EXCEEDED,
    TestStatus.OUTPUT: Status.OUTPUT_LIMIT_EXCEEDED,
    TestStatus.SKIPPED: Status.INTERNAL_ERROR,
}

# The runner's word for a test, in the grader's vocabulary (a runner "ok" is compared first).
RUNNER_TO_TEST = {
    Outcome.ERROR: TestStatus.ERROR,
    Outcome.TIMEOUT: TestStatus.TIMEOUT,
    Outcome.MEMORY: TestStatus.MEMORY,
    Outcome.OUTPUT: TestStatus.OUTPUT,
    Outcome.SKIPPED: TestStatus.SKIPPED,
}

# The runner's word for loading the submission.
LOAD_TO_STATUS = {
    Outcome.COMPILE_ERROR: Status.COMPILE_ERROR,
    Outcome.ERROR: Status.RUNTIME_ERROR,
    Outcome.MEMORY: Status.MEMORY_LIMIT_EXCEEDED,
    Outcome.TIMEOUT: Status.TIME_LIMIT_EXCEEDED,
    Outcome.OUTPUT: Status.OUTPUT_LIMIT_EXCEEDED,
}


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


def overall(tests: list[TestResult]) -> tuple[Status, float]:
    """The status of the first test, in file order, that did not pass; score = weighted fraction passed."""
    total = sum(t.weight for t in tests) or 1.0
    score = sum(t.weight for t in tests if t.status == TestStatus.PASSED) / total
    for test in tests:
        if test.status != TestStatus.PASSED:
            return TEST_TO_STATUS[test.status], round(score, 6)
    return Status.ACCEPTED, round(score, 6)
