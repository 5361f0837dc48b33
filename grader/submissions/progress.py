"""A running submission's tests, stored as they land, batched."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time

from grader import phases
from grader.grading.verdict import TestResult
from grader.storage import crud
from grader.storage.db import Database
from grader.submissions.notifier import Notifier

log = logging.getLogger(__name__)

PROGRESS_INTERVAL_S = 0.2


class _Flushes:
    """One thread that runs every writer's due flush in this process (a timer thread per submission cost
    its start on the grading path: docs/BENCHMARKS.md, "Costs behind the code")."""

    def __init__(self) -> None:
        self._due: list[tuple[float, int, ProgressWriter]] = []
        self._order = itertools.count()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def at(self, when: float, writer: ProgressWriter) -> None:
        with self._changed:
            heapq.heappush(self._due, (when, next(self._order), writer))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="progress", daemon=True)
                self._thread.start()
            elif self._due[0][2] is writer:  # due before all the others: the thread sleeps too long
                self._changed.notify()

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._due or self._due[0][0] > time.monotonic():
                    self._changed.wait(self._due[0][0] - time.monotonic() if self._due else None)
                writer = heapq.heappop(self._due)[2]
            writer.flush()  # never raises


_FLUSHES = _Flushes()


class ProgressWriter:
    """Stores tests as they land, batched: at most one commit per PROGRESS_INTERVAL_S, so a fast
    submission costs one write at the end while a slow one still shows each test soon after it
    finishes (a flush is due when no further test lands in time). Keyed by test
    index, so a test run again in a second container overwrites what the first had stored."""

    def __init__(self, db: Database, notifier: Notifier, submission_id: str) -> None:
        self.db = db
        self.notifier = notifier
        self.submission_id = submission_id
        self.results: dict[int, TestResult] = {}
        self.last_flush = time.monotonic()
        self._lock = threading.Lock()
        self._scheduled = False
        self._dirty = False
        self._closed = False

    def __call__(self, result: TestResult) -> None:
        with self._lock:
            self.results[result.index] = result
            self._dirty = True
            wait = PROGRESS_INTERVAL_S - (time.monotonic() - self.last_flush)
            if wait > 0:
                if not self._scheduled:
                    self._scheduled = True
                    _FLUSHES.at(time.monotonic() + wait, self)
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
            self._scheduled = False
            if not self._dirty or self._closed:
                return
            ordered = [self.results[index] for index in sorted(self.results)]
            with phases.timed("progress"), self.db.session() as session:
                crud.record_progress(session, submission_id=self.submission_id, results=ordered)
            self._dirty = False
            self.last_flush = time.monotonic()
        self.notifier.notify(self.submission_id)

    def close(self) -> None:
        """The verdict is about to be stored with every test: nothing more to write."""
        with self._lock:
            self._closed = True  # a flush still due finds nothing to do
