"""POST /api/submissions/batch (many submissions in one request, for an evaluation harness) and
GET /api/batches/{batch_id} (how they stand). The rules are in grader/submissions/batches.py."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from grader.api.deps import (
    AdminCallerDep,
    DatabaseDep,
    IntakeDep,
    RegistryDep,
    SettingsDep,
    SubmitterDep,
    http_error,
)
from grader.api.schemas import SubmissionCreate, inline_schema, read_json_body, shown, validation_message
from grader.grading.verdict import FINAL, Status
from grader.problems.registry import Registry
from grader.storage import listing
from grader.submissions.batches import BatchAccepted, BatchCreate, parse_items, take_batch
from grader.submissions.fast_p import FastP, fast_p
from grader.submissions.metadata import stored_metadata
from grader.submissions.submitters import Refused

batches_router = APIRouter(tags=["submissions"])
MAX_PAGE = 1000  # submissions listed at a time: each summary at most a few KB (its metadata)

_BATCH_SCHEMA = inline_schema(BatchCreate)
_BATCH_SCHEMA["properties"]["items"]["items"] = {
    **inline_schema(SubmissionCreate),
    "description": "a submission's body, and optionally `idempotency_key` (a string)",
}
BODY = {"requestBody": {"required": True, "content": {"application/json": {"schema": _BATCH_SCHEMA}}}}


class _Taking:
    """The batches this process takes in at once: at most `limit` in all and one per client (its API key, else
    its address), so that a client sending its body slowly (cut after GRADER_BODY_TIMEOUT_S) holds one place,
    not all of them. A bound that refuses rather than queues; memory stays within `limit` bodies."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.clients: set[str] = set()

    def enter(self, client: str, limit: int) -> str | None:
        """None when let in, else why not."""
        with self.lock:
            if client in self.clients:
                return "this client's previous batch is still being taken in"
            if len(self.clients) >= limit:
                return "other batches are being taken in"
            self.clients.add(client)
            return None

    def leave(self, client: str) -> None:
        with self.lock:
            self.clients.discard(client)


_TAKING = _Taking()


@batches_router.post(
    "/api/submissions/batch",
    status_code=202,
    response_model=BatchAccepted,
    openapi_extra=BODY,
    responses={
        202: {"description": "taken in: every item's id, or why it was refused"},
        401: {"description": "an API key is required (GRADER_API_KEYS) and none valid was sent"},
        413: {"description": "the body is over GRADER_MAX_BATCH_BYTES"},
        415: {"description": "the body is not sent as application/json"},
        422: {"description": "malformed body, more items than GRADER_MAX_BATCH_ITEMS, or every item refused"},
        429: {"description": "no room for the whole batch (rate limit, queue), or too many batches at once"},
    },
)
async def create_batch(
    request: Request, submitter: SubmitterDep, admin: AdminCallerDep, settings: SettingsDep, intake: IntakeDep
) -> JSONResponse:
    """Up to GRADER_MAX_BATCH_ITEMS submissions at once. Each item is taken in or refused on its own (its
    `index`, `status` and `detail`, as a single POST would answer it); the batch as a whole is refused (429,
    nothing stored) only when the rate limit or the queue has no room for all of its valid items. Every
    item's `metadata` is echoed in its verdict; the submissions carry the answer's `batch_id`."""
    client = request.client.host if request.client else None
    place = f"key:{submitter.key_hash}" if submitter.key_hash is not None else f"address:{client}"
    busy = _TAKING.enter(place, settings.limits.batch_concurrency)
    if busy is not None:
        raise HTTPException(429, f"{busy}; send this one again", headers={"Retry-After": "2"})
    try:
        body = await read_json_body(request, BatchCreate, settings.limits.max_batch_bytes)
        if len(body.items) > settings.limits.max_batch_items:
            raise HTTPException(
                422,
                f"a batch has at most {settings.limits.max_batch_items} items, not {len(body.items)}; send it in parts",
            )

        def take() -> BatchAccepted:
            items = parse_items(
                body,
                SubmissionCreate,
                submitter,
                intake,
                admin=admin,
                message=validation_message,
                client_address=client,
            )
            return take_batch(intake, items, submitter, client)

        try:
            accepted = await run_in_threadpool(take)
        except Refused as refused:
            raise http_error(refused) from None
    finally:
        _TAKING.leave(place)
    status = 202 if accepted.accepted else 422
    return JSONResponse(accepted.model_dump(mode="json"), status_code=status)


