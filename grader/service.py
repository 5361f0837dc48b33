"""The service's parts wired together: database, problems, sandbox pool, grader, queue."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import defaultdict

from grader.config import Settings
from grader.grading.expected import ExpectedCache
from grader.grading.grade import Grader
from grader.grading.verdict import Status, TestResult, Verdict
from grader.problems.registry import EffectiveLimits, LoadedProblem, Registry, directory_fingerprint
from grader.queue.local import LocalQueue
from grader.sandbox.pool import SandboxPool
from grader.storage import crud
from grader.storage.db import Database

log = logging.getLogger(__name__)

PROGRESS_INTERVAL_S = 0.2


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


class _ProgressWriter:
    """Stores tests as they land, batched: one commit per PROGRESS_INTERVAL_S at most, so a fast
    submission costs one write at the end while a slow one still shows progress test by test.
    Keyed by test index, so a retried attempt overwrites what an earlier one had stored."""

    def __init__(self, service: Service, submission_id: str) -> None:
        self.service = service
        self.submission_id = submission_id
        self.results: dict[int, TestResult] = {}
        self.last_flush = time.monotonic()

    def __call__(self, result: TestResult) -> None:
        self.results[result.index] = result
        if time.monotonic() - self.last_flush >= PROGRESS_INTERVAL_S:
            ordered = [self.results[index] for index in sorted(self.results)]
            with self.service.db.session() as session:
                crud.record_progress(session, submission_id=self.submission_id, results=ordered)
            self.last_flush = time.monotonic()
            self.service.notifier.notify(self.submission_id)


class ProblemConflict(Exception):
    """An upload that clashes with a problem already served under the same id."""


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
        # One problem check at a time: each starts its own sandboxes next to the grading pool, and
        # holding the lock from check to store also settles two uploads racing for one id.
        self.upload_lock = threading.Lock()
        self._stopping = threading.Event()
        self._watcher: threading.Thread | None = None
        self._files_seen: frozenset[tuple[str, int, int]] = frozenset()
        self._uploads_seen: dict[str, str] = {}

    def start(self) -> None:
        self.db.create_all()
        self._load_uploads()
        self._files_seen = directory_fingerprint(self.settings.problems_dir)
        self.registry.load_dir(self.settings.problems_dir)
        if self.settings.problems_poll_s > 0:
            self._watcher = threading.Thread(target=self._watch_problems, name="problems-watch", daemon=True)
            self._watcher.start()
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
        self._stopping.set()
        if self._watcher is not None:
            self._watcher.join(timeout=10)
        self.queue.stop()
        self.pool.close()

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
                session, problem_id=problem_id, problem_version=problem.version
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
        """Grades one stored submission and stores its verdict; never leaves it running."""
        with self.db.session() as session:
            submission = crud.mark_running(session, submission_id=submission_id)
            if submission is None:
                return
            # This grading attempt owns the submission until a regrade resets it; what it stores after
            # that is dropped, so a stale verdict never overwrites the regrade's.
            problem_id, source, attempt = submission.problem_id, submission.source, submission.attempts
        self.notifier.notify(submission_id)
        problem = self.registry.get(problem_id)
        try:
            if problem is None:
                verdict = Verdict(status=Status.INTERNAL_ERROR, message=f"problem {problem_id!r} no longer exists")
            else:
                landed = _ProgressWriter(self, submission_id)
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
                attempt=attempt,
            )
        self.notifier.notify(submission_id)
