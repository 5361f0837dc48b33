"""Webhooks: a submission's final verdict POSTed to its `callback_url`, signed, retried with backoff for a
bounded time, its delivery state kept on the submission.

The signature is `X-Torchjudge-Signature: sha256=<hex HMAC-SHA256 of the body, keyed with
GRADER_WEBHOOK_SECRET>`. No server-side request forgery: a URL is http or https, and every address its
host resolves to must be global (not loopback, private, link-local, shared, reserved, multicast...),
unless the host is listed in GRADER_WEBHOOK_ALLOWED_HOSTS; checked when the submission is made and again
at each delivery, which then connects to the very address it checked (no second lookup to rebind).
Redirects are never followed: a 3xx is a failed attempt.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import ipaddress
import json
import logging
import socket
import ssl
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

from grader.background import BackgroundLoop
from grader.config import Settings
from grader.problems.registry import Registry
from grader.storage import crud, webhook_data
from grader.storage.db import Database
from grader.submissions.public import read_submission
from grader.submissions.submitters import Refused

log = logging.getLogger(__name__)

MAX_URL = 2048
SIGNATURE_HEADER = "X-Torchjudge-Signature"
CLAIM_S = 60.0  # a delivery being attempted is claimed this long: no second process sends it meanwhile
MAX_ERROR = 500


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _internal(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not ip.is_global or ip.is_multicast


def resolve(url: str, settings: Settings) -> tuple[str, str, int, str]:
    """(scheme, host, port, address to connect to) of an acceptable callback URL; Refused (422) otherwise."""
    if len(url) > MAX_URL:
        raise Refused(422, f"callback_url: longer than {MAX_URL} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise Refused(422, "callback_url: not a URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Refused(422, "callback_url: an http:// or https:// URL with a host is required")
    if parts.username or parts.password:
        raise Refused(422, "callback_url: credentials in the URL are not accepted")
    host = parts.hostname
    port = port or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise Refused(422, f"callback_url: its host does not resolve ({exc})") from None
    addresses = [str(info[4][0]) for info in infos]
    allowed = host.lower() in settings.webhook_hosts
    if not allowed and (not addresses or any(_internal(address) for address in addresses)):
        raise Refused(
            422,
            f"callback_url: {host} resolves to an internal address"
            " (list it in GRADER_WEBHOOK_ALLOWED_HOSTS to allow it)",
        )
    return parts.scheme, host, port, addresses[0]


def check_callback(url: str | None, settings: Settings) -> str | None:
    """The callback URL of a new submission, checked; None when there is none."""
    if url is None:
        return None
    if not settings.webhook_secret:
        raise Refused(422, "callback_url: webhooks are off on this server (no GRADER_WEBHOOK_SECRET)")
    resolve(url, settings)
    return url


class _PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to an address already checked, with the certificate checked against the host's name."""

    def __init__(self, host: str, address: str, port: int, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._address = address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]


def post(url: str, body: bytes, settings: Settings) -> int:
    """POSTs the body once; the response's status. Raises Refused for a URL no longer acceptable and
    OSError (or http.client's errors) for a receiver that does not answer."""
    scheme, host, port, address = resolve(url, settings)
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    timeout = settings.webhook_timeout_s
    connection: http.client.HTTPConnection = (
        _PinnedHTTPS(host, address, port, timeout)
        if scheme == "https"
        else http.client.HTTPConnection(address, port, timeout=timeout)
    )
    try:
        connection.request(
            "POST",
            path,
            body=body,
            headers={
                "Host": parts.netloc.rsplit("@", 1)[-1],
                "Content-Type": "application/json",
                "User-Agent": "torchjudge-webhook",
                SIGNATURE_HEADER: sign(settings.webhook_secret, body),
            },
        )
        response = connection.getresponse()
        response.read(64 * 1024)
        return response.status
    finally:
        connection.close()


class Deliverer(BackgroundLoop):
    """Delivers due webhooks: at once after a verdict (kick), and retries with backoff from a background
    thread, for at most GRADER_WEBHOOK_RETRY_S after the verdict; then the delivery is marked failed."""

    thread_name = "webhooks"

    def __init__(self, settings: Settings, db: Database, registry: Registry) -> None:
        self.settings = settings
        self.db = db
        self.registry = registry
        super().__init__()

    def run_once(self) -> bool:
        try:
            self.deliver_due()
        except Exception:  # the database may be away for a moment: try again
            log.exception("delivering webhooks failed")
        return False

    def deliver_due(self) -> int:
        """Attempts every delivery that is due; how many were attempted."""
        with self.db.session() as session:
            due = webhook_data.claim_due_webhooks(session, claim_s=CLAIM_S)
        for submission_id in due:
            self.deliver(submission_id)
        return len(due)

    def deliver(self, submission_id: str) -> None:
        view = read_submission(self.db, self.registry, submission_id)
        with self.db.session() as session:
            submission = crud.get_submission(session, submission_id=submission_id)
            if view is None or submission is None or submission.callback_url is None:
                return
            url, attempts, finished_at = submission.callback_url, submission.webhook_attempts, submission.finished_at
        body = json.dumps(view.public.model_dump(mode="json"), separators=(",", ":")).encode()
        error = None
        try:
            status = post(url, body, self.settings)
            if not 200 <= status < 300:
                error = f"the receiver answered {status}"
        except Refused as refused:
            error = refused.detail
        except Exception as exc:  # the receiver is down, slow or odd: tried again later
            error = f"{type(exc).__name__}: {exc}"
        self._record(submission_id, attempts + 1, error, finished_at)

    def _record(self, submission_id: str, attempts: int, error: str | None, finished_at: datetime | None) -> None:
        now = datetime.now(UTC)
        finished = finished_at if finished_at is None or finished_at.tzinfo else finished_at.replace(tzinfo=UTC)
        give_up = finished is not None and now - finished > timedelta(seconds=self.settings.webhook_retry_s)
        if error is None:
            status, next_at = "delivered", None
        elif give_up:
            status, next_at = "failed", None
        else:
            status, next_at = "pending", now + timedelta(seconds=min(300.0, 2.0 ** min(attempts, 9)))
        with self.db.session() as session:
            webhook_data.record_webhook(
                session,
                submission_id=submission_id,
                status=status,
                attempts=attempts,
                error=error[:MAX_ERROR] if error else None,
                next_at=next_at,
            )
        log.info("webhook of %s: %s (attempt %d)%s", submission_id, status, attempts, f": {error}" if error else "")
