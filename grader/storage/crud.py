"""Data access as plain keyword-only functions."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Row, and_, bindparam, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from sqlalchemy.sql.dml import ReturningUpdate, Update

from grader.grading.verdict import Status, TestResult, Verdict
from grader.storage.db import Submission, utcnow

TABLE = Submission.__table__


# The grading path's statements (insert, take, store, read) are built once: Core statements on the table,
# without the ORM's unit of work, whose cache keys SQLAlchemy computes once per statement object.
_INSERT = insert(TABLE).returning(TABLE)


def create_submission(
    session: Session,
    *,
    problem_id: str,
    problem_version: str,
    source: str,
    api_key_hash: str | None = None,
    idempotency_key: str | None = None,
    seed: int | None = None,
    client_address: str | None = None,
    callback_url: str | None = None,
    taken_for_s: float | None = None,
    client_metadata: dict[str, Any] | None = None,
    batch_id: str | None = None,
    owner_hash: str | None = None,
    submitter: str | None = None,
) -> Row[Any]:
    """Stores a queued submission; its row, as stored. With `taken_for_s`, it is stored already taken for
    grading, as mark_running would leave it (running, first attempt, leased for that long): for a grader
    of this process that waits for it."""
    now = utcnow()
    taken = (
        {
            "status": Status.RUNNING.value,
            "attempts": 1,
            "grading_starts": 1,
            "started_at": now,
            "lease_expires_at": now + timedelta(seconds=taken_for_s),
        }
        if taken_for_s is not None
        else {"status": Status.QUEUED.value}
    )
    row = session.execute(
        _INSERT,
        taken
        | {
            "id": uuid.uuid4().hex,
            "problem_id": problem_id,
            "problem_version": problem_version,
            "source": source,
            "created_at": now,
            "score": 0.0,
            "tests": [],
            "api_key_hash": api_key_hash,
            "idempotency_key": idempotency_key,
            "seed": seed,
            "client_address": client_address,
            "callback_url": callback_url,
            "webhook_status": "pending" if callback_url else None,
            "client_metadata": client_metadata,
            "batch_id": batch_id,
            "owner_hash": owner_hash,
            "submitter": submitter,
        },
    ).one()
    session.commit()
    return row


def get_submission_by_idempotency_key(session: Session, *, idempotency_key: str) -> Submission | None:
    return session.scalars(select(Submission).where(Submission.idempotency_key == idempotency_key)).first()


def create_submission_once(
    session: Session,
    *,
    problem_id: str,
    problem_version: str,
    source: str,
    api_key_hash: str | None,
    idempotency_key: str,
    **fields: object,
) -> tuple[Submission | Row[Any], bool]:
    """The submission stored under an idempotency key, created if there is none; True when created.

    Race-safe: of two requests inserting the same key at once, the unique index lets one win and the
    other reads what the winner stored."""
    existing = get_submission_by_idempotency_key(session, idempotency_key=idempotency_key)
    if existing is not None:
        return existing, False
    try:
        created = create_submission(
            session,
            problem_id=problem_id,
            problem_version=problem_version,
            source=source,
            api_key_hash=api_key_hash,
            idempotency_key=idempotency_key,
            **fields,  # type: ignore[arg-type]
        )
        return created, True
    except IntegrityError:
        session.rollback()
    winner = get_submission_by_idempotency_key(session, idempotency_key=idempotency_key)
    if winner is None:  # the winner was deleted again (its queue was full): nothing to return
        raise LookupError(idempotency_key)
    return winner, False


def get_submission(session: Session, *, submission_id: str) -> Submission | None:
    return session.get(Submission, submission_id)


_READ = select(TABLE).where(TABLE.c.id == bindparam("b_id"))


def submission_row(session: Session, *, submission_id: str) -> Row[Any] | None:
    """The submission's columns, read only (attributes as on a Submission)."""
    return session.execute(_READ, {"b_id": submission_id}).first()


def _takeable(now: datetime) -> ColumnElement[bool]:
    """Queued, or running under a lease that ran out (or none)."""
    return or_(
        TABLE.c.status == Status.QUEUED.value,
        and_(
            TABLE.c.status == Status.RUNNING.value,
            or_(TABLE.c.lease_expires_at.is_(None), TABLE.c.lease_expires_at < now),
        ),
    )


