"""What routes need, as FastAPI dependencies: each of the service's parts on its own (a route names the
parts it uses, never the whole house), the caller's identity, the admin's token, the caps."""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Query, Request

from grader.api.slots import Slots, client_key
from grader.components import Components
from grader.config import Settings
from grader.containers.pool import SandboxPool
from grader.metrics import Metrics
from grader.problems.registry import Registry
from grader.problems.uploads import Uploads
from grader.queue import Dispatcher
from grader.storage.db import Database
from grader.submissions.intake import Intake
from grader.submissions.notifier import Notifier
from grader.submissions.runs import Runs
from grader.submissions.submitters import Refused, Submitter, SubmitterAuth, hash_key

MAX_WAIT_S = 60


# The dependencies that only look something up are `async def`: FastAPI runs a plain `def` dependency
# in its thread pool, a thread hop per request for nothing.
def _components(request: Request) -> Components:
    return request.app.state.components  # type: ignore[no-any-return]


async def get_settings(request: Request) -> Settings:
    return _components(request).settings


async def get_database(request: Request) -> Database:
    return _components(request).db


async def get_registry(request: Request) -> Registry:
    return _components(request).registry


async def get_intake(request: Request) -> Intake:
    return _components(request).intake


async def get_runs(request: Request) -> Runs:
    return _components(request).runs


async def get_notifier(request: Request) -> Notifier:
    return _components(request).notifier


async def get_dispatcher(request: Request) -> Dispatcher:
    return _components(request).dispatcher


async def get_pool(request: Request) -> SandboxPool:
    return _components(request).pool


async def get_metrics(request: Request) -> Metrics:
    return _components(request).metrics


async def get_uploads(request: Request) -> Uploads:
    return _components(request).uploads


async def get_submitters(request: Request) -> SubmitterAuth:
    return _components(request).submitters


async def get_readiness(request: Request) -> Callable[[], tuple[bool, str | None]]:
    """Whether this process can do its part now, and if not, why (the whole house answers that)."""
    return _components(request).ready


async def get_regrade(request: Request) -> Callable[[str], int]:
    """Re-queues a problem's submissions; answers how many."""
    return _components(request).regrade


# A failed comparison's details drawn as HTML (details, an id for the drawing) -> HTML or None: the pages'
# own drawing (grader/web/routes.py, comparison_html), handed to the API by the app (app.state.draw_details).
DrawDetails = Callable[[Any, str], "str | None"]


async def get_details_drawer(request: Request) -> DrawDetails | None:
    return getattr(request.app.state, "draw_details", None)


SettingsDep = Annotated[Settings, Depends(get_settings)]
DatabaseDep = Annotated[Database, Depends(get_database)]
RegistryDep = Annotated[Registry, Depends(get_registry)]
IntakeDep = Annotated[Intake, Depends(get_intake)]
RunsDep = Annotated[Runs, Depends(get_runs)]
NotifierDep = Annotated[Notifier, Depends(get_notifier)]
DispatcherDep = Annotated[Dispatcher, Depends(get_dispatcher)]
PoolDep = Annotated[SandboxPool, Depends(get_pool)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
UploadsDep = Annotated[Uploads, Depends(get_uploads)]
SubmittersDep = Annotated[SubmitterAuth, Depends(get_submitters)]
ReadinessDep = Annotated[Callable[[], tuple[bool, str | None]], Depends(get_readiness)]
RegradeDep = Annotated[Callable[[str], int], Depends(get_regrade)]
DetailsDrawerDep = Annotated[DrawDetails | None, Depends(get_details_drawer)]


def http_error(refused: Refused) -> HTTPException:
    return HTTPException(refused.status, refused.detail, headers=refused.headers or None)


def is_admin(admin_token: str, request: Request) -> bool:
    """Whether the request carries `Authorization: Bearer <GRADER_ADMIN_TOKEN>` (never with no token set)."""
    scheme, _, presented = request.headers.get("authorization", "").partition(" ")
    # Compared as bytes: compare_digest refuses non-ASCII str, and a header may carry anything.
    return (
        bool(admin_token)
        and scheme.lower() == "bearer"
        and hmac.compare_digest(presented.strip().encode("utf-8", "surrogateescape"), admin_token.encode("utf-8"))
    )


async def admin_caller(request: Request, settings: SettingsDep) -> bool:
    return is_admin(settings.admin_token, request)


AdminCallerDep = Annotated[bool, Depends(admin_caller)]
"""Whether the caller is the admin (a route that shows the admin more)."""


async def current_submitter(
    request: Request, settings: SettingsDep, submitters: SubmittersDep, metrics: MetricsDep
) -> Submitter:
    """The submitter of a request; 401 when API keys are required and none valid is presented. The admin
    (its token) is a submitter of its own."""
    if is_admin(settings.admin_token, request):
        return Submitter(hash_key("admin:" + settings.admin_token))
    try:
        return submitters.identify(request.headers)
    except Refused as refused:
        metrics.refused.labels(refused.reason or "unauthorized").inc()
        raise http_error(refused) from None


SubmitterDep = Annotated[Submitter, Depends(current_submitter)]


def admin_only(off: str) -> Callable[..., Awaitable[None]]:
    """A dependency that lets only the admin through: 403 with `off` when the server has no admin token,
    401 without the token."""

    async def require_admin(request: Request, settings: SettingsDep) -> None:
        if not settings.admin_token:
            raise HTTPException(403, off)
        if not is_admin(settings.admin_token, request):
            raise HTTPException(401, "a valid admin token is required", headers={"WWW-Authenticate": "Bearer"})

    return require_admin


async def waiting(
    request: Request,
    metrics: MetricsDep,
    wait: Annotated[float, Query(ge=0, le=MAX_WAIT_S, description="seconds to wait for the verdict")] = 0,
) -> AsyncIterator[float]:
    """?wait= of POST /api/submissions. Waiting holds one of GRADER_MAX_WAITERS slots until the response has
    gone out (or failed); beyond them, 429 before anything is stored."""
    if wait <= 0:
        yield 0.0
        return
    waiters: Slots = request.app.state.waiters
    client = client_key(request)
    why = waiters.acquire(client)
    if why is not None:
        metrics.refused.labels("too_many_waiters").inc()
        raise waiters.refused(why)
    try:
        yield wait
    finally:
        waiters.release(client)


WaitDep = Annotated[float, Depends(waiting)]
