"""The service's parts wired together: database, problems, sandbox pool, grader, queue."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Literal

from sqlalchemy import text

from grader.config import Settings
from grader.grading.expected import ExpectedCache
from grader.grading.grade import Grader
from grader.grading.verdict import Status, TestResult, Verdict
from grader.logs import submission_logging
from grader.metrics import Metrics
from grader.problems.registry import EffectiveLimits, LoadedProblem, Registry, directory_fingerprint
from grader.queue import Dispatcher
from grader.queue.local import LocalQueue
from grader.sandboxes.pool import SandboxPool
from grader.storage import crud
from grader.storage.db import Database
from grader.storage.migrate import upgrade_to_head

log = logging.getLogger(__name__)

PROGRESS_INTERVAL_S = 0.2


class Notifier:
    """Wakes HTTP requests waiting on a submission, from the worker threads. With Celery, a worker's
    Notifier relays each wake-up over Redis and the API's wakes its own waiters (`wake`)."""

    def __init__(self, relay: Callable[[str], None] | None = None) -> None:
        self.relay = relay
        self._waiters: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = defaultdict(list)
        self._lock = threading.Lock()

    def watch(self, submission_id: str) -> asyncio.Event:
        event = asyncio.Event()
        with self._lock:
            self._waiters[submission_id].append((asyncio.get_running_loop(), event))
        return event

    def unwatch(self, submission_id: str, event: asyncio.Event) -> None:
        with self._lock:
            waiters = self._waiters.get(submission_id, [])
            self._waiters[submission_id] = [(loop, e) for loop, e in waiters if e is not event]
            if not self._waiters[submission_id]:
                del self._waiters[submission_id]

    def notify(self, submission_id: str) -> None:
        self.wake(submission_id)
        if self.relay is not None:
            self.relay(submission_id)

    def wake(self, submission_id: str) -> None:
        """Wakes the waiters of this process only."""
        with self._lock:
            waiters = list(self._waiters.get(submission_id, []))
        for loop, event in waiters:
            loop.call_soon_threadsafe(event.set)


class _ProgressWriter:
    """Stores tests as they land, batched: at most one commit per PROGRESS_INTERVAL_S, so a fast
    submission costs one write at the end while a slow one still shows each test soon after it
    finishes (a timer writes what is pending when no further test lands in time). Keyed by test
    index, so a retried attempt overwrites what an earlier one had stored."""

    def __init__(self, service: Service, submission_id: str) -> None:
        self.service = service
        self.submission_id = submission_id
        self.results: dict[int, TestResult] = {}
        self.last_flush = time.monotonic()
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._dirty = False
        self._closed = False

    def __call__(self, result: TestResult) -> None:
        with self._lock:
            self.results[result.index] = result
            self._dirty = True
            wait = PROGRESS_INTERVAL_S - (time.monotonic() - self.last_flush)
            if wait > 0:
                if self._timer is None:
                    self._timer = threading.Timer(wait, self.flush)
                    self._timer.daemon = True
                    self._timer.start()
                return
        self.flush()

    def flush(self) -> None:
        """Writes what is pending; a failure is logged (progress is a courtesy), never raised."""
        try:
            self._flush()
        except Exception:
            log.exception("storing the progress of %s failed", self.submission_id)

    def _flush(self) -> None:
        with self._lock:
            self._timer = None
            if not self._dirty or self._closed:
                return
            ordered = [self.results[index] for index in sorted(self.results)]
            with self.service.db.session() as session:
                crud.record_progress(session, submission_id=self.submission_id, results=ordered)
            self._dirty = False
            self.last_flush = time.monotonic()
        self.service.notifier.notify(self.submission_id)

    def close(self) -> None:
        """The verdict is about to be stored with every test: nothing more to write."""
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None


class ProblemConflict(Exception):
    """An upload that clashes with a problem already served under the same id."""


