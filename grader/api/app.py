"""The HTTP API (JSON under /api, OpenAPI at /docs) around one Service."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, HTTPException, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from grader.api.admin import admin_router
from grader.api.events import events_router
from grader.api.limits import BodyLimitMiddleware, route_caps, submission_body_cap
from grader.api.schemas import (
    ProblemPublic,
    ProblemSummary,
    SubmissionAccepted,
    SubmissionCreate,
    SubmissionPublic,
    problem_public,
    problem_summary,
    public_submission,
)
from grader.api.slots import Slots, stream_slots, waiter_slots
from grader.api.submitters import SubmitterAuth, check_rate, idempotency_key, submitters_router
from grader.config import Settings, get_settings
from grader.grading.verdict import FINAL, Status
from grader.queue import QueueFull
from grader.service import Service
from grader.storage import crud
from grader.web.routes import web_router

log = logging.getLogger(__name__)

MAX_WAIT_S = 60
WAIT_POLL_S = 0.5


def _validation_message(exc: RequestValidationError | ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error.get("loc", ()) if part != "body") or "body"
        problems.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(problems) or "invalid request"


async def waiting(
    request: Request,
    wait: Annotated[float, Query(ge=0, le=MAX_WAIT_S, description="seconds to wait for the verdict")] = 0,
) -> AsyncIterator[float]:
    """?wait= of POST /api/submissions. Waiting holds one of GRADER_MAX_WAITERS slots until the response has
    gone out (or failed); beyond them, 429 before anything is stored."""
    if wait <= 0:
        yield 0.0
        return
    waiters: Slots = request.app.state.waiters
    if not waiters.try_acquire():
        request.app.state.service.metrics.refused.labels("too_many_waiters").inc()
        raise waiters.refused()
    try:
        yield wait
    finally:
        waiters.release()


def create_app(settings: Settings | None = None, service: Service | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own = service is None
        app.state.service = service or Service(settings)
        if own:
            app.state.service.start()
        try:
            yield
        finally:
            if own:
                app.state.service.stop()

    app = FastAPI(
        title="torchjudge",
        version="0.1.0",
        description="A judge for PyTorch coding challenges: submissions run in hardened Docker sandboxes.",
        lifespan=lifespan,
    )
    body_limit = submission_body_cap(settings)
    # Bodies are counted while they are read, chunked or not; problem uploads get a larger cap.
    app.add_middleware(BodyLimitMiddleware, cap_for=route_caps(settings))

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": _validation_message(exc)}, status_code=422)

    def svc(request: Request) -> Service:
        return request.app.state.service  # type: ignore[no-any-return]

    app.include_router(events_router)
    app.include_router(web_router)
    app.include_router(admin_router)
    app.include_router(submitters_router)
    app.state.submitter_auth = SubmitterAuth(settings)
    app.state.waiters = waiter_slots(settings.max_waiters)
    app.state.streams = stream_slots(settings.max_streams)

    @app.get("/metrics", include_in_schema=False)
    async def metrics(request: Request) -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST

        # The collectors read the database: off the event loop.
        body = await run_in_threadpool(svc(request).metrics.render)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    @app.get("/healthz", tags=["service"])
    def healthz(request: Request) -> JSONResponse:
        service = svc(request)
        pool = service.pool.status()
        # local: ready once the sandbox pool is warm; celery: once the database and the broker answer.
        ready, not_ready_because = service.ready()
        try:
            depth: int | None = service.queue.depth
        except Exception:  # celery mode counts in the database, which may be what is down
            depth = None
        body: dict[str, Any] = {
            "status": "ok",
            "ready": ready,
            "not_ready_because": not_ready_because,
            "queue": settings.queue,
            "sandbox": {**pool, "image": service.pool.image_id, "last_error": service.pool.last_error},
            "queue_depth": depth,
            "problems": len(service.registry.all()),
            "problem_errors": [str(error) for error in service.registry.errors],
        }
        return JSONResponse(body, status_code=200 if ready else 503)

    @app.get("/api/problems", response_model=list[ProblemSummary], tags=["problems"])
    def list_problems(request: Request) -> list[ProblemSummary]:
        return [problem_summary(p) for p in svc(request).registry.all()]

    @app.get("/api/problems/{problem_id}", response_model=ProblemPublic, tags=["problems"])
    def get_problem(problem_id: str, request: Request) -> ProblemPublic:
        problem = svc(request).registry.get(problem_id)
        if problem is None:
            raise HTTPException(404, f"no problem {problem_id!r}")
        return problem_public(problem)

    def load_public(service: Service, submission_id: str) -> SubmissionPublic | None:
        with service.db.session() as session:
            submission = crud.get_submission(session, submission_id=submission_id)
            if submission is None:
                return None
            problem = service.registry.get(submission.problem_id)
            return public_submission(submission, crud.submission_tests(submission), problem)

    @app.post(
        "/api/submissions",
        tags=["submissions"],
        status_code=202,
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": SubmissionCreate.model_json_schema()}},
            }
        },
        responses={
            200: {"model": SubmissionPublic, "description": "the final verdict, within ?wait= seconds"},
            202: {"model": SubmissionAccepted, "description": "queued; poll the Location"},
            404: {"description": "unknown problem"},
            413: {"description": "source over the size limit"},
            401: {"description": "an API key is required (GRADER_API_KEYS) and none valid was sent"},
            422: {
                "description": "malformed request, empty or non-UTF-8 source, or an Idempotency-Key already"
                " used with a different body"
            },
            429: {
                "description": "queue full, this API key's rate limit, or too many requests waiting for a verdict"
                " (GRADER_MAX_WAITERS); retry after Retry-After seconds"
            },
        },
    )
    async def create_submission(
        request: Request,
        wait: Annotated[float, Depends(waiting)],
        idempotency: Annotated[
            str | None,
            Header(
                alias="Idempotency-Key",
                description="a retry with the same key (per API key) returns the submission the first try made",
            ),
        ] = None,
    ) -> Response:
        """Stores a submission and queues it. With `Idempotency-Key: <key>`, a retry with the same key (and
        API key) gets the submission the first try created, marked `Idempotent-Replayed: true`."""
        service = svc(request)
        try:
            submitter = request.app.state.submitter_auth.identify(request)
        except HTTPException:
            service.metrics.refused.labels("unauthorized").inc()
            raise
        stored_idempotency_key = idempotency_key(idempotency, submitter)
        # The body is parsed here rather than by FastAPI so that every malformed body, non-UTF-8
        # bytes included, gets the same clear 422.
        raw = await request.body()
        if len(raw) > body_limit:
            raise HTTPException(413, f"request body over {body_limit} bytes")
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            raise HTTPException(422, "the request body is not valid UTF-8") from None
        try:
            payload = SubmissionCreate.model_validate_json(raw)
        except ValidationError as exc:
            raise HTTPException(422, _validation_message(exc)) from None
        try:
            encoded = payload.source.encode("utf-8")
        except UnicodeEncodeError:
            raise HTTPException(422, "source is not valid UTF-8 text") from None
        if len(encoded) > settings.max_source_bytes:
            raise HTTPException(413, f"source is {len(encoded)} bytes; the limit is {settings.max_source_bytes}")
        if not payload.source.strip():
            raise HTTPException(422, "source is empty")
        problem = service.registry.get(payload.problem_id)
        if problem is None:
            raise HTTPException(404, f"no problem {payload.problem_id!r}")
        # No await from the rate check to the insert: within this process, requests cannot interleave there.
        with service.db.session() as session:
            replayed = (
                crud.get_submission_by_idempotency_key(session, idempotency_key=stored_idempotency_key)
                if stored_idempotency_key is not None
                else None
            )
            if replayed is None:
                try:
                    check_rate(session, submitter, settings.rate_limit_per_minute)
                except HTTPException:
                    service.metrics.refused.labels("rate_limited").inc()
                    raise
                if service.queue.depth >= settings.max_queue:
                    service.metrics.refused.labels("queue_full").inc()
                    raise HTTPException(429, "the grading queue is full", headers={"Retry-After": "5"})
                if stored_idempotency_key is None:
                    submission = crud.create_submission(
                        session,
                        problem_id=problem.id,
                        problem_version=problem.version,
                        source=payload.source,
                        api_key_hash=submitter.key_hash,
                    )
                else:
                    try:
                        submission, created = crud.create_submission_once(
                            session,
                            problem_id=problem.id,
                            problem_version=problem.version,
                            source=payload.source,
                            api_key_hash=submitter.key_hash,
                            idempotency_key=stored_idempotency_key,
                        )
                    except LookupError:
                        raise HTTPException(409, "a request with this Idempotency-Key was refused; retry") from None
                    if not created:
                        replayed = submission
            else:
                submission = replayed
            if replayed is not None and (replayed.problem_id, replayed.source) != (problem.id, payload.source):
                raise HTTPException(422, "this Idempotency-Key was already used with a different request body")
            submission_id = submission.id
        extra_headers = {"Idempotent-Replayed": "true"} if replayed is not None else {}
        event = service.notifier.watch(submission_id) if wait > 0 else None
        try:
            if replayed is None:
                try:
                    # Off the event loop: with Celery this writes the dispatch lease and talks to the broker.
                    await run_in_threadpool(service.queue.submit, submission_id)
                except QueueFull:
                    with service.db.session() as session:
                        crud.delete_submission(session, submission_id=submission_id)
                    service.metrics.refused.labels("queue_full").inc()
                    raise HTTPException(429, "the grading queue is full", headers={"Retry-After": "5"}) from None
                service.metrics.submissions_created.inc()
            location = f"/api/submissions/{submission_id}"
            if event is not None:
                deadline = time.monotonic() + wait
                while True:
                    public = load_public(service, submission_id)
                    if public is not None and public.status in FINAL:
                        return JSONResponse(public.model_dump(mode="json"), status_code=200, headers=extra_headers)
                    remaining = deadline - time.monotonic()
                    # A client that left needs no verdict: stop waiting, so that its slot comes back now.
                    if remaining <= 0 or await request.is_disconnected():
                        break
                    try:
                        # Woken by the Notifier (relayed from the workers under Celery); the timeout is the
                        # database poll that covers a missed wake-up.
                        await asyncio.wait_for(event.wait(), timeout=min(remaining, WAIT_POLL_S))
                    except TimeoutError:
                        pass
                    event.clear()
            accepted = SubmissionAccepted(id=submission_id, status=Status.QUEUED)
            public = load_public(service, submission_id)
            if public is not None:
                accepted.status = public.status
            return JSONResponse(
                accepted.model_dump(mode="json"), status_code=202, headers={"Location": location, **extra_headers}
            )
        finally:
            if event is not None:
                service.notifier.unwatch(submission_id, event)

    @app.get("/api/submissions/{submission_id}", response_model=SubmissionPublic, tags=["submissions"])
    def get_submission(submission_id: str, request: Request) -> SubmissionPublic:
        public = load_public(svc(request), submission_id)
        if public is None:
            raise HTTPException(404, f"no submission {submission_id!r}")
        return public

    return app
