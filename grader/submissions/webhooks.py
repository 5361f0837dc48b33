"""Webhooks: a submission's final verdict POSTed to its `callback_url`, signed, retried with backoff for a
bounded time, its delivery state kept on the submission.

Signed the Standard Webhooks way (https://www.standardwebhooks.com/): `webhook-id` (one per delivery,
the same on every retry), `webhook-timestamp` (the attempt's unix seconds) and `webhook-signature`
(`v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`), plus, for receivers written before,
`X-Torchjudge-Signature: sha256=<hex HMAC-SHA256 of the body>`. The body is built once per delivery
and stored (grader/storage/webhook_data.py), so every retry sends the same bytes; it is the verdict as
GET /api/submissions/{id} shows it, without the `webhook` field (the delivery's own state).

Attempts run on GRADER_WEBHOOK_CONCURRENCY threads per process, each within GRADER_WEBHOOK_TIMEOUT_S
from the host's lookup to the answer's last byte (grader/submissions/webhook_http.py), so a receiver
that answers slowly holds one thread for at most that long; where a callback may point is
grader/submissions/callbacks.py's to say, at intake and again at every attempt.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import math
import queue
import ssl
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import uuid4

from grader.background import BackgroundLoop
from grader.config_groups import WebhookSettings
from grader.grading.verdict import FINAL, Status
from grader.metrics import Metrics
from grader.problems.registry import Registry
from grader.storage import crud, webhook_data
from grader.storage.db import Database
from grader.submissions import callbacks
from grader.submissions.callbacks import Lookups
from grader.submissions.public import read_submission
from grader.submissions.submitters import Refused
from grader.submissions.webhook_http import post

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Torchjudge-Signature"
MAX_ERROR = 500  # what is kept of an attempt's error: a receiver's bytes may be part of it
SHARE = 0.25  # of the senders, the most one submitter's deliveries, or one receiving host's, hold at once
CLAIM_MARGIN_S = 30.0  # a claim outlasts the attempt's deadline by this much: no second process sends it meanwhile


def sign(secret: str, body: bytes) -> str:
    """`X-Torchjudge-Signature`: the body's HMAC-SHA256, keyed with the secret's UTF-8 bytes."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def standard_signature(key: bytes, message_id: str, timestamp: int, body: bytes) -> str:
    """`webhook-signature`, version 1 of Standard Webhooks' symmetric scheme."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def check_callback(url: str | None, webhooks: WebhookSettings) -> str | None:
    """The callback URL of a new submission, checked (its host resolved); None when there is none."""
    if url is None:
        return None
    if not webhooks.secret:
        raise Refused(422, "callback_url: webhooks are off on this server (no GRADER_WEBHOOK_SECRET)")
    callbacks.check(url, webhooks)
    return url


def _bounded(text: str) -> str:
    """An error as stored and logged: printable, and at most MAX_ERROR characters."""
    printable = "".join(char if char.isprintable() else "?" for char in text[: MAX_ERROR + 1])
    return printable if len(printable) <= MAX_ERROR else printable[: MAX_ERROR - 3] + "..."


@dataclass(frozen=True)
class Attempt:
    """How one attempt went: delivered, rejected (a non-2xx status), timeout, error or refused."""

    outcome: str
    error: str | None = None


def attempt(
    url: str, message_id: str, body: bytes, webhooks: WebhookSettings, lookups: Lookups, tls: ssl.SSLContext
) -> Attempt:
    """One attempt of a delivery: the URL checked again (DNS may have changed), then the POST, all
    within GRADER_WEBHOOK_TIMEOUT_S."""
    timeout = webhooks.timeout_s
    deadline = time.monotonic() + timeout
    timestamp = int(time.time())
    headers = [
        ("Content-Type", "application/json"),
        ("User-Agent", "torchjudge-webhook"),
        ("Connection", "close"),
        ("webhook-id", message_id),
        ("webhook-timestamp", str(timestamp)),
        ("webhook-signature", standard_signature(webhooks.signing_key, message_id, timestamp, body)),
        (SIGNATURE_HEADER, sign(webhooks.secret, body)),
    ]
    try:
        callback = callbacks.resolve(callbacks.parse(url), webhooks, lookups, deadline)
        status = post(callback, headers, body, deadline, tls)
    except Refused as refused:
        return Attempt("refused", refused.detail)
    except TimeoutError as exc:
        return Attempt("timeout", _bounded(f"{exc} ({timeout:g} s)"))
    except Exception as exc:  # the receiver is down or speaks no HTTP: tried again later
        return Attempt("error", _bounded(f"{type(exc).__name__}: {exc}"))
    if 200 <= status < 300:
        return Attempt("delivered")
    redirect = " (redirects are not followed)" if 300 <= status < 400 else ""
    return Attempt("rejected", f"the receiver answered {status}{redirect}")


class _NotFinal(Exception):
    """The submission was regraded between its claim and its attempt: its new verdict is delivered later."""


class Deliverer(BackgroundLoop):
    """Delivers due webhooks: at once after a verdict (kick), and retries with backoff, for at most
    GRADER_WEBHOOK_RETRY_S after the verdict; then the delivery is marked failed. This loop claims due
    deliveries, never more than there are free senders, and GRADER_WEBHOOK_CONCURRENCY sender threads
    make the attempts: nothing waits in memory beyond one claim per sender."""

    thread_name = "webhooks"

    def __init__(
        self, webhooks: WebhookSettings, db: Database, registry: Registry, metrics: Metrics | None = None
    ) -> None:
        self.webhooks = webhooks
        self.db = db
        self.registry = registry
        self.metrics = metrics
        self.lookups = Lookups(2 * webhooks.concurrency)
        self._ready: queue.SimpleQueue[tuple[str, tuple[str, str]] | None] = queue.SimpleQueue()
        self._busy = 0
        # Senders busy per submitter and per receiving host: each holds at most `share` of them, so that a
        # slow legal receiver (or one client's many) delays only its own deliveries.
        self.share = max(1, math.ceil(webhooks.concurrency * SHARE))
        self._held: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._senders: list[threading.Thread] = []
        self._tls: ssl.SSLContext | None = None
        super().__init__()

    def start(self) -> None:
        self._tls = ssl.create_default_context()  # certificates checked against the URL's host name
        for number in range(self.webhooks.concurrency):
            sender = threading.Thread(target=self._send_loop, name=f"webhook-sender-{number}", daemon=True)
            sender.start()
            self._senders.append(sender)
        super().start()

    def stop(self) -> None:
        super().stop()
        for _sender in self._senders:
            self._ready.put(None)
        until = time.monotonic() + 2.0  # an attempt in flight ends by its own deadline: not waited for here
        for sender in self._senders:
            sender.join(timeout=max(0.0, until - time.monotonic()))

    def run_once(self) -> bool:
        try:
            return self._claim()
        except Exception:  # the database may be away for a moment: try again
            log.exception("claiming webhooks failed")
            return False

    def _claim(self) -> bool:
        with self._lock:
            free = self.webhooks.concurrency - self._busy
        if free <= 0:
            return False  # a sender that finishes kicks the loop
        taken: Counter[str] = Counter()

        def allowed(submitter: str, host: str) -> bool:
            with self._lock:
                if any(self._held[key] + taken[key] >= self.share for key in (submitter, host)):
                    return False
            taken.update((submitter, host))
            return True

        with self.db.session() as session:
            due = webhook_data.claim_due_webhooks(
                session, claim_s=self.webhooks.timeout_s + CLAIM_MARGIN_S, limit=free, allowed=allowed
            )
        with self._lock:
            self._busy += len(due)
            for _, shares in due:
                self._held.update(shares)
        for claimed in due:
            self._ready.put(claimed)
        return len(due) == free

    def _send_loop(self) -> None:
        while (claimed := self._ready.get()) is not None:
            submission_id, shares = claimed
            try:
                self.deliver(submission_id)
            except Exception:  # the database may be away: the claim runs out and it is tried again
                log.exception("delivering the webhook of %s failed", submission_id)
            finally:
                with self._lock:
                    self._busy -= 1
                    self._held.subtract(shares)
                    for key in shares:
                        if self._held[key] <= 0:
                            del self._held[key]
                self.kick()

    def _build(self, submission_id: str) -> tuple[str, bytes]:
        view = read_submission(self.db, self.registry, submission_id)
        if view is None or view.public.status not in FINAL:
            raise _NotFinal(submission_id)
        public = view.public.model_dump(mode="json", exclude={"webhook"})
        return f"msg_{uuid4().hex}", json.dumps(public, separators=(",", ":")).encode()

    def deliver(self, submission_id: str) -> Attempt | None:
        """One attempt of a claimed delivery, recorded; None when there was nothing to deliver."""
        with self.db.session() as session:
            submission = crud.get_submission(session, submission_id=submission_id)
            if submission is None or submission.callback_url is None or Status(submission.status) not in FINAL:
                return None
            url, attempts, grading = submission.callback_url, submission.webhook_attempts, submission.attempts
            finished_at = submission.finished_at
            try:
                message_id, body = webhook_data.webhook_message(
                    session, submission_id=submission_id, grading=grading, build=lambda: self._build(submission_id)
                )
            except _NotFinal:
                return None
        if self._tls is None:
            self._tls = ssl.create_default_context()
        started = time.monotonic()
        result = attempt(url, message_id, body, self.webhooks, self.lookups, self._tls)
        if self.metrics is not None:
            self.metrics.webhook_seconds.observe(time.monotonic() - started)
            self.metrics.webhook_attempts.labels(result.outcome).inc()
        self._record(submission_id, grading, attempts + 1, result.error, finished_at)
        return result

    def _record(
        self, submission_id: str, grading: int, attempts: int, error: str | None, finished_at: datetime | None
    ) -> None:
        now = datetime.now(UTC)
        finished = finished_at if finished_at is None or finished_at.tzinfo else finished_at.replace(tzinfo=UTC)
        give_up = finished is not None and now - finished > timedelta(seconds=self.webhooks.retry_s)
        if error is None:
            status, next_at = "delivered", None
        elif give_up:
            status, next_at = "failed", None
        else:
            status, next_at = "pending", now + timedelta(seconds=min(300.0, 2.0 ** min(attempts, 9)))
        with self.db.session() as session:
            recorded = webhook_data.record_webhook(
                session,
                submission_id=submission_id,
                grading=grading,
                status=status,
                attempts=attempts,
                error=error,
                next_at=next_at,
            )
        if recorded and status != "pending" and self.metrics is not None:
            self.metrics.webhook_deliveries.labels(status).inc()
        log.info("webhook of %s: %s (attempt %d)%s", submission_id, status, attempts, f": {error}" if error else "")
