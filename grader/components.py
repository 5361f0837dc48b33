"""The service's parts, each owning one thing, wired together in this one place.

    db          the database (storage/)
    registry    the problems served (problems/registry.py), kept current by the watcher
    pool        warm sandbox containers (containers/pool.py); empty in a Celery-mode API
    references  a warm container or two that never run a submission: the reference's runs, for graded
                submissions only
    judge       the processes where what sandboxes return is judged, under the kernel's limits
                (grading/isolated.py)
    expected    expected outputs per problem version and seed (grading/expected.py)
    seeds       the seeds hidden tests' inputs are drawn from (grading/seeds.py)
    grader      source -> verdict (grading/grader.py)
    dispatcher  how a stored submission reaches a grader: local queue or Celery (queue/)
    leases      running submissions' leases, renewed and reaped (queue/leases.py)
    processor   a stored submission graded and its verdict stored (submissions/processing.py)
    intake      a submission taken in: limits, idempotency, storing, queueing, waiting
    runs        POST /api/runs (submissions/runs.py), with two pools of its own: the learner's code in one,
                the reference on a learner's input in the other, started once the grading pool is full
    uploads     problems added through the admin API, checked first (problems/uploads.py)

role="server" is the HTTP service: with GRADER_QUEUE=local it grades too; with celery it stores and
enqueues only. role="worker" is `grader worker` (grader/worker.py): it grades what Celery delivers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from sqlalchemy import text

from grader.config import Settings
from grader.config_grading import LimitsSettings, SandboxSettings
from grader.containers.container import owner_label
from grader.containers.pool import SandboxPool
from grader.grading.execution import job_bound_s
from grader.grading.expected import ExpectedCache
from grader.grading.grader import Grader
from grader.grading.isolated import IsolatedJudge
from grader.grading.model import ProblemSpec
from grader.grading.seeds import SeedPool, draws_fresh
from grader.metrics import Metrics
from grader.problems.check import CheckReport, SandboxUnavailable
from grader.problems.check.report import check_seeds
from grader.problems.registry import LoadedProblem, Registry
from grader.problems.uploads import CheckTimeout, Uploads, check_upload
from grader.problems.watcher import ProblemWatcher
from grader.queue import Dispatcher, backends
from grader.queue.calls import CHECK_TASK, RUN_TASK, CheckAnswer, CheckCall, Refusal, RunAnswer, RunCall
from grader.queue.leases import Leases
from grader.storage import crud, problem_data
from grader.storage.db import Database
from grader.storage.migrate import upgrade_to_head
from grader.submissions.intake import Intake
from grader.submissions.notifier import Notifier
from grader.submissions.processing import Processor
from grader.submissions.regrade import regrade
from grader.submissions.runs import RunPublic, RunRequest, Runs
from grader.submissions.submitters import Refused, SubmitterAuth
from grader.submissions.webhooks import Deliverer

log = logging.getLogger(__name__)
Call = Callable[[Any], Any]  # a worker's answer to one call (grader/queue/calls.py)

REFERENCE_CONTAINERS = 1


@dataclass
class Components:
    settings: Settings
    role: backends.Role
    db: Database
    registry: Registry
    pool: SandboxPool
    references: SandboxPool
    judge: IsolatedJudge
    expected: ExpectedCache
    seeds: SeedPool
    grader: Grader
    notifier: Notifier
    metrics: Metrics
    leases: Leases
    watcher: ProblemWatcher
    processor: Processor
    dispatcher: Dispatcher
    intake: Intake
    uploads: Uploads
    runs: Runs
    webhooks: Deliverer
    submitters: SubmitterAuth
    _stopping: threading.Event = field(default_factory=threading.Event)

    @property
    def grades_here(self) -> bool:
        return backends.grades_here(self.settings.queueing, self.role)

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        upgrade_to_head(self.db.engine)
        self.watcher.load()
        self.watcher.start()
        self.pool.start()
        self.references.start()
        if self.grades_here:
            self.judge.start(self.settings.sandbox.pool_size)
            threading.Thread(target=self._prepare_expected, name="expected-outputs", daemon=True).start()
            self.leases.start()
            self.webhooks.start()
            self.runs.start(lambda: self.pool.ready, self._stopping)
        if self.role == "server":  # where submissions come in, and so where their seeds are drawn
            self.seeds.start()
        self.dispatcher.start()
        if backends.grades_where_taken(self.settings.queueing):
            # This process was the only grader: whatever it left queued or running is graded again.
            with self.db.session() as session:
                pending = crud.unfinished_submission_ids(session)
            if pending:
                log.info("resuming %d submissions left queued or running", len(pending))
                threading.Thread(target=self._resume, args=(pending,), daemon=True).start()

    def stop(self) -> None:
        self._stopping.set()
        self.watcher.stop()
        self.leases.stop()
        self.seeds.stop()
        self.webhooks.stop()
        self.dispatcher.stop()
        self.pool.close()
        self.references.close()
        self.runs.close()
        self.judge.close()
        self.db.engine.dispose()

    def _prepare_expected(self) -> None:
        """Computes each problem's expected outputs before its first submission asks for them: on fixed
        inputs here; under fresh seeds, the seed pool does it."""
        if self.pool.image_id is None:
            return
        for problem in self.registry.all():
            if self._stopping.is_set():
                return
            if draws_fresh(problem) and self.settings.seeding.mode != "fixed":
                continue
            try:
                self.expected.get(problem, self.pool.image_id, self.seeds.draw(problem))
            except Exception as exc:  # reported again, as internal_error, to whoever submits
                log.warning("expected outputs of %s unavailable: %s", problem.id, exc)

    def _resume(self, pending: list[str]) -> None:
        for submission_id in pending:
            self.dispatcher.submit_blocking(submission_id)

    # -- state -----------------------------------------------------------------------------------
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
        broker_error = self.dispatcher.broker_error()
        return broker_error is None, broker_error

    def regrade(self, problem_id: str) -> int:
        return regrade(self.settings.queueing, self.db, self.registry, self.dispatcher.submit_blocking, problem_id)


def max_grading_s(sandbox: SandboxSettings, registry: Registry) -> float:
    """The longest one grading can take: waiting for a sandbox, then two containers' worth of the longest
    job any problem has, with slack. Past it, the grading's lease is no longer renewed."""
    longest_job = max((job_bound_s(problem, sandbox) for problem in registry.all()), default=60.0)
    return sandbox.acquire_timeout_s + 2 * longest_job + 60.0


