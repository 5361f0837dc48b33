"""Data access for webhook deliveries: which verdicts are due, the message each delivery sends, and how
each delivery went."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from sqlalchemy import delete, or_, select, update
from sqlalchemy.orm import Session

from grader.grading.verdict import FINAL
from grader.origins import client_identity
from grader.storage.db import Submission, WebhookMessage, utcnow

CANDIDATES = 8  # due deliveries looked at per free sender, so that those within their shares are found


def delivery_shares(submitter: str | None, address: str | None, url: str | None) -> tuple[str, str]:
    """Whose a delivery is, for fair shares between deliveries (grader/submissions/webhooks.py): its
    submitter (an API key's hash, else the client's address) and its receiving host."""
    try:
        host = (urlsplit(url or "").hostname or "").lower()
    except ValueError:
        host = ""
    return client_identity(submitter, address), "host:" + host


def claim_due_webhooks(
    session: Session, *, claim_s: float, limit: int = 50, allowed: Callable[[str, str], bool] | None = None
) -> list[tuple[str, tuple[str, str]]]:
    """Final submissions whose webhook is due, each claimed for claim_s (a conditional UPDATE: of several
    processes looking at once, one takes each), with whose it is (delivery_shares). First attempts before
    retries, so that receivers that keep failing (or answer slowly) do not hold the others' first try back.
    `allowed(submitter, host)`: whether one more of theirs may be claimed now (each claim counted at once):
    of the due deliveries (a window of CANDIDATES per claim) those over their share are left for later."""
    now = utcnow()
    due = session.execute(
        select(
            Submission.id,
            Submission.webhook_next_at,
            Submission.api_key_hash,
            Submission.client_address,
            Submission.callback_url,
        )
        .where(
            Submission.webhook_status == "pending",
            Submission.status.in_([status.value for status in FINAL]),
            or_(Submission.webhook_next_at.is_(None), Submission.webhook_next_at <= now),
        )
        .order_by(Submission.webhook_attempts, Submission.finished_at)
        .limit(limit * CANDIDATES if allowed is not None else limit)
    ).all()
    claimed: list[tuple[str, tuple[str, str]]] = []
    for submission_id, next_at, submitter, address, url in due:
        if len(claimed) >= limit:
            break
        shares = delivery_shares(submitter, address, url)
        if allowed is not None and not allowed(*shares):
            continue
        unchanged = Submission.webhook_next_at.is_(None) if next_at is None else Submission.webhook_next_at == next_at
        taken = session.execute(
            update(Submission)
            .where(Submission.id == submission_id, Submission.webhook_status == "pending", unchanged)
            .values(webhook_next_at=now + timedelta(seconds=claim_s))
            .execution_options(synchronize_session=False)
        )
        if taken.rowcount == 1:  # type: ignore[attr-defined]
            claimed.append((submission_id, shares))
    session.commit()
    return claimed


def webhook_message(
    session: Session, *, submission_id: str, grading: int, build: Callable[[], tuple[str, bytes]]
) -> tuple[str, bytes]:
    """The (delivery id, body) of a verdict's webhook: as stored by an earlier attempt, or built now and
    stored. A message stored for an earlier verdict of the same submission (before a regrade) is replaced."""
    stored = session.get(WebhookMessage, submission_id)
    if stored is not None and stored.grading == grading:
        return stored.message_id, stored.body
    message_id, body = build()
    if stored is None:
        session.add(WebhookMessage(submission_id=submission_id, grading=grading, message_id=message_id, body=body))
    else:
        stored.grading, stored.message_id, stored.body, stored.created_at = grading, message_id, body, utcnow()
    session.commit()
    return message_id, body


def record_webhook(
    session: Session,
    *,
    submission_id: str,
    grading: int,
    status: str,
    attempts: int,
    error: str | None,
    next_at: datetime | None,
) -> bool:
    """Stores how an attempt went, unless the submission was regraded meanwhile (queued again, or graded
    since: its delivery is the new verdict's); False then. A delivery that ended (delivered, or failed)
    drops its message."""
    recorded = session.execute(
        update(Submission)
        .where(
            Submission.id == submission_id,
            Submission.attempts == grading,
            Submission.status.in_([final.value for final in FINAL]),
        )
        .values(webhook_status=status, webhook_attempts=attempts, webhook_error=error, webhook_next_at=next_at)
        .execution_options(synchronize_session=False)
    )
    if status != "pending":
        session.execute(
            delete(WebhookMessage)
            .where(WebhookMessage.submission_id == submission_id, WebhookMessage.grading == grading)
            .execution_options(synchronize_session=False)
        )
    session.commit()
    return recorded.rowcount == 1  # type: ignore[attr-defined]
