"""The Celery dispatcher: the API stores a submission and sends its id over Redis; `grader worker`
processes, each with its own sandbox pool on its own Docker engine, run Service.process on it.

Nothing is lost when a process dies:
  - messages are acknowledged only after grading (task_acks_late) with one message reserved per
    grading thread (prefetch 1), so a worker killed mid-grading has acknowledged nothing; Redis hands
    the message out again after the visibility timeout, which outlasts any grading;
  - sooner than that, the database lease does it: a worker renews the lease of what it grades every
    lease_s / 3, and any worker's reaper queues again, and re-sends, a submission whose lease ran out;
  - Service.process takes a submission with one conditional UPDATE (crud.mark_running), so the
    redelivered message and the reaper's new one cannot grade it twice, nor while its lease is live;
  - a queued submission gets a dispatch lease too: a message lost with the broker is sent again.

Progress (each stored test, each verdict) is published on a Redis channel; the API relays it to its
in-process Notifier, so ?wait= and the server-sent events wake up as they do in local mode.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import redis
from celery import Celery, Task

from grader.config import Settings
from grader.storage import crud

if TYPE_CHECKING:
    from grader.service import Service
    from grader.storage.db import Database

__all__ = ["GRADE_TASK", "CeleryDispatcher", "make_celery", "run_worker"]

log = logging.getLogger(__name__)

GRADE_TASK = "torchjudge.grade"
RETRY_CAP_S = 60

# The worker-side Service the grading task runs on; bound by run_worker before the worker consumes.
_worker_service: Service | None = None


def make_celery(settings: Settings) -> Celery:
    app = Celery("torchjudge", broker=settings.broker_url, set_as_current=False)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        broker_transport_options={
            "visibility_timeout": settings.celery_visibility_timeout_s,
            # Every key of this deployment under one prefix: deployments and test runs share a Redis safely.
            "global_keyprefix": f"{settings.celery_queue}:",
        },
        broker_connection_retry_on_startup=True,
        task_default_queue=settings.celery_queue,
        task_serializer="json",
        accept_content=["json"],
        # Verdicts live in the database: no result backend.
        task_ignore_result=True,
        # Logging is configured by grader.logs (JSON or text), not by Celery.
        worker_hijack_root_logger=False,
        # Broadcast remote control and events use fanout channels nobody here listens to.
        worker_enable_remote_control=False,
        worker_send_task_events=False,
    )

    @app.task(name=GRADE_TASK, bind=True, max_retries=None)  # type: ignore[untyped-decorator]
    def grade(task: Task, submission_id: str) -> None:
        service = _worker_service
        if service is None:
            raise RuntimeError("the grading task runs only in `grader worker`")
        try:
            service.process(submission_id)
        except Exception as exc:
            # The database or the engine failed before a verdict was stored: the submission is still
            # queued or leased, so trying again is safe (a duplicate finds it taken or final).
            delay = min(RETRY_CAP_S, 2 ** min(task.request.retries, 6))
            log.warning("grading %s failed (%s); trying again in %d s", submission_id, exc, delay)
            raise task.retry(exc=exc, countdown=delay) from exc

    return app


class CeleryDispatcher:
    """The Dispatcher of GRADER_QUEUE=celery. `depth` counts queued submissions in the database (the
    broker's own queue misses what a worker has reserved); the API checks it against max_queue before
    storing, so `submit` itself never refuses."""

    def __init__(self, settings: Settings, db: Database, on_progress: Callable[[str], None] | None = None) -> None:
        self.settings = settings
        self.db = db
        self.app = make_celery(settings)
        self.channel = f"{settings.celery_queue}:progress"
        self._on_progress = on_progress
        self._redis = redis.Redis.from_url(
            settings.broker_url, socket_timeout=5, socket_connect_timeout=5, health_check_interval=30
        )
        self._stopping = threading.Event()
        self._listener: threading.Thread | None = None

    def start(self) -> None:
        if self._on_progress is not None:
            self._listener = threading.Thread(target=self._listen, name="progress-relay", daemon=True)
            self._listener.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._listener is not None:
            self._listener.join(timeout=5)
        self._redis.close()
        self.app.close()

    def submit(self, submission_id: str) -> None:
        self.submit_blocking(submission_id)

    def submit_blocking(self, submission_id: str) -> None:
        # The dispatch lease first: should the send fail or the message be lost, a reaper sends it again.
        with self.db.session() as session:
            crud.set_dispatch_lease(session, submission_ids=[submission_id], lease_s=self.settings.redispatch_after_s)
        try:
            self.app.send_task(GRADE_TASK, args=[submission_id], queue=self.settings.celery_queue)
        except Exception as exc:  # the broker is down: the submission is stored and will be sent again
            log.error(
                "could not send %s to the broker (%s); it is sent again when its lease runs out", submission_id, exc
            )

    @property
    def depth(self) -> int:
        with self.db.session() as session:
            return crud.count_queued(session)

    def broker_error(self) -> str | None:
        """None when the broker answers, else why not."""
        try:
            self._redis.ping()
        except redis.RedisError as exc:
            return f"the broker does not answer: {exc}"
        return None

    # -- progress relay -----------------------------------------------------------------------------
    def publish(self, submission_id: str) -> None:
        try:
            self._redis.publish(self.channel, submission_id)
        except redis.RedisError as exc:  # a missed wake-up costs a poll interval, never a verdict
            log.debug("progress of %s not published: %s", submission_id, exc)

    def _listen(self) -> None:
        assert self._on_progress is not None
        delay = 0.5
        while not self._stopping.is_set():
            pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
            try:
                pubsub.subscribe(self.channel)
                delay = 0.5
                while not self._stopping.is_set():
                    message = pubsub.get_message(timeout=1.0)
                    if message is not None and message.get("type") == "message":
                        data = message["data"]
                        self._on_progress(data.decode() if isinstance(data, bytes) else str(data))
            except (redis.RedisError, OSError) as exc:
                log.warning("progress relay lost the broker (%s); reconnecting in %.1f s", exc, delay)
                self._stopping.wait(delay)
                delay = min(delay * 2, 30)
            finally:
                try:
                    pubsub.close()
                except (redis.RedisError, OSError):
                    pass


def worker_settings(settings: Settings, name: str) -> Settings:
    """A worker's settings: its sandbox containers are owned by this worker alone (the pool removes the
    leftovers of its owner at start), so the worker's state lives under data_dir/workers/<name>. Two
    workers on one host get two owners; a worker restarted under its name cleans what it left."""
    update: dict[str, Any] = {"data_dir": settings.data_dir / "workers" / name}
    if not settings.database_url:  # keep the one SQLite file, not one per worker
        update["database_url"] = settings.sqlalchemy_url
    return settings.model_copy(update=update)


def run_worker(settings: Settings, *, name: str = "", pool: str = "threads", concurrency: int | None = None) -> int:
    """`grader worker`: a Service that grades (warm pool, no HTTP API) under a Celery worker."""
    global _worker_service
    from grader.metrics import serve_worker_http
    from grader.service import Service

    name = name or settings.worker_name or socket.gethostname()
    settings = worker_settings(settings, name)
    service = Service(settings, role="worker")
    service.start()
    http_server = None
    try:
        if service.pool.image_id is None:
            log.error("worker %s cannot grade: %s", name, service.pool.last_error)
            return 1
        deadline = time.monotonic() + settings.sandbox_start_timeout_s * 2
        while not service.pool.ready and time.monotonic() < deadline:
            time.sleep(0.2)  # consume only once warm, so that a ready worker gets the work meanwhile
        if settings.worker_http_port:
            http_server = serve_worker_http(service, settings.host, settings.worker_http_port)
        _worker_service = service
        assert isinstance(service.queue, CeleryDispatcher)
        concurrency = 1 if pool == "solo" else (concurrency or settings.pool_size)
        worker = service.queue.app.Worker(
            hostname=f"{name}@{socket.gethostname()}",
            pool=pool,
            concurrency=concurrency,
            queues=[settings.celery_queue],
            without_gossip=True,
            without_mingle=True,
            without_heartbeat=True,
            optimization="fair",
            loglevel=settings.log_level,
            quiet=True,  # no banner on stdout: the log says what it would (below), in the log's format
        )
        log.info(
            "worker %s consuming %s with %d %s (sandbox pool of %d)",
            name,
            settings.celery_queue,
            concurrency,
            "thread" if pool == "threads" else "process",
            service.pool.size,
        )
        worker.start()
        return int(worker.exitcode or 0)
    finally:
        _worker_service = None
        if http_server is not None:
            http_server.shutdown()
        service.stop()
