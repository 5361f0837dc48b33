"""The HTTP application: JSON under /api (OpenAPI at /docs), the web pages, health and metrics. This
module only assembles: middleware, routers, error handling, and the service's parts on app.state
(grader/components.py builds them; routes reach them through grader/api/deps.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse

from grader.api.admin import admin_router
from grader.api.batches import batches_router
from grader.api.docs import docs_router
from grader.api.edge import CORS_EXPOSED, CORS_HEADERS, CORS_METHODS, DeclaredBodies, EdgeMiddleware
from grader.api.events import events_router
from grader.api.forwarded import ForwardedMiddleware
from grader.api.health import health_router
from grader.api.hosts import HostMiddleware
from grader.api.leaderboard import leaderboard_router
from grader.api.limits import BodyLimitMiddleware, route_caps
from grader.api.listing import listing_router
from grader.api.me import me_router
from grader.api.problems import problems_router
from grader.api.runs import runs_router
from grader.api.schemas import validation_message
from grader.api.slots import stream_slots, waiter_slots
from grader.api.submissions import submissions_router
from grader.components import Components, build
from grader.config import Settings, get_settings
from grader.web.routes import comparison_html, web_router


def create_app(settings: Settings | None = None, components: Components | None = None) -> FastAPI:
    """The application; with `components` it serves those (started and stopped by their owner), else it
    builds its own and starts and stops them with itself."""
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own = components is None
        app.state.components = components or build(settings)
        if own:
            app.state.components.start()
        try:
            yield
        finally:
            if own:
                app.state.components.stop()

    app = FastAPI(
        title="torchjudge",
        version="0.1.0",
        description="A judge for PyTorch coding challenges: submissions run in hardened Docker sandboxes.",
        lifespan=lifespan,
        # /docs and /redoc come from grader/api/docs.py, with their files served here (no CDN).
        docs_url=None,
        redoc_url=None,
    )
    # Bodies are counted while they are read, chunked or not; problem uploads get a larger cap.
    app.add_middleware(BodyLimitMiddleware, cap_for=route_caps(settings.limits))
    # Before any body is read: cross-site state-changing requests (403) and the wrong content type (415).
    allowed = settings.http.cors_allowed
    app.add_middleware(
        EdgeMiddleware,
        public_origin=settings.http.public_origin,
        allowed_origins=frozenset(allowed),
        media_for=DeclaredBodies(app),
    )
    if allowed:  # around the refusals above, so that an allowed page can read them
        app.add_middleware(
            CORSMiddleware,
            allow_origins=allowed,
            allow_methods=list(CORS_METHODS),
            allow_headers=list(CORS_HEADERS),
            expose_headers=list(CORS_EXPOSED),
            max_age=600,
        )
    # Before any route: a Host that is none of the service's names (a DNS-rebinding page's) gets 400.
    app.add_middleware(HostMiddleware, names=settings.http.served_hosts)
    # Outermost: the client's address, as a trusted proxy names it (GRADER_TRUSTED_PROXIES).
    app.add_middleware(ForwardedMiddleware, proxies=settings.http.proxies)
    app.state.waiters = waiter_slots(settings.http.max_waiters)
    app.state.streams = stream_slots(settings.http.max_streams)
    if components is not None:
        app.state.components = components

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": validation_message(exc)}, status_code=422)

    routers = (
        health_router,
        docs_router,
        problems_router,
        leaderboard_router,
        listing_router,  # before submissions_router: /api/submissions/export is not an id
        batches_router,
        submissions_router,
        runs_router,
        events_router,
        me_router,
        admin_router,
    )
    for router in routers:
        app.include_router(router)
    app.include_router(web_router)
    app.state.draw_details = comparison_html  # Run's answer draws details as the report page does
    return app
