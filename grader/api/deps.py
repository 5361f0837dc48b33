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


# A route names each part it uses as a parameter typed with one of these (`settings: SettingsDep`), never the
# whole house: the part is looked up on the app's components. The lookups are `async def`: FastAPI runs a
# plain `def` dependency in its thread pool, a thread hop per request for nothing.
def _part(name: str) -> Any:
    if name not in Components.__dataclass_fields__ and not hasattr(Components, name):
        raise AttributeError(f"the components have no part {name!r}")

    async def part(request: Request) -> Any:
        return getattr(request.app.state.components, name)

    part.__name__ = part.__qualname__ = f"get_{name}"
    return Depends(part)


# A failed comparison's details drawn as HTML (details, an id for the drawing) -> HTML or None: the pages'
# own drawing (grader/web/routes.py, comparison_html), handed to the API by the app (app.state.draw_details).
DrawDetails = Callable[[Any, str], "str | None"]


async def _details_drawer(request: Request) -> DrawDetails | None:
    return getattr(request.app.state, "draw_details", None)


SettingsDep = Annotated[Settings, _part("settings")]
DatabaseDep = Annotated[Database, _part("db")]
RegistryDep = Annotated[Registry, _part("registry")]
IntakeDep = Annotated[Intake, _part("intake")]
RunsDep = Annotated[Runs, _part("runs")]
NotifierDep = Annotated[Notifier, _part("notifier")]
DispatcherDep = Annotated[Dispatcher, _part("dispatcher")]
PoolDep = Annotated[SandboxPool, _part("pool")]
MetricsDep = Annotated[Metrics, _part("metrics")]
UploadsDep = Annotated[Uploads, _part("uploads")]
SubmittersDep = Annotated[SubmitterAuth, _part("submitters")]
# Whether this process can do its part now, and if not, why (the whole house answers that).
ReadinessDep = Annotated[Callable[[], tuple[bool, str | None]], _part("ready")]
# Re-queues a problem's submissions; answers how many.
RegradeDep = Annotated[Callable[[str], int], _part("regrade")]
DetailsDrawerDep = Annotated[DrawDetails | None, Depends(_details_drawer)]


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
    return is_admin(settings.access.admin_token, request)


AdminCallerDep = Annotated[bool, Depends(admin_caller)]
"""Whether the caller is the admin (a route that shows the admin more)."""


async def current_submitter(
    request: Request, settings: SettingsDep, submitters: SubmittersDep, metrics: MetricsDep
) -> Submitter:
    """The submitter of a request; 401 when API keys are required and none valid is presented. The admin
    (its token) is a submitter of its own."""
    if is_admin(settings.access.admin_token, request):
        return Submitter(hash_key("admin:" + settings.access.admin_token))
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
        if not settings.access.admin_token:
            raise HTTPException(403, off)
        if not is_admin(settings.access.admin_token, request):
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
