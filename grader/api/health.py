"""GET /healthz and GET /metrics."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.concurrency import run_in_threadpool

from grader.api.deps import DispatcherDep, MetricsDep, PoolDep, ReadinessDep, RegistryDep, SettingsDep

health_router = APIRouter()


@health_router.get("/metrics", include_in_schema=False)
async def metrics(collectors: MetricsDep) -> Response:
    # The collectors read the database: off the event loop.
    body = await run_in_threadpool(collectors.render)
    return Response(body, media_type=CONTENT_TYPE_LATEST)


@health_router.get("/healthz", tags=["service"])
def healthz(
    settings: SettingsDep, pool: PoolDep, ready_now: ReadinessDep, dispatcher: DispatcherDep, registry: RegistryDep
) -> JSONResponse:
    """200 and `ready` once this process can do its part (local: the sandbox pool is full; celery: the
    database and the broker answer); 503 before, and whenever the pool is short."""
    pool_status = pool.status()
    ready, not_ready_because = ready_now()
    try:
        depth: int | None = dispatcher.depth
    except Exception:  # celery mode counts in the database, which may be what is down
        depth = None
    body: dict[str, Any] = {
        "status": "ok",
        "ready": ready,
        "not_ready_because": not_ready_because,
        "queue": settings.queueing.backend,
        "sandbox": {**pool_status, "image": pool.image_id, "last_error": pool.last_error},
        "queue_depth": depth,
        "problems": len(registry.all()),
        "problem_errors": [str(error) for error in registry.errors],
    }
    return JSONResponse(body, status_code=200 if ready else 503)
