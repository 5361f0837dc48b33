"""What routes need, as FastAPI dependencies: the service's parts, the caller's identity, the caps."""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, HTTPException, Query, Request

from grader.api.slots import Slots
from grader.components import Components
from grader.problems.registry import Registry
from grader.submissions.intake import Intake
from grader.submissions.submitters import Refused, Submitter, hash_key

MAX_WAIT_S = 60


# The dependencies that only look something up are `async def`: FastAPI runs a plain `def` dependency
# in its thread pool, a thread hop per request for nothing.
async def get_components(request: Request) -> Components:
    return request.app.state.components  # type: ignore[no-any-return]


ComponentsDep = Annotated[Components, Depends(get_components)]


async def get_registry(components: ComponentsDep) -> Registry:
    return components.registry


async def get_intake(components: ComponentsDep) -> Intake:
    return components.intake


RegistryDep = Annotated[Registry, Depends(get_registry)]
IntakeDep = Annotated[Intake, Depends(get_intake)]


def http_error(refused: Refused) -> HTTPException:
    return HTTPException(refused.status, refused.detail, headers=refused.headers or None)


def is_admin(components: Components, request: Request) -> bool:
    """Whether the request carries `Authorization: Bearer <GRADER_ADMIN_TOKEN>` (never with no token set)."""
    token = components.settings.admin_token
    scheme, _, presented = request.headers.get("authorization", "").partition(" ")
    # Compared as bytes: compare_digest refuses non-ASCII str, and a header may carry anything.
    return (
        bool(token)
        and scheme.lower() == "bearer"
        and hmac.compare_digest(presented.strip().encode("utf-8", "surrogateescape"), token.encode("utf-8"))
    )


def identify(components: Components, request: Request) -> Submitter:
    """The submitter of a request; 401 when API keys are required and none valid is presented. The admin
    (its token) is a submitter of its own."""
    if is_admin(components, request):
        return Submitter(hash_key("admin:" + components.settings.admin_token))
    try:
        return components.submitters.identify(request.headers)
    except Refused as refused:
        components.metrics.refused.labels(refused.reason or "unauthorized").inc()
        raise http_error(refused) from None


async def waiting(
    request: Request,
    components: ComponentsDep,
    wait: Annotated[float, Query(ge=0, le=MAX_WAIT_S, description="seconds to wait for the verdict")] = 0,
) -> AsyncIterator[float]:
    """?wait= of POST /api/submissions. Waiting holds one of GRADER_MAX_WAITERS slots until the response has
    gone out (or failed); beyond them, 429 before anything is stored."""
    if wait <= 0:
        yield 0.0
        return
    waiters: Slots = request.app.state.waiters
    if not waiters.try_acquire():
        components.metrics.refused.labels("too_many_waiters").inc()
        raise waiters.refused()
    try:
        yield wait
    finally:
        waiters.release()


WaitDep = Annotated[float, Depends(waiting)]
