"""The admin's view of many submissions: GET /api/submissions (filtered, paged) and
GET /api/submissions/export (a problem's verdicts as CSV or JSON Lines, streamed). Both need the admin
token. Registered before GET /api/submissions/{id}, so that `export` is not read as an id."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from grader.api.deps import DatabaseDep, admin_only
from grader.grading.verdict import Status
from grader.storage import listing
from grader.storage.db import UtcTime, as_utc
from grader.submissions import exports

listing_router = APIRouter(tags=["admin"])

# Exports at once per API process: each holds a thread while it streams.
MAX_EXPORTS = 2


class AdminSummary(BaseModel):
    id: str
    problem_id: str
    problem_version: str
    status: Status
    score: float
    tests_passed: int
    tests_total: int
    first_failed: str | None = Field(None, description="the name of the first test that did not pass")
    created_at: UtcTime
    finished_at: UtcTime | None = None
    batch_id: str | None = None
    submitter: str | None = Field(None, description="the first 16 hex digits of the SHA-256 of its API key")
    metadata: dict[str, Any] | None = None


class AdminList(BaseModel):
    submissions: list[AdminSummary] = Field(description="oldest first")
    next: str | None = Field(None, description="pass as ?cursor= for the next page; null on the last")


_ADMIN = [Depends(admin_only("the admin API is off: the server has no GRADER_ADMIN_TOKEN"))]


def _filters(
    problem_id: str | None, status: Status | None, since: datetime | None, until: datetime | None, batch_id: str | None
) -> listing.Filters:
    return listing.Filters(
        problem_id=problem_id,
        status=status.value if status is not None else None,
        since=_utc(since, "since"),
        until=_utc(until, "until"),
        batch_id=batch_id,
    )


def _utc(moment: datetime | None, name: str) -> datetime | None:
    """The moment in UTC; 422 for one that has no UTC form (0001-01-01T00:00+14:00 is before year 1 there)."""
    try:
        return as_utc(moment) if moment is not None else None
    except OverflowError:
        raise HTTPException(422, f"{name}: out of range once in UTC") from None


ProblemQuery = Annotated[str | None, Query(max_length=64)]
StatusQuery = Annotated[Status | None, Query()]
SinceQuery = Annotated[datetime | None, Query(description="created at or after (ISO 8601; UTC when no zone)")]
UntilQuery = Annotated[datetime | None, Query(description="created before (ISO 8601; UTC when no zone)")]
BatchQuery = Annotated[str | None, Query(max_length=32)]


@listing_router.get(
    "/api/submissions",
    response_model=AdminList,
    responses={401: {"description": "no or wrong admin token"}, 403: {"description": "no GRADER_ADMIN_TOKEN"}},
    summary="List submissions (admin): filtered by problem, status, time and batch; oldest first, paged",
    dependencies=_ADMIN,
)
def list_submissions(
    db: DatabaseDep,
    problem_id: ProblemQuery = None,
    status: StatusQuery = None,
    since: SinceQuery = None,
    until: UntilQuery = None,
    batch_id: BatchQuery = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    cursor: Annotated[str | None, Query(max_length=64, description="a page's `next`")] = None,
) -> AdminList:
    try:
        after = listing.Cursor.decode(cursor) if cursor is not None else None
    except ValueError:
        raise HTTPException(422, "cursor: not a `next` this API gave") from None
    with db.session() as session:
        summaries, following = listing.page(
            session, _filters(problem_id, status, since, until, batch_id), after=after, limit=limit, convert=_summary
        )
    return AdminList(submissions=summaries, next=following.encode() if following is not None else None)


def _summary(row: Any) -> AdminSummary:
    values = exports.record(row)
    return AdminSummary(**{key: values[key] for key in AdminSummary.model_fields if key in values})


# The exports now streaming: a generator counts from the request until its response is dropped (finished,
# or the client gone), whether or not it ever started, so no path can leak a place.
_EXPORTS: weakref.WeakSet[Iterator[bytes]] = weakref.WeakSet()
_EXPORTS_LOCK = threading.Lock()


@listing_router.get(
    "/api/submissions/export",
    responses={
        200: {"content": {"text/csv": {}, "application/x-ndjson": {}}, "description": "one line per submission"},
        401: {"description": "no or wrong admin token"},
        403: {"description": "no GRADER_ADMIN_TOKEN"},
        429: {"description": "other exports are running; retry after Retry-After seconds"},
    },
    response_class=StreamingResponse,
    summary="Export verdicts (admin) as CSV or JSON Lines, streamed, oldest first",
    dependencies=_ADMIN,
)
def export_submissions(
    db: DatabaseDep,
    format: Annotated[Literal["csv", "jsonl"], Query(description="csv, or jsonl (JSON Lines, each test's status)")],
    problem_id: ProblemQuery = None,
    status: StatusQuery = None,
    since: SinceQuery = None,
    until: UntilQuery = None,
    batch_id: BatchQuery = None,
) -> StreamingResponse:
    records = listing.every_row(db, _filters(problem_id, status, since, until, batch_id), convert=exports.record)
    body = exports.csv_records(records) if format == "csv" else exports.jsonl_records(records)
    with _EXPORTS_LOCK:
        if len(_EXPORTS) >= MAX_EXPORTS:
            raise HTTPException(429, f"at most {MAX_EXPORTS} exports at once", headers={"Retry-After": "10"})
        _EXPORTS.add(body)
    stem = "".join(char for char in problem_id or "" if char.isascii() and (char.isalnum() or char in "-_"))
    media = "text/csv; charset=utf-8" if format == "csv" else "application/x-ndjson"
    return StreamingResponse(
        body,
        media_type=media,
        headers={"Content-Disposition": f'attachment; filename="{stem or "submissions"}.{format}"'},
    )
