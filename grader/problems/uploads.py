"""Problems added, replaced and removed through the admin API: each upload is validated, checked in
sandboxes (the same check as `grader problems check`), then stored in the database and served. A
problem defined by a file in the problems directory cannot be replaced or removed this way: the file
wins."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from grader.config_grading import LimitsSettings, SandboxSettings
from grader.config_groups import ProblemsSettings
from grader.grading.expected import ExpectedCache
from grader.problems import strict_yaml
from grader.problems.check import CheckReport, ProblemChecker
from grader.problems.registry import LoadedProblem, ProblemError, Registry, yaml_line
from grader.problems.watcher import ProblemWatcher
from grader.storage import problem_data
from grader.storage.db import Database

log = logging.getLogger(__name__)


class CheckTimeout(Exception):
    """The check ran elsewhere (a worker) and its answer did not come in time: nothing was stored."""


class UploadRefused(Exception):
    """An upload that cannot be stored: its HTTP status (409, 422), the messages, the check's report."""

    def __init__(self, status: int, errors: list[str], report: CheckReport | None = None) -> None:
        super().__init__("\n".join(errors))
        self.status = status
        self.errors = errors
        self.report = report


@dataclass(frozen=True)
class Uploaded:
    problem: LoadedProblem
    created: bool
    report: CheckReport
    checked: bool = True  # False: the very version already served, neither checked again nor stored


def check_upload(
    problems: ProblemsSettings,
    sandbox: SandboxSettings,
    limits: LimitsSettings,
    expected: ExpectedCache | None,
    text: str,
    source: str,
) -> CheckReport:
    """An upload's check (the same as `grader problems check`), in sandboxes of its own. When it passes, the
    reference's outputs it computed under each of its seeds (and the pitfalls') go into the expected-output
    cache, so that no submission runs the reference again for them. Raises SandboxUnavailable.

    Where the check runs: in the API process on one machine; on a worker under Celery (grader/worker.py),
    whose cache is the same database."""
    # Rounds end within the budget, and well within what the API waits for a worker's answer.
    budget_s = min(problems.upload_check_budget_s, 0.8 * problems.upload_check_timeout_s)
    with ProblemChecker(sandbox, limits, seeds=problems.check_seeds, budget_s=budget_s) as checker:
        report = checker.check_text(text, source)
        if report.ok and expected is not None and checker.problem is not None:
            image_id = checker.sandboxes().image_id or "unknown"
            for seed, (reference, pitfalls) in checker.outputs.items():
                expected.seed(checker.problem, image_id, seed, reference, pitfalls)
            log.info("expected outputs of %s seeded by its check (%d seeds)", checker.problem.id, len(checker.outputs))
    return report


class Uploads:
    def __init__(
        self,
        db: Database,
        registry: Registry,
        watcher: ProblemWatcher,
        check: Callable[[str, str], CheckReport],
        on_stored: Callable[[LoadedProblem], None] = lambda problem: None,
    ) -> None:
        self.db = db
        self.registry = registry
        self.watcher = watcher
        # (text, source) -> the check's report: check_upload here, or the same as a task on a worker.
        self.check = check
        self.on_stored = on_stored  # the seeds its check computed outputs for, offered for submissions
        # One check at a time: each starts sandboxes of its own next to the grading pool, and holding the
        # lock from check to store also settles two uploads racing for one id.
        self.lock = threading.Lock()

    def put(self, text: str, source: str, path_id: str | None) -> Uploaded:
        """Validates, checks and stores one upload: POST when path_id is None, else PUT to that id.
        Raises UploadRefused, SandboxUnavailable when no sandbox can run the check, or CheckTimeout when a
        worker did not answer in time (then nothing is stored)."""
        try:
            problem = self.registry.parse(text, source)
        except ProblemError as exc:
            raise UploadRefused(422, exc.lines()) from None
        if path_id is not None and problem.id != path_id:
            line = yaml_line(strict_yaml.compose(text), ("id",))
            raise UploadRefused(
                422, [f"{source}:{line}: id: the file's id {problem.id!r} is not the {path_id!r} of the URL"]
            )
        loaded = self.registry.make(problem, uploaded=True)
        self._refuse_conflicts(loaded.id, replace=path_id is not None)
        current = self.registry.get(loaded.id)
        if current is not None and current.version == loaded.version:
            # The same content again: already checked and stored, nothing to do.
            report = CheckReport(source=source, problem_id=loaded.id, version=loaded.version)
            return Uploaded(loaded, False, report, checked=False)
        with self.lock:
            report = self.check(text, source)
            if not report.ok:
                raise UploadRefused(422, report.errors, report)
            self._refuse_conflicts(loaded.id, replace=path_id is not None)
            return Uploaded(loaded, self._save(loaded, text), report)

    def _refuse_conflicts(self, problem_id: str, *, replace: bool) -> None:
        file_problem = self.registry.file_problem(problem_id)
        if file_problem is not None:
            name = file_problem.path.name if file_problem.path else "?"
            raise UploadRefused(
                409,
                [f"problem {problem_id!r} is defined by the file {name} in the problems directory; change the file"],
            )
        if not replace and self.registry.get(problem_id) is not None:
            raise UploadRefused(
                409, [f"problem {problem_id!r} already exists; PUT /api/problems/{problem_id} replaces it"]
            )

    def _save(self, loaded: LoadedProblem, text: str) -> bool:
        with self.db.session() as session:
            created = problem_data.save_uploaded_problem(
                session, problem_id=loaded.id, version=loaded.version, text=text
            )
            self.watcher.uploads_seen = problem_data.uploaded_problem_versions(session)
        self.registry.put_upload(loaded)
        self.on_stored(loaded)
        log.info("problem %s %s by upload (version %s)", loaded.id, "added" if created else "replaced", loaded.version)
        return created

    def delete(self, problem_id: str) -> bool:
        """Removes a stored upload; False when there is none. A file with the same id stays served."""
        with self.db.session() as session:
            deleted = problem_data.delete_uploaded_problem(session, problem_id=problem_id)
            self.watcher.uploads_seen = problem_data.uploaded_problem_versions(session)
        if deleted:
            self.registry.remove_upload(problem_id)
            log.info("uploaded problem %s deleted", problem_id)
        return deleted
