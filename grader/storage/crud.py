"""Data access as plain keyword-only functions."""

from __future__ import annotations

import uuid

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from grader.grading.verdict import Status, TestResult, Verdict
from grader.storage.db import ExpectedOutput, Submission, utcnow


def create_submission(session: Session, *, problem_id: str, problem_version: str, source: str) -> Submission:
    submission = Submission(
        id=uuid.uuid4().hex,
        problem_id=problem_id,
        problem_version=problem_version,
        source=source,
        status=Status.QUEUED.value,
        score=0.0,
        tests=[],
    )
    session.add(submission)
    session.commit()
    return submission


def get_submission(session: Session, *, submission_id: str) -> Submission | None:
    return session.get(Submission, submission_id)


def mark_running(session: Session, *, submission_id: str) -> Submission | None:
    submission = session.get(Submission, submission_id)
    if submission is None or submission.status not in (Status.QUEUED.value, Status.RUNNING.value):
        return None
    submission.status = Status.RUNNING.value
    submission.started_at = utcnow()
    submission.attempts += 1
    submission.tests = []
    session.commit()
    return submission


def record_test(session: Session, *, submission_id: str, result: TestResult) -> None:
    submission = session.get(Submission, submission_id)
    if submission is None:
        return
    submission.tests = [*submission.tests, result.model_dump(mode="json")]
    session.commit()


def finish_submission(
    session: Session, *, submission_id: str, verdict: Verdict, problem_version: str | None = None
) -> None:
    submission = session.get(Submission, submission_id)
    if submission is None:
        return
    if problem_version is not None:
        submission.problem_version = problem_version
    submission.status = verdict.status.value
    submission.score = verdict.score
    submission.message = verdict.message
    submission.hint = verdict.hint
    submission.line = verdict.line
    submission.traceback = verdict.traceback
    submission.tests = [test.model_dump(mode="json") for test in verdict.tests]
    submission.finished_at = utcnow()
    session.commit()


def unfinished_submission_ids(session: Session) -> list[str]:
    """Submissions a stopped service left queued or running, oldest first; running ones go back to queued."""
    session.execute(
        update(Submission).where(Submission.status == Status.RUNNING.value).values(status=Status.QUEUED.value)
    )
    session.commit()
    rows = session.scalars(
        select(Submission.id).where(Submission.status == Status.QUEUED.value).order_by(Submission.created_at)
    )
    return list(rows)


def load_expected(session: Session, *, key: str) -> bytes | None:
    row = session.get(ExpectedOutput, key)
    return row.data if row is not None else None


def save_expected(session: Session, *, key: str, data: bytes) -> None:
    session.merge(ExpectedOutput(key=key, data=data))
    session.commit()


def submission_tests(submission: Submission) -> list[TestResult]:
    return [TestResult.model_validate(test) for test in submission.tests or []]


def delete_submission(session: Session, *, submission_id: str) -> None:
    submission = session.get(Submission, submission_id)
    if submission is not None:
        session.delete(submission)
        session.commit()
