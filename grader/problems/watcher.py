"""Keeps the registry in step with its two sources without a restart: the problems directory (polled
for names, mtimes and sizes) and the uploads stored in the database (which another process may add)."""

from __future__ import annotations

import logging
import threading

from grader.config_groups import ProblemsSettings
from grader.problems.registry import Registry, directory_fingerprint
from grader.storage import problem_data
from grader.storage.db import Database

log = logging.getLogger(__name__)


class ProblemWatcher:
    def __init__(self, problems: ProblemsSettings, db: Database, registry: Registry) -> None:
        self.problems = problems
        self.db = db
        self.registry = registry
        self._files_seen: frozenset[tuple[str, int, int]] = frozenset()
        self.uploads_seen: dict[str, str] = {}
        self._poll_lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def load(self) -> None:
        """Reads both sources once (at start)."""
        self.load_uploads()
        self._files_seen = directory_fingerprint(self.problems.dir)
        self.registry.load_dir(self.problems.dir)

    def load_uploads(self) -> None:
        with self.db.session() as session:
            rows = problem_data.list_uploaded_problems(session)
            texts = {row.id: row.text for row in rows}
            self.uploads_seen = {row.id: row.version for row in rows}
        self.registry.set_uploads(texts)

    def start(self) -> None:
        if self.problems.poll_s > 0:
            self._thread = threading.Thread(target=self._watch, name="problems-watch", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _watch(self) -> None:
        while not self._stopping.wait(self.problems.poll_s):
            try:
                self.poll()
            except Exception:  # a failed poll must not end the watching; the next one tries again
                log.exception("polling the problems failed")

    def poll(self) -> bool:
        """One poll; True when something was reloaded."""
        with self._poll_lock:
            return self._poll_files() | self._poll_uploads()

    def poll_now(self) -> None:
        """A poll for who cannot wait for the next (a worker given a submission of a problem it lacks)."""
        try:
            self.poll()
        except Exception:  # grading goes on with what is loaded
            log.exception("polling the problems failed")

    def _poll_files(self) -> bool:
        files = directory_fingerprint(self.problems.dir)
        if files == self._files_seen:
            return False
        self._files_seen = files
        before = {p.id: p.version for p in self.registry.all()}
        self.registry.load_dir(self.problems.dir)
        after = {p.id: p.version for p in self.registry.all()}
        log.info(
            "problems reloaded: %d added, %d removed, %d changed",
            len(after.keys() - before.keys()),
            len(before.keys() - after.keys()),
            sum(1 for key in after.keys() & before.keys() if after[key] != before[key]),
        )
        return True

    def _poll_uploads(self) -> bool:
        with self.db.session() as session:
            uploads = problem_data.uploaded_problem_versions(session)
        if uploads == self.uploads_seen:
            return False
        self.load_uploads()
        return True
