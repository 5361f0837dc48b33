"""The admin API: add, replace and delete problems as YAML, and regrade a problem's submissions.

Every route needs `Authorization: Bearer <GRADER_ADMIN_TOKEN>`; with no token configured, uploads
are off (403). An upload runs the same check as `grader problems check` (in real sandboxes, off the
event loop) and is refused with 422 and the same messages when it fails. Uploads are stored in the
database and survive restarts; a problem defined by a file in the problems directory cannot be
replaced or deleted here (409): the file wins.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from grader.api.deps import RegistryDep, RegradeDep, UploadsDep, admin_only
from grader.api.edge import YAML_TYPES
from grader.api.schemas import shown
from grader.problems.check import CheckReport, SandboxUnavailable
from grader.problems.registry import MAX_PROBLEM_BYTES
from grader.problems.uploads import CheckTimeout, Uploaded, UploadRefused, Uploads

log = logging.getLogger(__name__)

# An upload's check runs sandboxes, for minutes: in threads of its own, never in the server's shared pool
# (which every plain `def` route needs). Uploads are checked one at a time anyway (Uploads.lock); an upload
# waiting its turn holds no thread.
_CHECKS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="upload-check")


class ProblemStored(BaseModel):
    id: str
    title: str
    version: str
    created: bool
    checked: bool = Field(
        True, description="false when the file is the version already served: not checked again, nothing stored"
    )
    check: CheckReport


class Regrade(BaseModel):
    problem_id: str
    version: str
    requeued: int


# Every route: 403 when uploads are off, else 401 without the admin token.
admin_router = APIRouter(
    tags=["admin"],
    dependencies=[Depends(admin_only("problem uploads are turned off: the server has no GRADER_ADMIN_TOKEN"))],
)


async def _yaml_body(request: Request) -> str:
    # EdgeMiddleware refuses other types before the route runs; checked again so that the route stands alone.
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type not in YAML_TYPES:
        sent = shown(media_type) if media_type else "no content type"
        raise HTTPException(415, f"send the problem file as application/yaml, not {sent}")
    raw = await request.body()
    if len(raw) > MAX_PROBLEM_BYTES:
        raise HTTPException(413, f"a problem file is at most {MAX_PROBLEM_BYTES} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HTTPException(422, f"the problem file is not UTF-8 text (byte {exc.start})") from None


def _refused(status: int, errors: list[str], report: CheckReport | None = None) -> JSONResponse:
    body: dict[str, Any] = {"detail": "\n".join(errors), "errors": errors}
    if report is not None:
        body["check"] = report.model_dump(mode="json")
    return JSONResponse(body, status_code=status)


async def _store(uploads: Uploads, text: str, source: str, path_id: str | None) -> Response:
    """Validates, checks in sandboxes and stores one upload: POST when path_id is None, else PUT."""
    try:
        # Off the event loop: a large file takes a while to parse, and the check runs sandboxes.
        put = _CHECKS.submit(uploads.put, text, source, path_id)
        uploaded: Uploaded = await asyncio.wrap_future(put)
    except UploadRefused as refused:
        return _refused(refused.status, refused.errors, refused.report)
    except SandboxUnavailable as exc:
        raise HTTPException(503, f"the problem cannot be checked now: {exc}", headers={"Retry-After": "30"}) from None
    except CheckTimeout as exc:
        raise HTTPException(504, f"the problem was not stored: {exc}; send it again") from None
    stored = ProblemStored(
        id=uploaded.problem.id,
        title=uploaded.problem.problem.title,
        version=uploaded.problem.version,
        created=uploaded.created,
        checked=uploaded.checked,
        check=uploaded.report,
    )
    return JSONResponse(
        stored.model_dump(mode="json"),
        status_code=201 if stored.created else 200,
        headers={"Location": f"/api/problems/{stored.id}"},
    )


_YAML_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "the problem file (docs/problems.md); `grader problems schema` prints its JSON Schema",
        "content": {media: {"schema": {"type": "string"}} for media in sorted(YAML_TYPES)},
    }
}
_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"description": "no or wrong admin token"},
    403: {"description": "uploads are off: no GRADER_ADMIN_TOKEN is configured"},
    409: {"description": "the id is taken (POST), or defined by a file in the problems directory"},
    413: {"description": "the file is too large"},
    415: {"description": "not sent as application/yaml (or application/x-yaml, text/yaml)"},
    422: {"description": "the file does not validate or fails its check: `errors` lists file:line: field: message"},
    503: {"description": "no sandbox to check the problem in (or, under Celery, the broker does not answer)"},
    504: {"description": "under Celery: no worker finished the check in GRADER_UPLOAD_CHECK_TIMEOUT_S; nothing stored"},
}


@admin_router.post(
    "/api/problems",
    status_code=201,
    response_model=ProblemStored,
    openapi_extra=_YAML_BODY,
    responses=_ERRORS,
    summary="Add a problem (YAML), checked in sandboxes first",
)
async def add_problem(request: Request, uploads: UploadsDep) -> Response:
    text = await _yaml_body(request)
    return await _store(uploads, text, "upload.yaml", None)


@admin_router.put(
    "/api/problems/{problem_id}",
    response_model=ProblemStored,
    openapi_extra=_YAML_BODY,
    responses={201: {"description": "created"}, **_ERRORS},
    summary="Add or replace an uploaded problem (YAML), checked in sandboxes first",
)
async def replace_problem(problem_id: str, request: Request, uploads: UploadsDep) -> Response:
    text = await _yaml_body(request)
    return await _store(uploads, text, f"{problem_id[:64]}.yaml", problem_id)


@admin_router.delete(
    "/api/problems/{problem_id}",
    status_code=204,
    responses={404: {"description": "no uploaded problem with this id"}, **_ERRORS},
    summary="Delete an uploaded problem; its submissions and verdicts stay",
)
async def delete_problem(problem_id: str, uploads: UploadsDep, registry: RegistryDep) -> Response:
    deleted = await run_in_threadpool(uploads.delete, problem_id)
    if not deleted:
        if registry.file_problem(problem_id) is not None:
            raise HTTPException(409, f"problem {shown(problem_id)} is defined by a file; remove the file instead")
        raise HTTPException(404, f"no uploaded problem {shown(problem_id)}")
    return Response(status_code=204)


@admin_router.post(
    "/api/problems/{problem_id}/regrade",
    status_code=202,
    response_model=Regrade,
    responses={404: {"description": "unknown problem"}, **_ERRORS},
    summary="Re-queue every submission of a problem against its current version",
)
async def regrade_problem(problem_id: str, registry: RegistryDep, regrade: RegradeDep) -> Regrade:
    problem = registry.get(problem_id)
    if problem is None:
        raise HTTPException(404, f"no problem {shown(problem_id)}")
    try:
        count = await run_in_threadpool(regrade, problem_id)
    except KeyError:
        raise HTTPException(404, f"no problem {shown(problem_id)}") from None
    return Regrade(problem_id=problem_id, version=problem.version, requeued=count)
