"""A running submission's tests, stored as they land, batched."""

from __future__ import annotations

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


class ProgressWriter:
    """Stores tests as they land, batched: at most one commit per PROGRESS_INTERVAL_S, so a fast
    submission costs one write at the end while a slow one still shows each test soon after it
    finishes (a timer writes what is pending when no further test lands in time). Keyed by test
    index, so a retried attempt overwrites what an earlier one had stored."""

    def __init__(self, db: Database, notifier: Notifier, submission_id: str) -> None:
        self.db = db
        self.notifier = notifier
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
            with phases.timed("progress"), self.db.session() as session:
                crud.record_progress(session, submission_id=self.submission_id, results=ordered)
            self._dirty = False
            self.last_flush = time.monotonic()
        self.notifier.notify(self.submission_id)

    def close(self) -> None:
        """The verdict is about to be stored with every test: nothing more to write."""
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
