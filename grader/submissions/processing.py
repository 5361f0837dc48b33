"""Grading a stored submission: take it (one conditional UPDATE), grade it, store the verdict; never
leave it running. The function every dispatcher calls: the local queue's threads and the Celery task."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Row

from grader import phases
from grader.config_groups import QueueSettings
from grader.grading.grader import Grader
from grader.grading.verdict import Status, Verdict
from grader.logs import submission_logging
from grader.metrics import Metrics
from grader.problems.registry import LoadedProblem, Registry
from grader.queue.leases import Leases
from grader.storage import crud, leaderboard
from grader.storage.db import Database
from grader.submissions.notifier import Notifier
from grader.submissions.progress import ProgressWriter

log = logging.getLogger(__name__)


class Processor:
    def __init__(
        self,
        *,
        queueing: QueueSettings,
        db: Database,
        registry: Registry,
        grader: Grader,
        notifier: Notifier,
        leases: Leases,
        metrics: Metrics,
        refresh_problems: Callable[[], None],
        after_verdict: Callable[[str], None] = lambda submission_id: None,  # with a callback_url
    ) -> None:
        self.queueing = queueing  # the lease a grading holds, and how many starts a submission gets
        self.db = db
        self.registry = registry
        self.grader = grader
        self.notifier = notifier
        self.leases = leases
        self.metrics = metrics
        self.refresh_problems = refresh_problems
        self.after_verdict = after_verdict  # the webhook's delivery, for one

    def process(self, submission_id: str, taken: Row[Any] | None = None) -> None:
        """Grades one stored submission and stores its verdict. Does nothing for a submission that is
        final, or leased to another worker's live attempt. `taken`: its row, when it was stored already
        taken for this call (crud.create_submission's taken_for_s)."""
        with submission_logging(submission_id), phases.recording() as spent:
            if self._grade_stored(submission_id, taken):
                self._observe(spent)

    def _observe(self, spent: dict[str, float]) -> None:
        try:
            for phase, seconds in spent.items():
                self.metrics.phase_seconds.labels(phase).observe(seconds)
            self.metrics.phase_seconds.labels("transport").observe(phases.transport(spent))
            self.metrics.phase_samples.inc()
        except Exception:  # the metrics are a courtesy: the verdict is stored
            log.exception("recording where the time went failed")

    def _take(self, submission_id: str) -> Row[Any] | None:
        """The submission's row, taken for grading here; None when it is not to be graded here."""
        max_starts = self.queueing.max_grading_starts
        with phases.timed("take"), self.db.session() as session:
            submission = crud.mark_running(
                session, submission_id=submission_id, lease_s=self.queueing.lease_s, max_starts=max_starts
            )
            if submission is None:
                if crud.give_up_unfinished(
                    session, submission_id=submission_id, max_starts=max_starts, message=given_up(max_starts)
                ):
                    self._given_up(submission_id, max_starts)
                else:
                    log.info("not graded here: already final, or being graded under a live lease")
            return submission

    def _grade_stored(self, submission_id: str, taken: Row[Any] | None) -> bool:
        """Whether it was graded here."""
        max_starts = self.queueing.max_grading_starts
        taken_at = datetime.now(UTC)
        submission = taken if taken is not None else self._take(submission_id)
        if submission is None:
            return False
        # This grading attempt owns the submission until a regrade or a lapsed lease hands it on; what
        # it stores after that is dropped, so a stale verdict never overwrites a newer attempt's.
        problem_id, source, attempt = submission.problem_id, submission.source, submission.attempts
        seed = submission.seed
        starts = submission.grading_starts
        submitted_version, created_at = submission.problem_version, submission.created_at
        webhook = submission.callback_url is not None
        self.leases.hold(submission_id, attempt)
        log.info("grading started: attempt %d, start %d of at most %d", attempt, starts, max_starts)
        started = time.monotonic()
        try:
            if attempt == 1:
                waited = max(0.0, _seconds_between(created_at, taken_at))
                self.metrics.queue_wait_seconds.observe(waited)
                phases.add("queue", waited)
            self.notifier.notify(submission_id)
            problem = self._problem(problem_id, submitted_version)
            verdict = self._grade(submission_id, problem, problem_id, source, seed)
            with phases.timed("store"):
                verdict, stored = self._store(submission_id, verdict, problem, attempt)
        finally:
            self.leases.release(submission_id)
        elapsed = time.monotonic() - started
        self.notifier.notify(submission_id, final=True, row=stored)  # first: whoever waits needs nothing else
        self.metrics.grading_seconds.labels(verdict.status.value).observe(elapsed)
        self.metrics.verdicts.labels(verdict.status.value).inc()
        log.info("graded: %s, score %.3f, %.0f ms, attempt %d", verdict.status, verdict.score, elapsed * 1000, attempt)
        if webhook:
            try:
                self.after_verdict(submission_id)
            except Exception:  # a delivery is retried by its own loop; grading is done
                log.exception("starting the delivery of %s failed", submission_id)
        return True

    def _given_up(self, submission_id: str, max_starts: int) -> None:
        self.metrics.given_up.inc()
        self.metrics.verdicts.labels(Status.INTERNAL_ERROR.value).inc()
        log.error("given up: grading was started %d times without finishing", max_starts)
        self.notifier.notify(submission_id, final=True)
        try:
            self.after_verdict(submission_id)
        except Exception:  # a delivery is retried by its own loop
            log.exception("starting the delivery of %s failed", submission_id)

    def _problem(self, problem_id: str, submitted_version: str) -> LoadedProblem | None:
        problem = self.registry.get(problem_id)
        if problem is None or problem.version != submitted_version:
            # Another process may have added or changed it (an upload through the API) since this one looked.
            self.refresh_problems()
            problem = self.registry.get(problem_id)
        return problem

    def _grade(
        self, submission_id: str, problem: LoadedProblem | None, problem_id: str, source: str, seed: int | None
    ) -> Verdict:
        if problem is None:
            return Verdict(status=Status.INTERNAL_ERROR, message=f"problem {problem_id!r} no longer exists")
        landed = ProgressWriter(self.db, self.notifier, submission_id)
        try:
            return self.grader.grade_submission(problem, source, on_test=landed, seed=seed)
        finally:
            landed.close()

    def _store(
        self, submission_id: str, verdict: Verdict, problem: LoadedProblem | None, attempt: int
    ) -> tuple[Verdict, Row[Any] | None]:
        """Stores the verdict; if that fails, a verdict that says so. What is stored is returned, and the
        row as stored (None when this attempt no longer owns the submission, or storing failed)."""
        version = problem.version if problem is not None else None
        try:
            with self.db.session() as session:
                stored = crud.finish_submission(
                    session, submission_id=submission_id, verdict=verdict, problem_version=version, attempt=attempt
                )
                if stored is not None and problem is not None and problem.speed is not None:
                    self._enter(session, stored)  # a better entry, or a regraded one taken down
            return verdict, stored
        except Exception as exc:  # the judge's fault; the lease reaper takes over if this fails too
            log.exception("storing the verdict of %s failed", submission_id)
            fallback = Verdict(
                status=Status.INTERNAL_ERROR, message=f"the judge could not store the verdict ({type(exc).__name__})"
            )
            with self.db.session() as session:
                crud.finish_submission(
                    session, submission_id=submission_id, verdict=fallback, problem_version=version, attempt=attempt
                )
            return fallback, None

    @staticmethod
    def _enter(session: Any, stored: Row[Any]) -> None:
        """A speed-graded verdict onto its problem's leaderboard (a courtesy: the verdict is stored already)."""
        try:
            leaderboard.record(session, stored)
        except Exception:
            session.rollback()
            log.exception("entering %s on the leaderboard failed", stored.id)


def given_up(max_starts: int) -> str:
    """The message of a submission given up after GRADER_MAX_GRADING_STARTS gradings that never finished."""
    return (
        f"grading was started {max_starts} times without finishing (each time, the grader working on it was"
        " lost: killed, or out of memory); it is not tried again. Check the submission for what could take"
        " the grader down, or ask an administrator to regrade it."
    )


def _seconds_between(moment: datetime, later: datetime) -> float:
    # SQLite hands back naive datetimes; every stored time is UTC.
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return (later - aware).total_seconds()
