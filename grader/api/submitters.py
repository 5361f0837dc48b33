"""Who submits: optional API keys (GRADER_API_KEYS), a per-key rate limit, idempotent retries, and
each key's own list of submissions (GET /api/me/submissions).

Keys are never stored: a submission carries the SHA-256 of its key, which is also what the rate limit
and the list look up. The rate limit is a sliding window over the stored submissions, so every API
process behind a load balancer enforces the same limit with no shared state of its own.
"""

from __future__ import annotations

import hashlib
import hmac
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from pydantic import BaseModel
from sqlalchemy.orm import Session

from grader.config import Settings
from grader.grading.verdict import Status
from grader.storage import crud
from grader.storage.db import utcnow

RATE_WINDOW = timedelta(minutes=1)
MAX_IDEMPOTENCY_KEY = 255

submitters_router = APIRouter(tags=["submissions"])


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()


@dataclass(frozen=True)
class Submitter:
    key_hash: str | None  # None: anonymous, on a server without API keys


class SubmitterAuth:
    def __init__(self, settings: Settings) -> None:
        self._hashes = [hash_key(key) for key in settings.submitter_keys]

    @property
    def enabled(self) -> bool:
        return bool(self._hashes)

    def identify(self, request: Request) -> Submitter:
        """The submitter of a request; 401 when keys are required and none valid is presented."""
        if not self._hashes:
            return Submitter(None)
        presented = request.headers.get("x-api-key")
        if presented is None:
            scheme, _, token = request.headers.get("authorization", "").partition(" ")
            presented = token.strip() if scheme.lower() == "bearer" else None
        if presented:
            candidate = hash_key(presented.strip())
            # Every stored hash is compared, in constant time, whichever matches.
            matched = [stored for stored in self._hashes if hmac.compare_digest(stored, candidate)]
            if matched:
                return Submitter(matched[0])
        raise HTTPException(
            401,
            "an API key is required: send `Authorization: Bearer <key>` or `X-API-Key: <key>`",
            headers={"WWW-Authenticate": "Bearer"},
        )


def check_rate(session: Session, submitter: Submitter, per_minute: int) -> None:
    """429 with Retry-After (seconds until the oldest submission in the window leaves it) over the limit."""
    if not per_minute or submitter.key_hash is None:
        return
    now = utcnow()
    count, oldest = crud.recent_by_key(session, api_key_hash=submitter.key_hash, since=now - RATE_WINDOW)
    if count < per_minute:
        return
    if oldest is not None and oldest.tzinfo is None:  # SQLite returns naive UTC datetimes
        oldest = oldest.replace(tzinfo=UTC)
    wait = (oldest + RATE_WINDOW - now).total_seconds() if oldest is not None else RATE_WINDOW.total_seconds()
    raise HTTPException(
        429,
        f"rate limit: at most {per_minute} submissions per minute for this API key",
        headers={"Retry-After": str(max(1, math.ceil(wait)))},
    )


def idempotency_key(raw: str | None, submitter: Submitter) -> str | None:
    """The stored form of a request's Idempotency-Key: scoped to the API key, hashed to a fixed length."""
    if raw is None:
        return None
    raw = raw.strip()
    if not raw or len(raw) > MAX_IDEMPOTENCY_KEY or not raw.isascii() or not raw.isprintable():
        raise HTTPException(422, f"Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY} printable ASCII characters")
    return hashlib.sha256(f"{submitter.key_hash or 'anonymous'}\n{raw}".encode()).hexdigest()


class SubmissionSummary(BaseModel):
    id: str
    problem_id: str
    problem_version: str
    status: Status
    score: float
    created_at: datetime
    finished_at: datetime | None = None


class SubmissionList(BaseModel):
    submissions: list[SubmissionSummary]
    next: str | None = None  # pass as ?before= for the next (older) page


@submitters_router.get(
    "/api/me/submissions",
    response_model=SubmissionList,
    responses={
        401: {"description": "no valid API key"},
        404: {"description": "this server has no API keys, so no submission has an owner"},
    },
)
def my_submissions(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    before: Annotated[str | None, Query(max_length=64, description="a submission id: list older ones")] = None,
    problem_id: Annotated[str | None, Query(max_length=64)] = None,
) -> SubmissionList:
    """The caller's own submissions, newest first (the API key identifies the caller)."""
    auth: SubmitterAuth = request.app.state.submitter_auth
    if not auth.enabled:
        raise HTTPException(404, "this server has no API keys (GRADER_API_KEYS): submissions have no owner")
    submitter = auth.identify(request)
    assert submitter.key_hash is not None
    with request.app.state.service.db.session() as session:
        cursor = None
        if before is not None:
            anchor = crud.get_submission(session, submission_id=before)
            if anchor is None or anchor.api_key_hash != submitter.key_hash:
                raise HTTPException(422, f"before: no submission {before!r} of yours")
            cursor = anchor.created_at
        rows = crud.list_by_key(
            session, api_key_hash=submitter.key_hash, limit=limit + 1, before=cursor, problem_id=problem_id
        )
        page = [
            SubmissionSummary(
                id=row.id,
                problem_id=row.problem_id,
                problem_version=row.problem_version,
                status=Status(row.status),
                score=row.score,
                created_at=row.created_at,
                finished_at=row.finished_at,
            )
            for row in rows[:limit]
        ]
    return SubmissionList(submissions=page, next=page[-1].id if len(rows) > limit else None)
