"""The service's parts wired together: database, problems, sandbox pool, grader, queue."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import defaultdict

from grader.config import Settings
from grader.grading.expected import ExpectedCache
from grader.grading.grade import Grader
from grader.grading.verdict import Status, TestResult, Verdict
from grader.problems.registry import EffectiveLimits, Registry
from grader.queue.local import LocalQueue
from grader.sandbox.pool import SandboxPool
from grader.storage import crud
from grader.storage.db import Database

log = logging.getLogger(__name__)


class Notifier:
    """Wakes HTTP requests waiting on a submission, from the worker threads."""

    def __init__(self) -> None:
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
        with self._lock:
            waiters = list(self._waiters.get(submission_id, []))
        for loop, event in waiters:
            loop.call_soon_threadsafe(event.set)


class Service:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        self.db = Database(settings.sqlalchemy_url)
        self.registry = Registry(
            EffectiveLimits(settings.default_time_s, settings.default_memory_mb, settings.default_output_kb)
        )
        self.pool = SandboxPool(settings)
        self.expected = ExpectedCache(settings, self._load_expected, self._save_expected)
        self.grader = Grader(settings, self.pool, self.expected)
        self.queue = LocalQueue(self.process, workers=settings.pool_size, max_size=settings.max_queue)
        self.notifier = Notifier()

    def start(self) -> None:
        self.db.create_all()
        self.registry.load_dir(self.settings.problems_dir)
        self.pool.start()
        self.queue.start()
        with self.db.session() as session:
            pending = crud.unfinished_submission_ids(session)
        if pending:
            log.info("resuming %d submissions left queued or running", len(pending))
            threading.Thread(target=self._resume, args=(pending,), daemon=True).start()

    def _resume(self, pending: list[str]) -> None:
        for submission_id in pending:
            self.queue.submit_blocking(submission_id)

    def stop(self) -> None:
        self.queue.stop()
        self.pool.close()

    def _load_expected(self, key: str) -> bytes | None:
        with self.db.session() as session:
            return crud.load_expected(session, key=key)

    def _save_expected(self, key: str, data: bytes) -> None:
        with self.db.session() as session:
            crud.save_expected(session, key=key, data=data)

    def process(self, submission_id: str) -> None:
        """Grades one stored submission and stores its verdict; never leaves it running."""
        with self.db.session() as session:
            submission = crud.mark_running(session, submission_id=submission_id)
            if submission is None:
                return
            problem_id, source = submission.problem_id, submission.source
        self.notifier.notify(submission_id)
        problem = self.registry.get(problem_id)
        try:
            if problem is None:
                verdict = Verdict(status=Status.INTERNAL_ERROR, message=f"problem {problem_id!r} no longer exists")
            else:

                def landed(result: TestResult) -> None:
                    with self.db.session() as session:
                        crud.record_test(session, submission_id=submission_id, result=result)
                    self.notifier.notify(submission_id)

                verdict = self.grader.grade_submission(problem, source, on_test=landed)
        except Exception as exc:  # the judge's own bug: reported, never blamed on the submission
            log.exception("grading %s crashed", submission_id)
            verdict = Verdict(status=Status.INTERNAL_ERROR, message=f"the judge failed: {type(exc).__name__}")
        with self.db.session() as session:
            crud.finish_submission(
                session,
                submission_id=submission_id,
                verdict=verdict,
                problem_version=problem.version if problem is not None else None,
            )
        self.notifier.notify(submission_id)
