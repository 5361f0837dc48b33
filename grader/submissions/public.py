"""What a submitter may see of a submission: public models, and reading one from the database.

Hidden tests go out as their status only ("hidden test N"): no name, message, time, output or
traceback. Every view of a submission (the JSON API, the event stream, the report page) reads it
through read_submission, so none of them can show more.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import Row

from grader.grading.verdict import Status, TestResult, TestStatus
from grader.problems.registry import LoadedProblem, Registry
from grader.storage import crud
from grader.storage.db import Database, Submission


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


class WebhookPublic(BaseModel):
    url: str
    status: str = Field(description="pending, delivered, or failed (retries ran out)")
    attempts: int
    error: str | None = None


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
    seed: int | None = Field(None, description="what the hidden tests' inputs were drawn from; shown to the admin only")
    webhook: WebhookPublic | None = Field(None, description="the delivery of the verdict to callback_url")
    tests: list[TestPublic]


def public_tests(results: list[TestResult], problem: LoadedProblem | None) -> list[TestPublic]:
    """Visible tests with everything; hidden tests with their status and nothing else."""
    hidden_number = {}
    if problem is not None:
        count = 0
        for index, test in enumerate(problem.tests):
            if not test.visible:
                count += 1
                hidden_number[index] = count
    shown = []
    for result in results:
        if result.visible:
            shown.append(TestPublic(**result.model_dump(include=set(TestPublic.model_fields))))
        else:
            number = hidden_number.get(result.index, result.index + 1)
            shown.append(TestPublic(name=f"hidden test {number}", visible=False, status=result.status))
    return shown


def public_submission(
    submission: Submission | Row[Any], results: list[TestResult], problem: LoadedProblem | None
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
        webhook=WebhookPublic(
            url=submission.callback_url,
            status=submission.webhook_status or "pending",
            attempts=submission.webhook_attempts or 0,
            error=submission.webhook_error,
        )
        if submission.callback_url
        else None,
        tests=public_tests(results, problem),
    )


@dataclass(frozen=True)
class SubmissionView:
    """One submission as its pages need it: the public view, its source (the submitter's own), and its
    problem as currently served (None once removed)."""

    public: SubmissionPublic
    source: str
    problem: LoadedProblem | None
    seed: int | None = None

    @property
    def tests_total(self) -> int | None:
        return len(self.problem.tests) if self.problem is not None else None


def read_submission(db: Database, registry: Registry, submission_id: str) -> SubmissionView | None:
    with db.session() as session:
        submission = crud.submission_row(session, submission_id=submission_id)
    return view_of(submission, registry) if submission is not None else None


def view_of(submission: Row[Any], registry: Registry) -> SubmissionView:
    """The view of a submission's row as read (or as just stored)."""
    problem = registry.get(submission.problem_id)
    public = public_submission(submission, crud.submission_tests(submission), problem)
    return SubmissionView(public=public, source=submission.source, problem=problem, seed=submission.seed)