class Service:
    """role="server" is the HTTP service: with GRADER_QUEUE=local it grades too; with celery it stores
    and enqueues only. role="worker" is `grader worker`: it grades what Celery delivers, and has no HTTP API."""

    def __init__(self, settings: Settings, *, role: Literal["server", "worker"] = "server") -> None:
        self.settings = settings
        self.role = role
        self.grades_here = settings.queue == "local" or role == "worker"
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        self.db = Database(settings.sqlalchemy_url)
        self.registry = Registry(
            EffectiveLimits(settings.default_time_s, settings.default_memory_mb, settings.default_output_kb)
        )
        # A Celery-mode API keeps no warm containers, only the engine (if it has one) to check uploads.
        self.pool = SandboxPool(settings, size=None if self.grades_here else 0)
        self.expected = ExpectedCache(settings, self._load_expected, self._save_expected)
        self.grader = Grader(settings, self.pool, self.expected)
        self.notifier = Notifier()
        self.queue: Dispatcher = self._make_dispatcher()
        self.metrics = Metrics(self)
        # Grading attempts in progress here: submission id -> (attempt, renew its lease until then).
        self._grading: dict[str, tuple[int, float]] = {}
        self._grading_lock = threading.Lock()
        self._poll_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        # One problem check at a time: each starts its own sandboxes next to the grading pool, and
        # holding the lock from check to store also settles two uploads racing for one id.
        self.upload_lock = threading.Lock()
        self._stopping = threading.Event()
        self._watcher: threading.Thread | None = None
        self._files_seen: frozenset[tuple[str, int, int]] = frozenset()
        self._uploads_seen: dict[str, str] = {}

    def _make_dispatcher(self) -> Dispatcher:
        if self.settings.queue == "local":
            return LocalQueue(self.process, workers=self.settings.pool_size, max_size=self.settings.max_queue)
        from grader.queue.celery_app import CeleryDispatcher

        if self.role == "worker":  # workers publish progress; the API relays it to its own waiters
            dispatcher = CeleryDispatcher(self.settings, self.db)
            self.notifier.relay = dispatcher.publish
            return dispatcher
        return CeleryDispatcher(self.settings, self.db, on_progress=self.notifier.wake)

    def _background(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def start(self) -> None:
        upgrade_to_head(self.db.engine)
        self._load_uploads()
        self._files_seen = directory_fingerprint(self.settings.problems_dir)
        self.registry.load_dir(self.settings.problems_dir)
        if self.settings.problems_poll_s > 0:
            self._watcher = threading.Thread(target=self._watch_problems, name="problems-watch", daemon=True)
            self._watcher.start()
        self.pool.start()
        if self.grades_here:
            threading.Thread(target=self._prepare_expected, name="expected-outputs", daemon=True).start()
            self._background(self._renew_leases, "lease-renewal")
            # A grading that outlives any bound stops renewing its lease; the reaper then takes the
            # submission back, in local mode as under Celery.
            self._background(self._reap_expired_leases, "lease-reaper")
        self.queue.start()
        if self.settings.queue == "local":
            # This process was the only grader: whatever it left queued or running is graded again.
            with self.db.session() as session:
                pending = crud.unfinished_submission_ids(session)
            if pending:
                log.info("resuming %d submissions left queued or running", len(pending))
                threading.Thread(target=self._resume, args=(pending,), daemon=True).start()

    def _prepare_expected(self) -> None:
        """Computes each problem's expected outputs before its first submission asks for them."""
        if self.pool.image_id is None:
            return
        for problem in self.registry.all():
            if self._stopping.is_set():
                return
            try:
                self.expected.get(problem, self.pool.image_id, self.pool.fresh)
            except Exception as exc:  # reported again, as internal_error, to whoever submits
                log.warning("expected outputs of %s unavailable: %s", problem.id, exc)

    def _resume(self, pending: list[str]) -> None:
        for submission_id in pending:
            self.queue.submit_blocking(submission_id)

    def stop(self) -> None:
        self._stopping.set()
        if self._watcher is not None:
            self._watcher.join(timeout=10)
        for thread in self._threads:
            thread.join(timeout=10)
        self.queue.stop()
        self.pool.close()
        self.db.engine.dispose()

    def ready(self) -> tuple[bool, str | None]:
        """Whether this process can do its part now, and if not, why."""
        if self.grades_here:
            if self.pool.ready:
                return True, None
            state = self.pool.status()
            if state["overdue"]:
                return False, f"{state['overdue']} sandbox(es) not returned in time; being replaced"
            short = state["size"] - state["idle"] - state["busy"]
            return False, self.pool.last_error or f"the sandbox pool is {short} short of {state['size']}; warming up"
        try:
            with self.db.session() as session:
                session.execute(text("SELECT 1"))
        except Exception as exc:
            return False, f"the database does not answer: {type(exc).__name__}"
        broker_error = getattr(self.queue, "broker_error", lambda: None)()
        return broker_error is None, broker_error

    # -- leases: a worker lost mid-grading does not lose the submission -------------------------------
    def _renew_leases(self) -> None:
        interval = self.settings.lease_s / 3
        while not self._stopping.wait(interval):
            now = time.monotonic()
            with self._grading_lock:
                held = [(key, attempt) for key, (attempt, until) in self._grading.items() if until > now]
            for submission_id, attempt in held:
                try:
                    with self.db.session() as session:
                        kept = crud.renew_lease(
                            session, submission_id=submission_id, attempt=attempt, lease_s=self.settings.lease_s
                        )
                except Exception as exc:  # the next round tries again; the lease has slack for it
                    log.warning("renewing the lease of %s failed: %s", submission_id, exc)
                    continue
                if not kept:
                    log.info("%s was taken from this attempt (a regrade, or its lease ran out)", submission_id)

    def _reap_expired_leases(self) -> None:
        interval = max(0.5, min(self.settings.lease_s / 2, 10.0))
        while True:
            try:
                self.reap_expired_leases()
            except Exception as exc:  # the database may be away for a moment: try again next round
                log.warning("looking for expired leases failed: %s", exc)
            if self._stopping.wait(interval):
                return

    def max_grading_s(self) -> float:
        """The longest one grading can take: waiting for a sandbox, then two containers' worth of the
        longest job any problem has, with slack. Past it, the lease is no longer renewed."""
        settings = self.settings
        longest_job = max((len(p.problem.tests) * (p.limits.time_s + 1.0) for p in self.registry.all()), default=60.0)
        return settings.sandbox_acquire_timeout_s + 2 * (settings.load_time_s + longest_job + 15.0) + 60.0

    def reap_expired_leases(self) -> int:
        """Queues again, and sends again, every submission whose holder let its lease run out; how many.
        In local mode only running ones: queued ones wait in this process's own queue."""
        redispatch_after_s = self.settings.redispatch_after_s
        with self.db.session() as session:
            expired = crud.expired_leases(
                session, unleased_after_s=redispatch_after_s, running_only=self.settings.queue == "local"
            )
        requeued = 0
        for submission_id, status in expired:
            with self.db.session() as session:
                if not crud.requeue_expired(
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
                    "its worker was lost" if status == Status.RUNNING else "its message was not picked up",
                )
            self.queue.submit_blocking(submission_id)
        return requeued

    # -- problems: the directory, uploads, regrades ------------------------------------------------
    def _load_uploads(self) -> None:
        with self.db.session() as session:
            rows = crud.list_uploaded_problems(session)
            texts = {row.id: row.text for row in rows}
            self._uploads_seen = {row.id: row.version for row in rows}
        self.registry.set_uploads(texts)

    def _watch_problems(self) -> None:
        """Polls the problems directory (names, mtimes, sizes) and the stored uploads, and reloads what
        changed, so an edited file or an upload made by another process is served without a restart."""
        while not self._stopping.wait(self.settings.problems_poll_s):
            try:
                self.poll_problems()
            except Exception:  # a failed poll must not end the watching; the next one tries again
                log.exception("polling the problems failed")

    def poll_problems(self) -> bool:
        """One poll; True when something was reloaded."""
        changed = False
        files = directory_fingerprint(self.settings.problems_dir)
        if files != self._files_seen:
            self._files_seen = files
            before = {p.id: p.version for p in self.registry.all()}
            self.registry.load_dir(self.settings.problems_dir)
            after = {p.id: p.version for p in self.registry.all()}
            log.info(
                "problems reloaded: %d added, %d removed, %d changed",
                len(after.keys() - before.keys()),
                len(before.keys() - after.keys()),
                sum(1 for key in after.keys() & before.keys() if after[key] != before[key]),
            )
            changed = True
        with self.db.session() as session:
            uploads = crud.uploaded_problem_versions(session)
        if uploads != self._uploads_seen:
            self._load_uploads()
            changed = True
        return changed

    def save_upload(self, loaded: LoadedProblem, text: str, *, replace: bool) -> bool:
        """Stores a checked upload and serves it; True when it is new. Raises ProblemConflict when the id
        is a file's, or (without `replace`) already taken. The caller holds upload_lock."""
        problem_id = loaded.id
        file_problem = self.registry.file_problem(problem_id)
        if file_problem is not None:
            raise ProblemConflict(
                f"problem {problem_id!r} is defined by the file {file_problem.path.name if file_problem.path else '?'}"
                " in the problems directory; change the file instead"
            )
        if not replace and self.registry.get(problem_id) is not None:
            raise ProblemConflict(f"problem {problem_id!r} already exists; PUT /api/problems/{problem_id} replaces it")
        with self.db.session() as session:
            created = crud.save_uploaded_problem(session, problem_id=problem_id, version=loaded.version, text=text)
            self._uploads_seen = crud.uploaded_problem_versions(session)
        self.registry.put_upload(loaded)
        log.info("problem %s %s by upload (version %s)", problem_id, "added" if created else "replaced", loaded.version)
        return created

    def delete_upload(self, problem_id: str) -> bool:
        """Removes a stored upload; False when there is none. A file with the same id stays served."""
        with self.db.session() as session:
            deleted = crud.delete_uploaded_problem(session, problem_id=problem_id)
            self._uploads_seen = crud.uploaded_problem_versions(session)
        if deleted:
            self.registry.remove_upload(problem_id)
            log.info("uploaded problem %s deleted", problem_id)
        return deleted

    def regrade(self, problem_id: str) -> int:
        """Re-queues every submission of a problem against its current version; returns how many."""
        problem = self.registry.get(problem_id)
        if problem is None:
            raise KeyError(problem_id)
        with self.db.session() as session:
            count, to_queue = crud.requeue_problem_submissions(
                session,
                problem_id=problem_id,
                problem_version=problem.version,
                dispatch_lease_s=self.settings.redispatch_after_s,
            )
        log.info("regrading %d submissions of %s against version %s", count, problem_id, problem.version)
        if to_queue:
            # Waits for room on the queue in the background instead of refusing a large regrade.
            threading.Thread(target=self._resume, args=(to_queue,), name="regrade", daemon=True).start()
        return count

    def _load_expected(self, key: str) -> bytes | None:
        with self.db.session() as session:
            return crud.load_expected(session, key=key)

    def _save_expected(self, key: str, data: bytes) -> None:
        with self.db.session() as session:
            crud.save_expected(session, key=key, data=data)

    def process(self, submission_id: str) -> None:
        """Grades one stored submission and stores its verdict; never leaves it running. The grading
        function of every dispatcher: the local queue's threads and the Celery task both call it, and
        it does nothing for a submission that is final, or leased to another worker's live attempt."""
        with submission_logging(submission_id):
            self._grade_stored(submission_id)

    def _grade_stored(self, submission_id: str) -> None:
        with self.db.session() as session:
            submission = crud.mark_running(session, submission_id=submission_id, lease_s=self.settings.lease_s)
            if submission is None:
                log.info("not graded here: already final, or being graded under a live lease")
                return
            # This grading attempt owns the submission until a regrade or a lapsed lease hands it on; what
            # it stores after that is dropped, so a stale verdict never overwrites a newer attempt's.
            problem_id, source, attempt = submission.problem_id, submission.source, submission.attempts
            submitted_version, created_at = submission.problem_version, submission.created_at
        with self._grading_lock:
            self._grading[submission_id] = (attempt, time.monotonic() + self.max_grading_s())
        started = time.monotonic()
        try:
            if attempt == 1:
                self.metrics.queue_wait_seconds.observe(max(0.0, _seconds_since(created_at)))
            self.notifier.notify(submission_id)
            problem = self.registry.get(problem_id)
            if problem is None or problem.version != submitted_version:
                # Another process may have added or changed it (an upload through the API) since this one looked.
                self._poll_problems_now()
                problem = self.registry.get(problem_id)
            try:
                if problem is None:
                    verdict = Verdict(status=Status.INTERNAL_ERROR, message=f"problem {problem_id!r} no longer exists")
                else:
                    landed = _ProgressWriter(self, submission_id)
                    try:
                        verdict = self.grader.grade_submission(problem, source, on_test=landed)
                    finally:
                        landed.close()
            except Exception as exc:  # the judge's own bug: reported, never blamed on the submission
                log.exception("grading %s crashed", submission_id)
                verdict = Verdict(status=Status.INTERNAL_ERROR, message=f"the judge failed: {type(exc).__name__}")
            verdict = self._store_verdict(submission_id, verdict, problem, attempt)
        finally:
            with self._grading_lock:
                self._grading.pop(submission_id, None)
        elapsed = time.monotonic() - started
        self.metrics.grading_seconds.labels(verdict.status.value).observe(elapsed)
        self.metrics.verdicts.labels(verdict.status.value).inc()
        log.info("graded: %s, score %.3f, %.0f ms, attempt %d", verdict.status, verdict.score, elapsed * 1000, attempt)
        self.notifier.notify(submission_id)

    def _store_verdict(
        self, submission_id: str, verdict: Verdict, problem: LoadedProblem | None, attempt: int
    ) -> Verdict:
        """Stores the verdict; if that fails, a verdict that says so. What is stored is returned."""
        version = problem.version if problem is not None else None
        try:
            with self.db.session() as session:
                crud.finish_submission(
                    session, submission_id=submission_id, verdict=verdict, problem_version=version, attempt=attempt
                )
            return verdict
        except Exception as exc:  # the judge's fault; the lease reaper takes over if this fails too
            log.exception("storing the verdict of %s failed", submission_id)
            fallback = Verdict(
                status=Status.INTERNAL_ERROR, message=f"the judge could not store the verdict ({type(exc).__name__})"
            )
            with self.db.session() as session:
                crud.finish_submission(
                    session, submission_id=submission_id, verdict=fallback, problem_version=version, attempt=attempt
                )
            return fallback

    def _poll_problems_now(self) -> None:
        with self._poll_lock:
            try:
                self.poll_problems()
            except Exception:  # grading goes on with what is loaded
                log.exception("polling the problems failed")


def _seconds_since(moment: datetime) -> float:
    # SQLite hands back naive datetimes; every stored time is UTC.
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return (datetime.now(UTC) - aware).total_seconds()