def build(settings: Settings, *, role: backends.Role = "server") -> Components:
    """Every part, wired, each given its group of the settings; nothing started (start() does that)."""
    sandbox, limits, queueing, storage = settings.sandbox, settings.limits, settings.queueing, settings.storage
    storage.data_dir.mkdir(parents=True, exist_ok=True)
    grades_here = backends.grades_here(queueing, role)
    db = Database(storage.sqlalchemy_url)
    registry = _registry(limits)
    owner = owner_label(storage.data_dir)  # of the service's containers: a restart removes what it left
    pool, references = _pools(sandbox, limits, owner, grades_here)

    load_expected, save_expected = problem_data.expected_store(db, storage.expected_cache_mb)
    expected = ExpectedCache(sandbox, references, load_expected, save_expected)
    judge = IsolatedJudge(settings.judge.memory_mb, settings.judge.cpu_s, settings.judge_process_cap)
    seeds = _seeds(settings, grades_here, expected, references, registry)
    grader = Grader(sandbox, pool, expected, judge)
    notifier = Notifier()
    # The dispatcher needs the processor, which needs what needs it: these closures read it once assigned below.
    dispatcher: Dispatcher
    metrics = Metrics(db, lambda: dispatcher.depth, pool.status)
    watcher = ProblemWatcher(settings.problems, db, registry)
    leases = Leases(
        queueing,
        db,
        metrics,
        resubmit=lambda submission_id: dispatcher.submit_blocking(submission_id),
        max_grading_s=lambda: max_grading_s(sandbox, registry),
    )
    webhooks = Deliverer(settings.webhooks, db, registry, metrics)
    processor = Processor(
        queueing=queueing,
        db=db,
        registry=registry,
        grader=grader,
        notifier=notifier,
        leases=leases,
        metrics=metrics,
        refresh_problems=watcher.poll_now,
        after_verdict=lambda _id: webhooks.kick(),
    )
    runs = _runs(settings, grades_here, owner, load_expected, save_expected, judge)
    calls = _calls(settings, registry, watcher, expected, runs) if role == "worker" else {}
    dispatcher = backends.dispatcher(
        queueing, role, db=db, graders=sandbox.pool_size, handler=processor.process, progress=notifier, calls=calls
    )
    check, checked = _upload_check(settings, grades_here, dispatcher, expected, runs), settings.problems.check_seeds
    intake = Intake(
        queueing=queueing,
        access=settings.access,
        limits=limits,
        webhooks=settings.webhooks,
        db=db,
        registry=registry,
        dispatcher=dispatcher,
        notifier=notifier,
        metrics=metrics,
        seeds=seeds,
    )
    return Components(
        settings=settings,
        role=role,
        db=db,
        registry=registry,
        pool=pool,
        references=references,
        judge=judge,
        expected=expected,
        seeds=seeds,
        grader=grader,
        notifier=notifier,
        metrics=metrics,
        leases=leases,
        watcher=watcher,
        processor=processor,
        dispatcher=dispatcher,
        intake=intake,
        uploads=Uploads(db, registry, watcher, check, on_stored=lambda p: seeds.offer(p, check_seeds(p, checked))),
        runs=runs,
        webhooks=webhooks,
        submitters=SubmitterAuth(settings.access),
    )