def _take(max_starts: bool) -> Update:
    now = bindparam("b_now", type_=TABLE.c.started_at.type)
    query = update(TABLE).where(TABLE.c.id == bindparam("b_id"), _takeable(now))
    if max_starts:
        query = query.where(TABLE.c.grading_starts < bindparam("b_max_starts"))
    return query.values(
        status=Status.RUNNING.value,
        started_at=now,
        attempts=TABLE.c.attempts + 1,
        grading_starts=TABLE.c.grading_starts + 1,
        tests=[],
        lease_expires_at=bindparam("b_lease", type_=TABLE.c.lease_expires_at.type),
    ).returning(TABLE)  # the row as taken, in the same statement


_TAKE = {max_starts: _take(max_starts) for max_starts in (False, True)}


def mark_running(
    session: Session, *, submission_id: str, lease_s: float | None = None, max_starts: int | None = None
) -> Row[Any] | None:
    """Takes a submission for grading (its row, as taken), or None when it is not to be graded here:
    final already, running under a live lease (another worker has it; a redelivered message must not
    grade it twice), or started `max_starts` times already without a verdict (give_up_unfinished ends it).

    One conditional UPDATE, so that of two workers racing for one submission exactly one wins."""
    now = utcnow()
    params = {
        "b_id": submission_id,
        "b_now": now,
        "b_lease": now + timedelta(seconds=lease_s) if lease_s is not None else None,
        "b_max_starts": max_starts,
    }
    taken = session.execute(_TAKE[max_starts is not None], params).one_or_none()
    session.commit()
    return taken


def give_up_unfinished(session: Session, *, submission_id: str, max_starts: int, message: str) -> bool:
    """Ends as internal_error a submission whose grading was started `max_starts` times without a verdict
    and that nobody holds now; True if this call did it (one conditional UPDATE: one taker wins)."""
    now = utcnow()
    ended = session.execute(
        update(Submission)
        .where(Submission.id == submission_id, Submission.grading_starts >= max_starts, _takeable(now))
        .values(
            status=Status.INTERNAL_ERROR.value,
            score=0.0,
            message=message,
            hint=None,
            line=None,
            traceback=None,
            finished_at=now,
            lease_expires_at=None,
        )
        .execution_options(synchronize_session=False)
    )
    session.commit()
    return ended.rowcount == 1  # type: ignore[attr-defined,no-any-return]


def count_by_status(session: Session) -> dict[str, int]:
    rows = session.execute(select(Submission.status, func.count()).group_by(Submission.status))
    return {status: count for status, count in rows}


def count_queued(session: Session) -> int:
    return int(session.scalar(select(func.count()).where(Submission.status == Status.QUEUED.value)) or 0)


def recent_by_key(session: Session, *, api_key_hash: str, since: datetime) -> tuple[int, datetime | None]:
    """How many submissions a key made since `since`, and when the oldest of them was made."""
    count, oldest = session.execute(
        select(func.count(), func.min(Submission.created_at)).where(
            Submission.api_key_hash == api_key_hash, Submission.created_at >= since
        )
    ).one()
    return int(count), oldest


def recent_by_address(session: Session, *, client_address: str, since: datetime) -> tuple[int, datetime | None]:
    """How many anonymous submissions came from an address since `since`, and when the oldest was made."""
    count, oldest = session.execute(
        select(func.count(), func.min(Submission.created_at)).where(
            Submission.client_address == client_address, Submission.created_at >= since
        )
    ).one()
    return int(count), oldest


def list_by_key(
    session: Session,
    *,
    api_key_hash: str | None = None,
    owner_hash: str | None = None,
    limit: int,
    before: datetime | None = None,
    problem_id: str | None = None,
) -> list[Submission]:
    """A key's own submissions (or, without keys, an owner token's), newest first."""
    if (api_key_hash is None) == (owner_hash is None):
        raise ValueError("one of api_key_hash and owner_hash")
    mine = Submission.api_key_hash == api_key_hash if api_key_hash is not None else Submission.owner_hash == owner_hash
    query = select(Submission).where(mine)
    if before is not None:
        query = query.where(Submission.created_at < before)
    if problem_id is not None:
        query = query.where(Submission.problem_id == problem_id)
    return list(session.scalars(query.order_by(Submission.created_at.desc()).limit(limit)))


