"""The HTTP server `grader serve` runs: uvicorn, configured in one place so that tests serve the app
exactly as production does."""

from __future__ import annotations

import uvicorn
from starlette.types import ASGIApp

from grader.config import Settings


def build_server(
    app: ASGIApp, settings: Settings, *, host: str | None = None, port: int | None = None
) -> uvicorn.Server:
    config = uvicorn.Config(
        app,
        host=host or settings.host,
        port=port or settings.port,
        # Open event streams would otherwise hold a shutdown until their submissions finish.
        timeout_graceful_shutdown=5,
        log_level=settings.log_level.lower(),
        log_config=None,  # uvicorn's records go through the root logger: one format (GRADER_LOG_FORMAT) for all
    )
    return uvicorn.Server(config)
