"""Taking a batch in (POST /api/submissions/batch): up to GRADER_MAX_BATCH_ITEMS submissions in one request,
for an evaluation harness. Each item is validated and stored on its own, as a single submission would be,
so that a bad item is refused alone (its index, status and reason) and the others go on; the limits that
protect everyone (the submitter's rate, the queue's room) are checked once for the whole batch before
anything is stored, so that a batch is either let in or answered 429 with Retry-After, never cut short by
its own size. Every submission of a batch carries the batch's id, which lists and exports filter on."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy.orm import Session

from grader.submissions.intake import QUEUE_FULL, Intake, Stored, check_source
from grader.submissions.submitters import Refused, Submitter, check_rate, idempotency_key
from grader.submissions.webhooks import check_callback

# Different callback URLs per batch: each is resolved (a DNS lookup) while the batch is taken in.
MAX_CALLBACKS = 16


class BatchCreate(BaseModel):
    """The body: `items`, each a submission's body (problem_id, source, optional metadata, callback_url)
    and, per item, an optional `idempotency_key` (a retried batch finds the submissions its first try made)."""

    model_config = ConfigDict(extra="forbid")

    items: list[Any] = Field(min_length=1, description="each like the body of POST /api/submissions")


class ItemAccepted(BaseModel):
    index: int
    id: str
    status: int = Field(202, description="202: queued; 200: an earlier try with its idempotency_key made it")
    location: str


class ItemRefused(BaseModel):
    index: int
    status: int = Field(description="the status a single submission would have got: 404, 413, 422, 403 ...")
    detail: str


class BatchAccepted(BaseModel):
    batch_id: str
    accepted: int
    refused: int
    items: list[ItemAccepted | ItemRefused]


@dataclass
class Item:
    index: int
    payload: Any  # a SubmissionCreate
    stored_key: str | None
    problem: Any = None
    callback: str | None = None
    refused: ItemRefused | None = None


def _refusal(index: int, refused: Refused) -> ItemRefused:
    return ItemRefused(index=index, status=refused.status, detail=refused.detail[:1000])


def parse_items(
    body: BatchCreate,
    model: type[BaseModel],
    submitter: Submitter,
    intake: Intake,
    *,
    admin: bool,
    message: Callable[[ValidationError], str],
    client_address: str | None = None,
) -> list[Item]:
    """Each item validated as a single submission's body; those that fail carry their refusal (an item's
    idempotency key scoped to its owner, `client_address` for an anonymous one without an owner token).
    Blocking: a callback URL's host is resolved."""
    items: list[Item] = []
    checked: dict[str, str | None] = {}
    for index, raw in enumerate(body.items):
        key = raw.pop("idempotency_key", None) if isinstance(raw, dict) else None
        item = Item(index=index, payload=None, stored_key=None)
        try:
            if key is not None and not isinstance(key, str):
                raise Refused(422, "idempotency_key: a string of 1 to 255 printable ASCII characters")
            item.stored_key = idempotency_key(key, submitter, client_address)
            try:
                item.payload = model.model_validate(raw)
            except ValidationError as exc:
                raise Refused(422, message(exc)) from None
            if item.payload.seed is not None and not admin:
                raise Refused(403, "seed: only the admin may choose a submission's seed")
            check_source(item.payload.source, intake.limits.max_source_bytes)
            item.problem = intake.problem(item.payload.problem_id)
            url = item.payload.callback_url
            if url is not None:  # each address resolved once per batch, and few of them
                if url not in checked and len(checked) >= MAX_CALLBACKS:
                    raise Refused(422, f"callback_url: at most {MAX_CALLBACKS} different ones per batch")
                if url not in checked:
                    checked[url] = check_callback(url, intake.webhooks)
                item.callback = checked[url]
        except Refused as refused:
            item.refused = _refusal(index, refused)
        items.append(item)
    return items


def check_room(intake: Intake, session: Session, submitter: Submitter, client_address: str | None, count: int) -> None:
    """Refused (429, Retry-After) unless the submitter's rate and the queue have room for `count` more;
    (422) when the batch is larger than the rate limit allows in any minute."""
    per_minute = intake.access.rate_limit_per_minute
    if per_minute and count > per_minute:
        raise Refused(
            422, f"a batch of {count} items is over the rate limit of {per_minute} submissions per minute; send fewer"
        )
    check_rate(session, submitter, per_minute, client_address, needed=count)
    room = intake.queueing.max_queue - intake.dispatcher.depth
    if count > room:
        intake.metrics.refused.labels("queue_full").inc()
        raise Refused(
            429,
            f"{QUEUE_FULL}: room for {max(room, 0)} more submissions, the batch has {count}",
            reason="queue_full",
            headers={"Retry-After": "5"},
        )


def take_batch(intake: Intake, items: list[Item], submitter: Submitter, client_address: str | None) -> BatchAccepted:
    """Stores and queues every item not refused yet; synchronous (call it off the event loop)."""
    batch_id = uuid.uuid4().hex
    valid = [item for item in items if item.refused is None]
    address = client_address[:64] if client_address and submitter.key_hash is None else None
    if valid:
        with intake.db.session() as session:
            try:
                check_room(intake, session, submitter, address, len(valid))
            except Refused as refused:
                if refused.status == 429 and refused.reason == "rate_limited":
                    intake.metrics.refused.labels("rate_limited").inc()
                raise
    answers: list[ItemAccepted | ItemRefused] = []
    for item in items:
        if item.refused is not None:
            answers.append(item.refused)
            continue
        try:
            stored: Stored = intake.store(
                item.problem,
                item.payload.source,
                submitter,
                item.stored_key,
                seed=item.payload.seed,
                callback_url=item.callback,
                client_address=client_address,
                metadata=item.payload.metadata,
                name=item.payload.submitter,
                batch_id=batch_id,
                check_limits=False,
            )
            intake.dispatch(stored)
        except Refused as refused:
            answers.append(_refusal(item.index, refused))
            continue
        answers.append(
            ItemAccepted(
                index=item.index,
                id=stored.submission_id,
                status=200 if stored.replayed else 202,
                location=f"/api/submissions/{stored.submission_id}",
            )
        )
    accepted = sum(1 for answer in answers if isinstance(answer, ItemAccepted))
    return BatchAccepted(batch_id=batch_id, accepted=accepted, refused=len(answers) - accepted, items=answers)
