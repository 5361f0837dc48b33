"""Data access for webhook deliveries: which verdicts are due, and how each delivery went."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from grader.grading.verdict import FINAL
from grader.storage.db import Submission, utcnow


def claim_due_webhooks(session: Session, *, claim_s: float, limit: int = 50) -> list[str]:
    """Final submissions whose webhook is due, each claimed for claim_s (a conditional UPDATE: of several
    processes looking at once, one takes each)."""
    now = utcnow()
    due = session.execute(
        select(Submission.id, Submission.webhook_next_at)
        .where(
            Submission.webhook_status == "pending",
            Submission.status.in_([status.value for status in FINAL]),
            or_(Submission.webhook_next_at.is_(None), Submission.webhook_next_at <= now),
        )
        .order_by(Submission.finished_at)
        .limit(limit)
    ).all()
    claimed = []
    for submission_id, next_at in due:
        unchanged = Submission.webhook_next_at.is_(None) if next_at is None else Submission.webhook_next_at == next_at
        taken = session.execute(
            update(Submission)
            .where(Submission.id == submission_id, Submission.webhook_status == "pending", unchanged)
            .values(webhook_next_at=now + timedelta(seconds=claim_s))
            .execution_options(synchronize_session=False)
        )
        if taken.rowcount == 1:  # type: ignore[attr-defined]
            claimed.append(submission_id)
    session.commit()
    return claimed


def record_webhook(
    session: Session, *, submission_id: str, status: str, attempts: int, error: str | None, next_at: datetime | None
) -> None:
    session.execute(
        update(Submission)
        .where(Submission.id == submission_id)
        .values(webhook_status=status, webhook_attempts=attempts, webhook_error=error, webhook_next_at=next_at)
        .execution_options(synchronize_session=False)
    )
    session.commit()
