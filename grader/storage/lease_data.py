"""Data access for leases: a running submission's, renewed by its worker, and a queued one's dispatch
lease under Celery; the submissions nobody holds any more, found and put back on the queue."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, and_, or_, select, update
from sqlalchemy.orm import Session

from grader.grading.verdict import Status
from grader.storage.db import Submission, utcnow


def renew_lease(session: Session, *, submission_id: str, attempt: int, lease_s: float) -> bool:
    """Extends the lease of a grading attempt; False when the attempt no longer owns the submission."""
    renewed = session.execute(
        update(Submission)
        .where(
            Submission.id == submission_id,
            Submission.status == Status.RUNNING.value,
            Submission.attempts == attempt,
        )
        .values(lease_expires_at=utcnow() + timedelta(seconds=lease_s))
        .execution_options(synchronize_session=False)
    )
    session.commit()
    return renewed.rowcount == 1  # type: ignore[attr-defined,no-any-return]


def set_dispatch_lease(session: Session, *, submission_ids: list[str], lease_s: float) -> None:
    """A queued submission's message is out: if no worker has taken it by then, it is sent again."""
    if not submission_ids:
        return
    session.execute(
        update(Submission)
        .where(Submission.id.in_(submission_ids), Submission.status == Status.QUEUED.value)
        .values(lease_expires_at=utcnow() + timedelta(seconds=lease_s))
        .execution_options(synchronize_session=False)
    )
    session.commit()


def _lapsed(now: datetime, unleased_before: datetime) -> ColumnElement[bool]:
    """Queued or running, and no holder: its lease ran out, or it never got one (stored by an API that
    died before sending it) and has waited since before `unleased_before`."""
    return and_(
        Submission.status.in_((Status.QUEUED.value, Status.RUNNING.value)),
        or_(
            Submission.lease_expires_at < now,
            and_(Submission.lease_expires_at.is_(None), Submission.created_at < unleased_before),
        ),
    )


def expired_leases(
    session: Session, *, unleased_after_s: float, limit: int = 500, running_only: bool = False
) -> list[tuple[str, str]]:
    """Queued or running submissions that nobody holds any more: (id, status), oldest first."""
    now = utcnow()
    query = select(Submission.id, Submission.status).where(_lapsed(now, now - timedelta(seconds=unleased_after_s)))
    if running_only:
        query = query.where(Submission.status == Status.RUNNING.value)
    rows = session.execute(query.order_by(Submission.created_at).limit(limit))
    return [(row[0], row[1]) for row in rows]


def requeue_expired(session: Session, *, submission_id: str, lease_s: float, unleased_after_s: float) -> bool:
    """Puts a submission nobody holds back to queued with a new dispatch lease; True if this call did it
    (several reapers may see the same lapsed lease: one wins)."""
    now = utcnow()
    requeued = session.execute(
        update(Submission)
        .where(Submission.id == submission_id, _lapsed(now, now - timedelta(seconds=unleased_after_s)))
        .values(status=Status.QUEUED.value, tests=[], lease_expires_at=now + timedelta(seconds=lease_s))
        .execution_options(synchronize_session=False)
    )
    session.commit()
    return requeued.rowcount == 1  # type: ignore[attr-defined,no-any-return]
