"""POST /api/submissions and GET /api/submissions/{id}: HTTP in, the intake's work, HTTP out."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, HTTPException, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.concurrency import run_in_threadpool

from grader.api.deps import (
    AdminCallerDep,
    DatabaseDep,
    DispatcherDep,
    IntakeDep,
    NotifierDep,
    SettingsDep,
    SubmitterDep,
    WaitDep,
    http_error,
)
from grader.api.limits import submission_body_cap
from grader.api.schemas import SubmissionCreate, inline_schema, read_json_body, shown
from grader.grading.verdict import FINAL, Status
from grader.storage import crud
from grader.submissions.intake import check_source
from grader.submissions.public import SubmissionAccepted, SubmissionPublic
from grader.submissions.submitters import Refused, idempotency_key
from grader.submissions.webhooks import check_callback

submissions_router = APIRouter(tags=["submissions"])

RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"model": SubmissionPublic, "description": "the final verdict, within ?wait= seconds"},
    202: {"model": SubmissionAccepted, "description": "queued; poll the Location"},
    404: {"description": "unknown problem"},
    413: {"description": "source over the size limit"},
    403: {"description": "a browser's cross-site request (Origin, Sec-Fetch-Site), or a seed without the admin token"},
    415: {"description": "the body is not sent as application/json"},
    401: {"description": "an API key is required (GRADER_API_KEYS) and none valid was sent"},
    422: {
        "description": "malformed request, empty or non-UTF-8 source, or an Idempotency-Key already"
        " used with a different body"
    },
    429: {
        "description": "queue full, the rate limit of this API key (or, anonymous, of this client address), or too"
        " many requests waiting for a verdict (GRADER_MAX_WAITERS); retry after Retry-After seconds"
    },
}
BODY = {"requestBody": {"required": True, "content": {"application/json": {"schema": inline_schema(SubmissionCreate)}}}}


@submissions_router.post("/api/submissions", status_code=202, openapi_extra=BODY, responses=RESPONSES)
async def create_submission(
    request: Request,
    submitter: SubmitterDep,
    admin: AdminCallerDep,
    settings: SettingsDep,
    intake: IntakeDep,
    notifier: NotifierDep,
    dispatcher: DispatcherDep,
    wait: WaitDep,
    idempotency: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            description="a retry with the same key (per owner: API key, else X-Owner-Token, else address) returns the "
            "submission the first try made",
        ),
    ] = None,
) -> Response:
    """Stores a submission and queues it. With `Idempotency-Key: <key>`, a retry with the same key (and
    API key) gets the submission the first try created, marked `Idempotent-Replayed: true`."""
    try:
        stored_key = idempotency_key(idempotency, submitter, request.client.host if request.client else None)
        # Parsed here rather than by FastAPI: every malformed body gets the same clear, bounded 422.
        payload = await read_json_body(request, SubmissionCreate, submission_body_cap(settings.limits))
        if payload.seed is not None and not admin:
            raise Refused(403, "seed: only the admin may choose a submission's seed")
        check_source(payload.source, settings.limits.max_source_bytes)
        problem = intake.problem(payload.problem_id)
        # Off the event loop: checking a callback URL resolves its host.
        callback = (
            await run_in_threadpool(check_callback, payload.callback_url, settings.webhooks)
            if payload.callback_url is not None
            else None
        )
        # No await from the rate check to the insert: within this process, requests cannot interleave there.
        stored = intake.store(
            problem,
            payload.source,
            submitter,
            stored_key,
            seed=payload.seed,
            callback_url=callback,
            client_address=request.client.host if request.client else None,
            metadata=payload.metadata,
            name=payload.submitter,
        )
        # Woken only when it is final (a stream, by contrast, wants every change).
        watch = notifier.watch(stored.submission_id, final_only=True) if wait > 0 else None
        try:
            if dispatcher.immediate:  # no thread hop for an in-process queue
                intake.dispatch(stored)
            else:
                await run_in_threadpool(intake.dispatch, stored)
            # A client that left needs no verdict: waiting stops, so that its slot comes back now.
            public = (
                await intake.wait(
                    stored.submission_id, wait, watch, gone=request.is_disconnected, pending=not stored.replayed
                )
                if watch is not None
                else None
            )
            if public is not None and admin:
                public = intake.read(stored.submission_id, admin=True)
        finally:
            if watch is not None:
                notifier.unwatch(stored.submission_id, watch)
    except Refused as refused:
        raise http_error(refused) from None
    headers = {"Idempotent-Replayed": "true"} if stored.replayed else {}
    if public is not None and public.status in FINAL:
        return JSONResponse(public.model_dump(mode="json"), status_code=200, headers=headers)
    current = intake.read(stored.submission_id)
    accepted = SubmissionAccepted(id=stored.submission_id, status=current.status if current else Status.QUEUED)
    headers["Location"] = f"/api/submissions/{stored.submission_id}"
    return JSONResponse(accepted.model_dump(mode="json"), status_code=202, headers=headers)


@submissions_router.get("/api/submissions/{submission_id}", response_model=SubmissionPublic)
def get_submission(submission_id: str, admin: AdminCallerDep, intake: IntakeDep) -> SubmissionPublic:
    """The verdict. Hidden tests: how many passed and the first that did not (`hidden`), each one's status
    only where the problem opts in; with the admin token, every test whole and the seed its hidden inputs
    were drawn from."""
    public = intake.read(submission_id, admin=admin)
    if public is None:
        raise HTTPException(404, f"no submission {shown(submission_id)}")
    return public


@submissions_router.get(
    "/api/submissions/{submission_id}/source",
    response_class=PlainTextResponse,
    responses={200: {"content": {"text/plain": {}}}, 404: {"description": "no such submission"}},
)
def get_submission_source(submission_id: str, db: DatabaseDep) -> PlainTextResponse:
    """The submission's source, as its report page shows it (to whoever has its id): what "Edit and submit
    again" loads into the editor."""
    with db.session() as session:
        row = crud.submission_row(session, submission_id=submission_id[:64])
    if row is None:
        raise HTTPException(404, f"no submission {shown(submission_id)}")
    return PlainTextResponse(row.source, headers={"Cache-Control": "no-store"})