def _speed_graded(registry: Registry, problem_id: str) -> bool:
    problem = registry.get(problem_id)
    return problem is not None and problem.speed is not None


class BatchItemSummary(BaseModel):
    id: str
    problem_id: str
    status: Status
    score: float
    metadata: dict[str, Any] | None = None


class BatchStatus(BaseModel):
    batch_id: str
    total: int
    final: int = Field(description="how many have their verdict")
    done: bool = Field(description="whether every submission of the batch has its verdict")
    counts: dict[str, int] = Field(description="how many submissions are in each status")
    fast_p: FastP | None = Field(
        None, description="KernelBench's fast_p over the items of speed-graded problems (none: no such final item)"
    )
    submissions: list[BatchItemSummary] = Field(description="oldest first: a page of at most `limit`")
    next: str | None = Field(None, description="more follow: ask again with `after` set to this id")


class _Tally:
    """A batch's summary built while its rows stream past: the counts, whose rows they are, and one page of
    them (those after `after`, at most `limit`)."""

    def __init__(self, after: str | None, limit: int) -> None:
        self.counts: dict[str, int] = {}
        self.owners: set[str | None] = set()
        self.total = 0
        self.after, self.limit = after, limit
        self.page: list[BatchItemSummary] = []
        self.more = False

    def watch(self, rows: Iterable[Any]) -> Iterator[Any]:
        reached = self.after is None
        for row in rows:
            self.total += 1
            self.counts[row.status] = self.counts.get(row.status, 0) + 1
            self.owners.add(row.api_key_hash)
            if reached and len(self.page) < self.limit:
                self.page.append(_summary(row))
            elif reached:
                self.more = True
            reached = reached or row.id == self.after
            yield row


def _summary(row: Any) -> BatchItemSummary:
    metadata = stored_metadata(row.client_metadata)
    return BatchItemSummary(
        id=row.id, problem_id=row.problem_id, status=Status(row.status), score=row.score, metadata=metadata
    )


@batches_router.get(
    "/api/batches/{batch_id}",
    response_model=BatchStatus,
    responses={404: {"description": "no such batch (or not the caller's)"}},
)
def get_batch(
    batch_id: str,
    submitter: SubmitterDep,
    admin: AdminCallerDep,
    db: DatabaseDep,
    settings: SettingsDep,
    registry: RegistryDep,
    include: Annotated[bool, Query(description="list the batch's submissions (false: the counts only)")] = True,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="at most this many submissions listed")] = MAX_PAGE,
    after: Annotated[
        str | None, Query(max_length=64, description="list the submissions after this one (the last page's `next`)")
    ] = None,
) -> BatchStatus:
    """How a batch stands: counts per status and KernelBench's fast_p over all of it, and a page of its
    submissions, each with its status and score (oldest first; the next page starts after `next`). The caller's
    own batches only (the admin's: any)."""
    owner = None if admin else submitter.key_hash
    tally = _Tally(after, limit if include else 0)
    with db.session() as session:
        rows = listing.batch_rows(session, batch_id=batch_id[:64], limit=settings.limits.max_batch_items)
        fast = fast_p(tally.watch(rows), lambda problem_id: _speed_graded(registry, problem_id))
    if not tally.total or (owner is not None and tally.owners != {owner}):
        raise HTTPException(404, f"no batch {shown(batch_id)}")
    final = sum(count for status, count in tally.counts.items() if Status(status) in FINAL)
    return BatchStatus(
        batch_id=batch_id,
        total=tally.total,
        final=final,
        done=final == tally.total,
        counts=tally.counts,
        fast_p=fast,
        submissions=tally.page,
        next=tally.page[-1].id if tally.more and tally.page else None,
    )