def _seeds(
    settings: Settings, grades_here: bool, expected: ExpectedCache, references: SandboxPool, registry: Registry
) -> SeedPool:
    def prepare(problem: ProblemSpec, seed: int) -> None:
        # A Celery-mode API runs no reference: its seeds are ready at once, and the first worker to grade
        # with one computes its expected outputs, kept in the shared database for every other worker.
        if grades_here:
            expected.get(problem, references.image_id or "unknown", seed)

    return SeedPool(settings.seeding, prepare, registry.all)


def _pools(
    sandbox: SandboxSettings, limits: LimitsSettings, owner: str, grades_here: bool
) -> tuple[SandboxPool, SandboxPool]:
    """The grading pool and the references'. A Celery-mode API keeps no warm containers; it checks uploads in
    sandboxes of the check's own. References run in containers that never run a submission (nothing a
    submission leaves can reach them)."""
    pool = SandboxPool(sandbox, limits, owner=owner, size=None if grades_here else 0)
    size = REFERENCE_CONTAINERS if grades_here else 0
    return pool, SandboxPool(sandbox, limits, owner=f"{owner}-references", size=size, keep_image=False)


def _registry(limits: LimitsSettings) -> Registry:
    """The problems served: each test's limits, where neither it nor its problem sets them, the server's."""
    return Registry(limits.defaults, max_memory_mb=limits.max_memory_mb, devices=limits.device_list)


def _runs(
    settings: Settings,
    grades_here: bool,
    owner: str,
    load: Callable[[str], bytes | None],
    save: Callable[[str, bytes], None],
    judge: IsolatedJudge,
) -> Runs:
    """Runs never use the pools above: learner code on Run gets containers of its own, and so does the
    reference on a learner's input (a Celery-mode API has none: its runs are tasks on a worker)."""
    runs, sandbox, limits = settings.runs, settings.sandbox, settings.limits
    size = runs.pool_size if grades_here else 0
    pool = SandboxPool(sandbox, limits, owner=f"{owner}-runs", size=size, keep_image=False)
    references = SandboxPool(sandbox, limits, owner=f"{owner}-run-references", size=size, keep_image=False)
    return Runs(runs=runs, sandbox=sandbox, pool=pool, references=references, load=load, save=save, judge=judge)


