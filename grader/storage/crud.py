"""Data access as plain keyword-only functions."""

from __future__ import annotations

import uuid

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from grader.grading.verdict import Status, TestResult, Verdict
from grader.storage.db import ExpectedOutput, Submission, UploadedProblem, utcnow


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


def record_progress(session: Session, *, submission_id: str, results: list[TestResult]) -> None:
    """The tests of a running submission that have finished so far."""
    submission = session.get(Submission, submission_id)
    if submission is None or submission.status != Status.RUNNING.value:
        return
    submission.tests = [result.model_dump(mode="json") for result in results]
    session.commit()


def _still_grading(submission: Submission, attempt: int | None) -> bool:
    """Whether a grading attempt still owns the submission: a regrade in the meantime takes it away."""
    if attempt is None:
        return True
    return submission.status == Status.RUNNING.value and submission.attempts == attempt


def finish_submission(
    session: Session,
    *,
    submission_id: str,
    verdict: Verdict,
    problem_version: str | None = None,
    attempt: int | None = None,
) -> None:
    """Stores the verdict; with `attempt`, only if that grading attempt still owns the submission."""
    submission = session.get(Submission, submission_id)
    if submission is None or not _still_grading(submission, attempt):
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


def requeue_problem_submissions(session: Session, *, problem_id: str, problem_version: str) -> tuple[int, list[str]]:
    """Resets every submission of a problem to queued (verdict and tests cleared) for a regrade.

    Returns how many were reset and the ids to put on the queue: those that were not already queued
    (a queued one is on the queue already, or goes back on it at start-up)."""
    submissions = session.scalars(
        select(Submission).where(Submission.problem_id == problem_id).order_by(Submission.created_at)
    ).all()
    to_queue = []
    for submission in submissions:
        if submission.status != Status.QUEUED.value:
            to_queue.append(submission.id)
        submission.status = Status.QUEUED.value
        submission.problem_version = problem_version
        submission.score = 0.0
        submission.message = None
        submission.hint = None
        submission.line = None
        submission.traceback = None
        submission.tests = []
        submission.started_at = None
        submission.finished_at = None
    session.commit()
    return len(submissions), to_queue


# -- uploaded problems ---------------------------------------------------------------------------------
def list_uploaded_problems(session: Session) -> list[UploadedProblem]:
    return list(session.scalars(select(UploadedProblem).order_by(UploadedProblem.id)))


def uploaded_problem_versions(session: Session) -> dict[str, str]:
    """id -> version of every stored upload: cheap to poll for changes made by another process."""
    return {row.id: row.version for row in session.execute(select(UploadedProblem.id, UploadedProblem.version))}


def get_uploaded_problem(session: Session, *, problem_id: str) -> UploadedProblem | None:
    return session.get(UploadedProblem, problem_id)


def save_uploaded_problem(session: Session, *, problem_id: str, version: str, text: str) -> bool:
    """Stores an upload, replacing one with the same id; True when it is new."""
    row = session.get(UploadedProblem, problem_id)
    created = row is None
    if row is None:
        row = UploadedProblem(id=problem_id, version=version, text=text)
        session.add(row)
    else:
        row.version = version
        row.text = text
        row.updated_at = utcnow()
    session.commit()
    return created


def delete_uploaded_problem(session: Session, *, problem_id: str) -> bool:
    row = session.get(UploadedProblem, problem_id)
    if row is None:
        return False
    session.delete(row)
    session.commit()
    return True
