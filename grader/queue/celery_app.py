"""The Celery dispatcher: the API stores a submission and sends its id over Redis; `grader worker`
processes, each with its own sandbox pool on its own Docker engine, grade it (grader/worker.py runs
one; the task calls the handler its dispatcher was given: submissions/processing.py Processor.process).

Nothing is lost when a process dies:
  - messages are acknowledged only after grading (task_acks_late) with one message reserved per
    grading thread (prefetch 1), so a worker killed mid-grading has acknowledged nothing; Redis hands
    the message out again after the visibility timeout, which outlasts any grading;
  - sooner than that, the database lease does it: a worker renews the lease of what it grades every
    lease_s / 3, and any worker's reaper queues again, and re-sends, a submission whose lease ran out;
  - processing takes a submission with one conditional UPDATE (crud.mark_running), so the
    redelivered message and the reaper's new one cannot grade it twice, nor while its lease is live;
  - a queued submission gets a dispatch lease too: a message lost with the broker is sent again.

Calls: an upload's problem check and a run (POST /api/runs) need sandboxes, which only workers have. The
API sends them as tasks (CHECK_TASK, RUN_TASK) with a reply key and a deadline; the worker that takes one
pushes its answer (JSON) onto that Redis list, where the API waits for it (CeleryDispatcher.call). A call
is acknowledged on receipt and dropped once past its deadline: nobody waits for it any more.

Progress (each stored test, each verdict) is published on a Redis channel; the API relays it to its
in-process Notifier, so ?wait= and the server-sent events wake up as they do in local mode.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import redis
from celery import Celery, Task
from pydantic import BaseModel, ValidationError

from grader.config_groups import QueueSettings
from grader.queue.calls import ANSWERS, CHECK_TASK, REQUESTS, RUN_TASK, Answer
from grader.storage import crud, lease_data
from grader.storage.db import Database

__all__ = [
    "CHECK_TASK",
    "GRADE_TASK",
    "RUN_TASK",
    "CeleryDispatcher",
    "RemoteTimeout",
    "RemoteUnavailable",
    "make_celery",
]

log = logging.getLogger(__name__)

GRADE_TASK = "torchjudge.grade"
RETRY_CAP_S = 60
REPLY_TTL_S = 60  # an answer nobody took (its caller gave up) is dropped by Redis after this long
PROGRESS = "progress"  # the mark of a relayed change that cannot be the verdict

Call = Callable[[Any], Answer]  # a worker's answer to one call: its request model in (queue/calls.py), its answer out
Reply = Callable[[str, dict[str, Any]], None]


class RemoteTimeout(Exception):
    """No worker answered a call within its time."""


class RemoteUnavailable(Exception):
    """The broker does not answer: the call could not be sent, or its answer not read."""


def make_celery(
    queueing: QueueSettings,
    handler: Callable[[str], None] | None = None,
    calls: dict[str, Call] | None = None,
    reply: Reply | None = None,
) -> Celery:
    """The Celery app; `handler` grades one submission (a worker's), None where nothing is consumed;
    `calls` answer CHECK_TASK and RUN_TASK (a worker's), their answers sent back with `reply`."""
    app = Celery("torchjudge", broker=queueing.broker_url, set_as_current=False)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        broker_transport_options={
            "visibility_timeout": queueing.visibility_timeout_s,
            # Every key of this deployment under one prefix: deployments and test runs share a Redis safely.
            "global_keyprefix": f"{queueing.celery_queue}:",
        },
        broker_connection_retry_on_startup=True,
        task_default_queue=queueing.celery_queue,
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

    @app.task(name=GRADE_TASK, bind=True, max_retries=None, shared=False)  # type: ignore[untyped-decorator]
    def grade(task: Task, submission_id: str) -> None:
        if handler is None:
            raise RuntimeError("the grading task runs only in `grader worker`")
        try:
            handler(submission_id)
        except Exception as exc:
            # The database or the engine failed before a verdict was stored: the submission is still
            # queued or leased, so trying again is safe (a duplicate finds it taken or final).
            delay = min(RETRY_CAP_S, 2 ** min(task.request.retries, 6))
            log.warning("grading %s failed (%s); trying again in %d s", submission_id, exc, delay)
            raise task.retry(exc=exc, countdown=delay) from exc

    for name in (CHECK_TASK, RUN_TASK):
        _register_call(app, name, (calls or {}).get(name), reply)
    return app


def _register_call(app: Celery, name: str, call: Call | None, reply: Reply | None) -> None:
    @app.task(name=name, acks_late=False, shared=False)  # type: ignore[untyped-decorator]
    def answer(payload: dict[str, Any], reply_to: str, deadline: float) -> None:
        if call is None or reply is None:
            raise RuntimeError(f"{name} runs only in `grader worker`")
        if time.time() > deadline:
            log.info("%s dropped: its caller stopped waiting", name)
            return
        try:
            result = call(REQUESTS[name].model_validate(payload))
        except Exception as exc:  # the caller gets an answer, whatever failed here
            log.exception("%s failed", name)
            result = ANSWERS[name](error=f"{type(exc).__name__}: {exc}"[:2000])
        reply(reply_to, result.model_dump(mode="json"))


class CeleryDispatcher:
    """The Dispatcher of GRADER_QUEUE=celery. `depth` counts queued submissions in the database (the
    broker's own queue misses what a worker has reserved); the API checks it against max_queue before
    storing, so `submit` itself never refuses."""

    immediate = False  # submit() writes a lease and talks to the broker

    def __init__(
        self,
        queueing: QueueSettings,
        db: Database,
        on_progress: Callable[[str, bool], None] | None = None,
        handler: Callable[[str], None] | None = None,
        calls: dict[str, Call] | None = None,
    ) -> None:
        self.queueing = queueing
        self.db = db
        self.app = make_celery(queueing, handler, calls, reply=lambda key, result: self._reply(key, result))
        self.channel = f"{queueing.celery_queue}:progress"
        self._on_progress = on_progress
        self._redis = redis.Redis.from_url(
            queueing.broker_url, socket_timeout=5, socket_connect_timeout=5, health_check_interval=30
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

    def submit(self, submission_id: str, owner: str = "") -> None:  # the broker's order: first in, first out
        self.submit_blocking(submission_id)

    def submit_blocking(self, submission_id: str, owner: str = "") -> None:
        # The dispatch lease first: should the send fail or the message be lost, a reaper sends it again.
        with self.db.session() as session:
            lease_data.set_dispatch_lease(
                session, submission_ids=[submission_id], lease_s=self.queueing.redispatch_after_s
            )
        try:
            self.app.send_task(GRADE_TASK, args=[submission_id], queue=self.queueing.celery_queue)
        except Exception as exc:  # the broker is down: the submission is stored and will be sent again
            log.error(
                "could not send %s to the broker (%s); it is sent again when its lease runs out", submission_id, exc
            )

    @property
    def idle(self) -> int:
        return 0  # the graders are the workers' processes: every submission is taken by one of them

    def submit_taken(self, submission_id: str, taken: Any, owner: str = "") -> None:
        raise RuntimeError("under Celery a submission is taken by the worker that grades it")

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

    # -- calls: a task answered on a Redis list ----------------------------------------------------------
    def call(self, name: str, request: BaseModel, timeout_s: float) -> Answer:
        """Sends a call (a request of queue/calls.py) to the workers and waits up to timeout_s for its answer,
        of that call's answer model. Raises RemoteTimeout, RemoteUnavailable."""
        reply_to = f"{self.queueing.celery_queue}:reply:{uuid.uuid4().hex}"
        deadline = time.time() + timeout_s
        payload = request.model_dump(mode="json")
        try:
            self.app.send_task(
                name, args=[payload, reply_to, deadline], queue=self.queueing.celery_queue, expires=timeout_s
            )
        except Exception as exc:
            raise RemoteUnavailable(f"the broker does not answer: {exc}") from exc
        while (remaining := deadline - time.time()) > 0:
            try:
                # Short blocking reads: the client's socket timeout (5 s) bounds each one.
                item = self._redis.blpop([reply_to], timeout=max(1, min(3, int(remaining))))
            except redis.RedisError as exc:
                raise RemoteUnavailable(f"the broker does not answer: {exc}") from exc
            if item is not None:
                try:
                    return ANSWERS[name].model_validate_json(item[1])
                except ValidationError:
                    return ANSWERS[name](error="the worker's answer is not one this call has")
        raise RemoteTimeout(f"no worker answered within {timeout_s:g} s")

    def _reply(self, reply_to: str, result: dict[str, Any]) -> None:
        with self._redis.pipeline() as pipe:
            pipe.rpush(reply_to, json.dumps(result))
            pipe.expire(reply_to, REPLY_TTL_S)
            pipe.execute()

    # -- progress relay -----------------------------------------------------------------------------
    def publish(self, submission_id: str, final: bool = True) -> None:
        """A change of the submission, for the API's waiters: "<id>" when it may be the verdict, "<id> progress"
        otherwise (which wakes event streams, not a ?wait= request)."""
        try:
            self._redis.publish(self.channel, submission_id if final else f"{submission_id} {PROGRESS}")
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
                        text = data.decode() if isinstance(data, bytes) else str(data)
                        submission_id, _, kind = text.partition(" ")
                        self._on_progress(submission_id, kind != PROGRESS)
            except (redis.RedisError, OSError) as exc:
                log.warning("progress relay lost the broker (%s); reconnecting in %.1f s", exc, delay)
                self._stopping.wait(delay)
                delay = min(delay * 2, 30)
            finally:
                try:
                    pubsub.close()
                except (redis.RedisError, OSError):
                    pass
