"""`grader worker`: the parts that grade (a warm pool, no HTTP API) under a Celery worker."""

from __future__ import annotations

import logging
import socket
import time
from typing import Any

from grader.components import build
from grader.config import Settings
from grader.metrics import serve_worker_http
from grader.queue.celery_app import CeleryDispatcher

log = logging.getLogger(__name__)


def worker_settings(settings: Settings, name: str) -> Settings:
    """A worker's settings: its sandbox containers are owned by this worker alone (the pool removes the
    leftovers of its owner at start), so the worker's state lives under data_dir/workers/<name>. Two
    workers on one host get two owners; a worker restarted under its name cleans what it left."""
    update: dict[str, Any] = {"data_dir": settings.storage.data_dir / "workers" / name}
    if not settings.storage.database_url:  # keep the one SQLite file, not one per worker
        update["database_url"] = settings.storage.sqlalchemy_url
    return settings.replace(**update)


def run_worker(settings: Settings, *, name: str = "", pool: str = "threads", concurrency: int | None = None) -> int:
    """Builds the grading parts, waits for the sandbox pool, then consumes until stopped."""
    name = name or settings.queueing.worker_name or socket.gethostname()
    settings = worker_settings(settings, name)
    components = build(settings, role="worker")
    components.start()
    http_server = None
    try:
        if components.pool.image_id is None:
            log.error("worker %s cannot grade: %s", name, components.pool.last_error)
            return 1
        deadline = time.monotonic() + settings.sandbox.start_timeout_s * 2
        while not components.pool.ready and time.monotonic() < deadline:
            time.sleep(0.2)  # consume only once warm, so that a ready worker gets the work meanwhile
        if settings.queueing.worker_http_port:

            def health() -> tuple[bool, dict[str, object]]:
                ready = components.pool.ready
                return ready, {"status": "ok", "ready": ready, "sandbox": components.pool.status()}

            http_server = serve_worker_http(
                components.metrics.render, health, settings.http.host, settings.queueing.worker_http_port
            )
        dispatcher = components.dispatcher
        assert isinstance(dispatcher, CeleryDispatcher)
        concurrency = 1 if pool == "solo" else (concurrency or settings.sandbox.pool_size)
        worker = dispatcher.app.Worker(
            hostname=f"{name}@{socket.gethostname()}",
            pool=pool,
            concurrency=concurrency,
            queues=[settings.queueing.celery_queue],
            without_gossip=True,
            without_mingle=True,
            without_heartbeat=True,
            optimization="fair",
            loglevel=settings.logs.level,
            quiet=True,  # no banner on stdout: the log says what it would (below), in the log's format
        )
        log.info(
            "worker %s consuming %s with %d %s (sandbox pool of %d)",
            name,
            settings.queueing.celery_queue,
            concurrency,
            "thread" if pool == "threads" else "process",
            components.pool.size,
        )
        worker.start()
        return int(worker.exitcode or 0)
    finally:
        if http_server is not None:
            http_server.shutdown()
        components.stop()
