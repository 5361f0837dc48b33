"""Leases: a running submission belongs to the process grading it for as long as that process renews
its lease; when the lease lapses (a worker killed, a grading that outlived every bound), any reaper
queues the submission again. The same in local mode and under Celery: under Celery, queued
submissions have a dispatch lease too (a message lost with the broker is sent again)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from grader.config_groups import QueueSettings
from grader.grading.verdict import Status
from grader.logs import submission_logging
from grader.metrics import Metrics
from grader.queue.backends import grades_where_taken
from grader.storage import lease_data
from grader.storage.db import Database

log = logging.getLogger(__name__)


class Leases:
    def __init__(
        self,
        queueing: QueueSettings,
        db: Database,
        metrics: Metrics,
        resubmit: Callable[[str], None],
        max_grading_s: Callable[[], float],
    ) -> None:
        self.queueing = queueing
        self.db = db
        self.metrics = metrics
        self.resubmit = resubmit
        self.max_grading_s = max_grading_s
        # Gradings in progress here: submission id -> (attempt, renew its lease until then).
        self._held: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    def hold(self, submission_id: str, attempt: int) -> None:
        with self._lock:
            self._held[submission_id] = (attempt, time.monotonic() + self.max_grading_s())

    def release(self, submission_id: str) -> None:
        with self._lock:
            self._held.pop(submission_id, None)

    def start(self) -> None:
        for target, name in ((self._renew, "lease-renewal"), (self._reap, "lease-reaper")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout=10)

    def _renew(self) -> None:
        interval = self.queueing.lease_s / 3
        while not self._stopping.wait(interval):
            self.renew_once()

    def renew_once(self) -> None:
        """Renews the lease of every grading here that is still within its bound."""
        now = time.monotonic()
        with self._lock:
            held = [(key, attempt) for key, (attempt, until) in self._held.items() if until > now]
        for submission_id, attempt in held:
            try:
                with self.db.session() as session:
                    kept = lease_data.renew_lease(
                        session, submission_id=submission_id, attempt=attempt, lease_s=self.queueing.lease_s
                    )
            except Exception as exc:  # the next round tries again; the lease has slack for it
                log.warning("renewing the lease of %s failed: %s", submission_id, exc)
                continue
            if not kept:
                log.info("%s was taken from this attempt (a regrade, or its lease ran out)", submission_id)

    def _reap(self) -> None:
        interval = max(0.5, min(self.queueing.lease_s / 2, 10.0))
        while True:
            try:
                self.reap_expired()
            except Exception as exc:  # the database may be away for a moment: try again next round
                log.warning("looking for expired leases failed: %s", exc)
            if self._stopping.wait(interval):
                return

    def reap_expired(self) -> int:
        """Queues again, and sends again, every submission whose holder let its lease run out; how many.
        In local mode only running ones: queued ones wait in this process's own queue."""
        redispatch_after_s = self.queueing.redispatch_after_s
        with self.db.session() as session:
            expired = lease_data.expired_leases(
                session, unleased_after_s=redispatch_after_s, running_only=grades_where_taken(self.queueing)
            )
        requeued = 0
        for submission_id, status in expired:
            with self.db.session() as session:
                if not lease_data.requeue_expired(
                    session,
                    submission_id=submission_id,
                    lease_s=redispatch_after_s,
                    unleased_after_s=redispatch_after_s,
                ):
                    continue  # another worker's reaper, or a worker taking it, came first
            requeued += 1
            self.metrics.requeued.inc()
            with submission_logging(submission_id):
                log.warning(
                    "lease of %s submission ran out (%s); sending it again",
                    status,
                    "its grader was lost" if status == Status.RUNNING else "its message was not picked up",
                )
            self.resubmit(submission_id)
        return requeued
