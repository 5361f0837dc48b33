"""POST /api/runs: try a submission on the visible tests, or on values for the problem's custom test; not
a submission. The run is awaited (submissions/runs.py: threads of its own, a deadline), never run in the
server's shared thread pool."""

from __future__ import annotations

from fastapi import APIRouter, Request

from grader.api.deps import DetailsDrawerDep, IntakeDep, RunsDep, SettingsDep, SubmitterDep, http_error
from grader.api.limits import submission_body_cap
from grader.api.schemas import inline_schema, read_json_body
from grader.submissions.intake import check_source
from grader.submissions.runs import RunPublic, RunRequest
from grader.submissions.submitters import Refused

runs_router = APIRouter(tags=["runs"])


@runs_router.post(
    "/api/runs",
    response_model=RunPublic,
    openapi_extra={
        "requestBody": {"required": True, "content": {"application/json": {"schema": inline_schema(RunRequest)}}}
    },
    responses={
        404: {"description": "unknown problem"},
        403: {"description": "a cross-site request from a browser (Origin or Sec-Fetch-Site)"},
        413: {"description": "source over the size limit"},
        415: {"description": "the body is not sent as application/json"},
        422: {
            "description": "malformed request; `inputs` that do not fit the custom test's declaration (the message "
            "names the argument and the position); `inputs` for a problem without a custom test; `tests` (gone)"
        },
        429: {"description": "this client's runs: too many per minute, or too many at once; retry after Retry-After"},
        503: {
            "description": "every place for runs is taken, no sandbox within GRADER_RUN_WAIT_S, or the run went past "
            "GRADER_RUN_TIMEOUT_S (under Celery: the broker does not answer); retry after Retry-After"
        },
        504: {"description": "under Celery: no worker ran it within GRADER_RUN_TIMEOUT_S"},
    },
)
async def create_run(
    request: Request,
    submitter: SubmitterDep,
    settings: SettingsDep,
    intake: IntakeDep,
    runs: RunsDep,
    draw: DetailsDrawerDep,
) -> RunPublic:
    """Runs the submission on the problem's visible tests (or, with `inputs`, on the problem's custom test
    with those values) and answers with every test's expected (the reference's) against got. Nothing is
    stored."""
    payload = await read_json_body(request, RunRequest, submission_body_cap(settings.limits))
    try:
        check_source(payload.source, settings.limits.max_source_bytes)
        problem = intake.problem(payload.problem_id)
        who = submitter.key_hash or (request.client.host if request.client else "anonymous")
        run = await runs.answer(problem, payload, who)
    except Refused as refused:
        raise http_error(refused) from None
    # The details as the report page draws them, by the same template: the page shows them as they come.
    if draw is not None:
        for position, test in enumerate(run.tests):
            test.details_html = draw(test.details, f"run-{position}")
    return run