# -- under Celery: an upload's check and a run, as calls answered by a worker (typed: queue/calls.py) --------
def _calls(
    settings: Settings, registry: Registry, watcher: ProblemWatcher, expected: ExpectedCache, runs: Runs
) -> dict[str, Call]:
    """What a worker answers: the check (seeding the expected outputs, in the shared database) and runs."""

    def check(call: CheckCall) -> CheckAnswer:
        try:
            report = check_upload(
                settings.problems, settings.sandbox, settings.limits, expected, call.text, call.source
            )
        except SandboxUnavailable as exc:
            return CheckAnswer(unavailable=str(exc))
        return CheckAnswer(report=report.model_dump(mode="json"))

    def run(call: RunCall) -> RunAnswer:
        problem = registry.get(call.problem_id)
        if problem is None or problem.version != call.version:
            watcher.poll_now()  # uploaded or changed since this worker last looked
            problem = registry.get(call.problem_id)
        if problem is None or problem.version != call.version:
            detail = f"problem {call.problem_id!r} changed while the run waited; run it again"
            return RunAnswer(refused=Refusal(status=409, detail=detail))
        try:
            return RunAnswer(run=runs.execute(problem, RunRequest.model_validate(call.request)).model_dump(mode="json"))
        except Refused as refused:
            return RunAnswer(refused=Refusal(status=refused.status, detail=refused.detail))

    return {CHECK_TASK: check, RUN_TASK: run}


def _upload_check(
    settings: Settings, grades_here: bool, dispatcher: Dispatcher, expected: ExpectedCache, runs: Runs
) -> Callable[[str, str], CheckReport]:
    """An upload's check here; in a Celery-mode API, the check and runs become calls to the workers."""
    if grades_here:
        return partial(check_upload, settings.problems, settings.sandbox, settings.limits, expected)
    runs.remote = partial(_remote_run, dispatcher, settings.runs.timeout_s)
    return partial(_remote_check, dispatcher, settings.problems.upload_check_timeout_s)


def _remote_check(dispatcher: Any, timeout_s: float, text: str, source: str) -> CheckReport:
    from grader.queue.celery_app import RemoteTimeout, RemoteUnavailable

    try:
        answer = dispatcher.call(CHECK_TASK, CheckCall(text=text, source=source), timeout_s)
    except RemoteTimeout as exc:
        raise CheckTimeout(f"no worker finished its check within {timeout_s:g} s") from exc
    except RemoteUnavailable as exc:
        raise SandboxUnavailable(str(exc)) from exc
    if answer.report is None:
        raise SandboxUnavailable(answer.unavailable or answer.error or "the worker sent no report")
    return CheckReport.model_validate(answer.report)


def _remote_run(dispatcher: Any, timeout_s: float, problem: LoadedProblem, request: RunRequest) -> RunPublic:
    from grader.queue.celery_app import RemoteTimeout, RemoteUnavailable

    call = RunCall(problem_id=problem.id, version=problem.version, request=request.model_dump(mode="json"))
    try:
        answer = dispatcher.call(RUN_TASK, call, timeout_s)
    except RemoteTimeout:
        raise Refused(504, f"no worker ran it within {timeout_s:g} s; try again") from None
    except RemoteUnavailable as exc:
        raise Refused(503, f"cannot run now: {exc}", headers={"Retry-After": "5"}) from None
    if answer.run is not None:
        return RunPublic.model_validate(answer.run)
    if answer.refused is not None:
        status, detail = answer.refused.status, answer.refused.detail
        raise Refused(status, detail, headers={"Retry-After": "5"} if status == 503 else None)
    raise Refused(503, f"the run failed on the worker: {answer.error or '?'}", headers={"Retry-After": "5"})