def record_progress(session: Session, *, submission_id: str, results: list[TestResult]) -> None:
    """The tests of a running submission that have finished so far."""
    tests = [result.model_dump(mode="json") for result in results]
    running = TABLE.c.status == Status.RUNNING.value
    session.execute(update(TABLE).where(TABLE.c.id == submission_id, running).values(tests=tests))
    session.commit()


_VERDICT_COLUMNS = ("status", "score", "message", "hint", "line", "traceback", "finished_at", "tests", "speed")


def _finish(version: bool, attempt: bool) -> ReturningUpdate[Any]:
    query = update(TABLE).where(TABLE.c.id == bindparam("b_id"))
    if attempt:
        query = query.where(TABLE.c.status == Status.RUNNING.value, TABLE.c.attempts == bindparam("b_attempt"))
    fields: dict[str, Any] = {name: bindparam(f"b_{name}", type_=TABLE.c[name].type) for name in _VERDICT_COLUMNS}
    if version:
        fields["problem_version"] = bindparam("b_problem_version")
    return query.values(**fields).returning(TABLE)


# By (a problem version given, an attempt given), as _TAKE by whether starts are bounded.
_FINISH = {(version, attempt): _finish(version, attempt) for version in (False, True) for attempt in (False, True)}


def finish_submission(
    session: Session,
    *,
    submission_id: str,
    verdict: Verdict,
    problem_version: str | None = None,
    attempt: int | None = None,
) -> Row[Any] | None:
    """Stores the verdict; with `attempt`, only if that grading attempt still owns the submission (one
    conditional UPDATE: a regrade meanwhile, which took the submission away, makes it a no-op). The row
    as stored, or None when nothing was."""
    params = {
        "b_id": submission_id,
        "b_attempt": attempt,
        "b_problem_version": problem_version,
        "b_status": verdict.status.value,
        "b_score": verdict.score,
        "b_message": verdict.message,
        "b_hint": verdict.hint,
        "b_line": verdict.line,
        "b_traceback": verdict.traceback,
        "b_finished_at": utcnow(),
        "b_tests": [test.model_dump(mode="json") for test in verdict.tests],
        "b_speed": verdict.speed.model_dump(mode="json") if verdict.speed is not None else None,
    }
    stored = session.execute(_FINISH[problem_version is not None, attempt is not None], params).one_or_none()
    session.commit()
    return stored


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


def submission_tests(submission: Submission | Row[Any]) -> list[TestResult]:
    return [TestResult.model_validate(test) for test in submission.tests or []]


def delete_submission(session: Session, *, submission_id: str) -> None:
    submission = session.get(Submission, submission_id)
    if submission is not None:
        session.delete(submission)
        session.commit()


def requeue_problem_submissions(
    session: Session, *, problem_id: str, problem_version: str, dispatch_lease_s: float | None = None
) -> tuple[int, list[str]]:
    """Resets every submission of a problem to queued (verdict and tests cleared) for a regrade.

    Returns how many were reset and the ids to put on the queue: those that were not already queued
    (a queued one is on the queue already, or goes back on it at start-up). Those get a fresh dispatch
    lease, so that a Celery reaper does not take a lease left over from their last grading for a lost one."""
    submissions = session.scalars(
        select(Submission).where(Submission.problem_id == problem_id).order_by(Submission.created_at)
    ).all()
    to_queue = []
    for submission in submissions:
        if submission.status != Status.QUEUED.value:
            to_queue.append(submission.id)
            if dispatch_lease_s is not None:
                submission.lease_expires_at = utcnow() + timedelta(seconds=dispatch_lease_s)
        submission.status = Status.QUEUED.value
        submission.problem_version = problem_version
        submission.score = 0.0
        submission.message = None
        submission.hint = None
        submission.line = None
        submission.traceback = None
        submission.tests = []
        submission.speed = None
        submission.started_at = None
        submission.finished_at = None
        submission.grading_starts = 0
        if submission.callback_url:  # the new verdict is delivered in its turn
            submission.webhook_status, submission.webhook_attempts = "pending", 0
            submission.webhook_error, submission.webhook_next_at = None, None
    session.commit()
    return len(submissions), to_queue
