"""What the API accepts and returns. Public models carry only what a submitter may see: never the
reference, hidden tests' code or names, or pitfalls' code."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from grader.grading.verdict import Status, TestResult, TestStatus
from grader.problems.registry import LoadedProblem
from grader.storage.db import Submission


class SubmissionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    problem_id: str = Field(min_length=1, max_length=64, examples=["embedding-layer"])
    source: str = Field(description="the Python module implementing the problem's entry points")


class SubmissionAccepted(BaseModel):
    id: str
    status: Status


class TestPublic(BaseModel):
    name: str
    visible: bool
    status: TestStatus
    message: str | None = None
    time_ms: float | None = None
    hint: str | None = None
    details: dict[str, Any] | None = None
    traceback: str | None = None
    line: int | None = None
    output: str | None = Field(None, description="what the submission printed during the test (visible tests)")


class SubmissionPublic(BaseModel):
    id: str
    problem_id: str
    problem_version: str
    status: Status
    score: float
    message: str | None = None
    hint: str | None = None
    line: int | None = None
    traceback: str | None = None
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    tests: list[TestPublic]


def public_tests(results: list[TestResult], problem: LoadedProblem | None) -> list[TestPublic]:
    """Visible tests with everything; hidden tests with their status and nothing else."""
    hidden_number = {}
    if problem is not None:
        count = 0
        for index, test in enumerate(problem.problem.tests):
            if not test.visible:
                count += 1
                hidden_number[index] = count
    shown = []
    for result in results:
        if result.visible:
            shown.append(
                TestPublic(
                    name=result.name,
                    visible=True,
                    status=result.status,
                    message=result.message,
                    time_ms=result.time_ms,
                    hint=result.hint,
                    details=result.details,
                    traceback=result.traceback,
                    line=result.line,
                    output=result.output,
                )
            )
        else:
            number = hidden_number.get(result.index, result.index + 1)
            shown.append(TestPublic(name=f"hidden test {number}", visible=False, status=result.status))
    return shown


def public_submission(
    submission: Submission, results: list[TestResult], problem: LoadedProblem | None
) -> SubmissionPublic:
    return SubmissionPublic(
        id=submission.id,
        problem_id=submission.problem_id,
        problem_version=submission.problem_version,
        status=Status(submission.status),
        score=submission.score,
        message=submission.message,
        hint=submission.hint,
        line=submission.line,
        traceback=submission.traceback,
        created_at=submission.created_at,
        started_at=submission.started_at,
        finished_at=submission.finished_at,
        tests=public_tests(results, problem),
    )


class ProblemSummary(BaseModel):
    id: str
    title: str
    difficulty: str
    tags: list[str]
    version: str


class VisibleTest(BaseModel):
    name: str
    code: str
    weight: float


class Limits(BaseModel):
    time_s: float
    memory_mb: int
    output_kb: int


class ProblemPublic(ProblemSummary):
    source: str
    statement: str
    starter_code: str
    entry_points: list[str]
    limits: Limits
    visible_tests: list[VisibleTest]
    hidden_tests: int


def problem_summary(problem: LoadedProblem) -> ProblemSummary:
    p = problem.problem
    return ProblemSummary(id=p.id, title=p.title, difficulty=p.difficulty, tags=list(p.tags), version=problem.version)


def problem_public(problem: LoadedProblem) -> ProblemPublic:
    p = problem.problem
    return ProblemPublic(
        **problem_summary(problem).model_dump(),
        source=p.source,
        statement=p.statement,
        starter_code=p.starter_code,
        entry_points=list(p.entry_points),
        limits=Limits(**problem.limits.as_dict()),
        visible_tests=[VisibleTest(name=t.name, code=t.code, weight=t.weight) for t in p.tests if t.visible],
        hidden_tests=sum(1 for t in p.tests if not t.visible),
    )
