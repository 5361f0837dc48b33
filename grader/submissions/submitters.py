"""Who submits: optional API keys (GRADER_API_KEYS), a per-key rate limit, idempotent retries.

Keys are never stored: a submission carries the SHA-256 of its key, which is also what the rate limit
and the list look up. The rate limit is a sliding window over the stored submissions, so every API
process behind a load balancer enforces the same limit with no shared state of its own.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, timedelta

from sqlalchemy.orm import Session

from grader.config_groups import AccessSettings
from grader.storage import crud
from grader.storage.db import utcnow

RATE_WINDOW = timedelta(minutes=1)
MAX_IDEMPOTENCY_KEY = 255


class Refused(Exception):
    """A request the submission rules refuse: its HTTP status, a message, headers (Retry-After), and the
    reason counted in the metrics."""

    def __init__(self, status: int, detail: str, *, reason: str = "", headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.reason = reason
        self.headers = headers or {}


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()


OWNER_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,128}")


@dataclass(frozen=True)
class Submitter:
    key_hash: str | None  # None: anonymous, on a server without API keys
    # Without API keys: a hash of the X-Owner-Token the client sent (a browser makes one and keeps it),
    # which lists its own history; None when it sent none, and always with keys.
    owner_hash: str | None = None


def owner_hash(headers: Mapping[str, str]) -> str | None:
    """The hash of a request's X-Owner-Token; None when there is none; Refused (422) for a malformed one."""
    token = headers.get("x-owner-token")
    if token is None:
        return None
    token = token.strip()
    if not OWNER_TOKEN.fullmatch(token):
        raise Refused(422, "X-Owner-Token must be 16 to 128 letters, digits, '-' or '_'", reason="bad_request")
    return hashlib.sha256(f"owner:{token}".encode()).hexdigest()


class SubmitterAuth:
    def __init__(self, access: AccessSettings) -> None:
        self._hashes = [hash_key(key) for key in access.submitter_keys]

    @property
    def enabled(self) -> bool:
        return bool(self._hashes)

    def identify(self, headers: Mapping[str, str]) -> Submitter:
        """The submitter of a request (its headers); Refused (401) when keys are required and none valid is
        presented."""
        if not self._hashes:
            return Submitter(None, owner_hash(headers))
        presented = headers.get("x-api-key")
        if presented is None:
            scheme, _, token = headers.get("authorization", "").partition(" ")
            presented = token.strip() if scheme.lower() == "bearer" else None
        if presented:
            candidate = hash_key(presented.strip())
            # Every stored hash is compared, in constant time, whichever matches.
            matched = [stored for stored in self._hashes if hmac.compare_digest(stored, candidate)]
            if matched:
                return Submitter(matched[0])
        raise Refused(
            401,
            "an API key is required: send `Authorization: Bearer <key>` or `X-API-Key: <key>`",
            reason="unauthorized",
            headers={"WWW-Authenticate": "Bearer"},
        )


def check_rate(
    session: Session, submitter: Submitter, per_minute: int, client_address: str | None = None, needed: int = 1
) -> None:
    """Refused (429) with Retry-After (seconds until the oldest submission in the window leaves it) over the
    limit: per API key, or for an anonymous submitter per client address (the proxy's forwarded one). `needed`:
    how many submissions are to come in at once (a batch), all of which the window must have room for."""
    if not per_minute or (submitter.key_hash is None and not client_address):
        return
    now = utcnow()
    if submitter.key_hash is not None:
        count, oldest = crud.recent_by_key(session, api_key_hash=submitter.key_hash, since=now - RATE_WINDOW)
        whose = "this API key"
    else:
        count, oldest = crud.recent_by_address(session, client_address=client_address or "", since=now - RATE_WINDOW)
        whose = "this client address (send an API key for a limit of its own)"
    if count + needed <= per_minute:
        return
    if oldest is not None and oldest.tzinfo is None:  # SQLite returns naive UTC datetimes
        oldest = oldest.replace(tzinfo=UTC)
    wait = (oldest + RATE_WINDOW - now).total_seconds() if oldest is not None else RATE_WINDOW.total_seconds()
    raise Refused(
        429,
        f"rate limit: at most {per_minute} submissions per minute for {whose}",
        reason="rate_limited",
        headers={"Retry-After": str(max(1, math.ceil(wait)))},
    )


def idempotency_key(raw: str | None, submitter: Submitter, client_address: str | None) -> str | None:
    """The stored form of a request's Idempotency-Key, hashed to a fixed length and scoped to its owner: the API
    key; without one, the caller's X-Owner-Token, else its address. Anonymous callers do not share one key
    space: another's key neither replays its submission nor tells that it was used."""
    if raw is None:
        return None
    raw = raw.strip()
    if not raw or len(raw) > MAX_IDEMPOTENCY_KEY or not raw.isascii() or not raw.isprintable():
        raise Refused(422, f"Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY} printable ASCII characters")
    if submitter.key_hash is not None:
        scope = "key:" + submitter.key_hash
    elif submitter.owner_hash is not None:
        scope = "owner:" + submitter.owner_hash
    else:
        scope = "address:" + (client_address or "")
    return hashlib.sha256(f"{scope}\n{raw}".encode()).hexdigest()
