"""The HTTP server `grader serve` runs: uvicorn, configured in one place so that tests serve the app
exactly as production does."""

from __future__ import annotations

import uvicorn
from starlette.types import ASGIApp

from grader.api.deadlines import bounded_h11
from grader.config import Settings

# h11's buffer for an incomplete request line and headers (also a chunk's size line): past it, 400.
MAX_HEADER_BYTES = 16 * 1024


def build_server(
    app: ASGIApp, settings: Settings, *, host: str | None = None, port: int | None = None
) -> uvicorn.Server:
    config = uvicorn.Config(
        app,
        host=host or settings.http.host,
        port=port or settings.http.port,
        # h11 always (never httptools, were it installed), with deadlines on headers and bodies.
        http=bounded_h11(settings.http.header_timeout_s, settings.http.body_timeout_s),
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        # Beyond this many connections (or requests in progress) uvicorn answers 503.
        limit_concurrency=settings.http.max_connections,
        # The client's address comes from grader/api/forwarded.py, from GRADER_TRUSTED_PROXIES only
        # (uvicorn's own would believe X-Forwarded-For from 127.0.0.1 unasked).
        proxy_headers=False,
        # Open event streams would otherwise hold a shutdown until their submissions finish.
        timeout_graceful_shutdown=5,
        log_level=settings.logs.level.lower(),
        log_config=None,  # uvicorn's records go through the root logger: one format (GRADER_LOG_FORMAT) for all
    )
    return uvicorn.Server(config)
