"""POST /api/runs: try a submission on the visible tests, or on one's own test bodies; not a submission."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from grader.api.deps import ComponentsDep, http_error, identify
from grader.api.limits import submission_body_cap
from grader.api.schemas import validation_message
from grader.submissions.intake import check_source
from grader.submissions.runs import RunPublic, RunRequest
from grader.submissions.submitters import Refused

runs_router = APIRouter(tags=["runs"])


@runs_router.post(
    "/api/runs",
    response_model=RunPublic,
    openapi_extra={
        "requestBody": {"required": True, "content": {"application/json": {"schema": RunRequest.model_json_schema()}}}
    },
    responses={
        404: {"description": "unknown problem"},
        413: {"description": "source over the size limit"},
        422: {"description": "malformed request, or custom tests on a problem that runs its visible tests only"},
        429: {"description": "rate limit; retry after Retry-After seconds"},
        503: {"description": "no sandbox to run in now (or, under Celery, the broker does not answer)"},
        504: {"description": "under Celery: no worker ran it within GRADER_RUN_TIMEOUT_S"},
    },
)
async def create_run(request: Request, components: ComponentsDep) -> RunPublic:
    """Runs the submission on the problem's visible tests (or on `tests`, test bodies of one's own) and
    answers with every test's expected (the reference's) against got. Nothing is stored."""
    submitter = identify(components, request)
    raw = await request.body()
    try:
        payload = RunRequest.model_validate_json(raw) if len(raw) <= submission_body_cap(components.settings) else None
    except ValidationError as exc:
        raise HTTPException(422, validation_message(exc)) from None
    if payload is None:
        raise HTTPException(413, "request body too large")
    try:
        check_source(payload.source, components.settings.max_source_bytes)
        problem = components.intake.problem(payload.problem_id)
        who = submitter.key_hash or (request.client.host if request.client else "anonymous")
        return await run_in_threadpool(components.runs.run, problem, payload, who)
    except Refused as refused:
        raise http_error(refused) from None
