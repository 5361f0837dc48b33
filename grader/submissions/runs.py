"""Runs (POST /api/runs): a module tried on the problem's visible tests, or on a learner's values for the
problem's custom-input test, with the reference's answer beside its own for every test. Not a
submission: nothing is stored, listed or scored.

Learner code never runs where trusted outputs are made (DESIGN.md, the one rule of trust):

  the learner's module   the runs pool: containers of their own, which never run a reference
  the reference          the run-references pool: the problem's own code and validated data only
  expected outputs of graded submissions: the references pool (components.py), which runs never use

A custom input is data: its values are validated here against the problem's declaration (problems/
custom_input.py) and bound in the test's code as literals this side writes; a run that carries test
bodies of its own is refused. The job is built as a submission's is (grading/selection.py: the same
builder, helpers, seeds, limits and checkers), and judged in the judge's bounded processes (`self.judge`).
The visible tests' expected outputs are computed once per problem version in the run-references pool
and cached (expected.py), under a key of their own.

Each run is admitted first (run_limits.py: per client and overall), then waits at most
GRADER_RUN_WAIT_S for a container and GRADER_RUN_TIMEOUT_S in all; its work runs in threads of this
class's own, as many as runs may run at once, so that no request holds a thread of the server's."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from grader import vocabulary
from grader.config_grading import SandboxSettings
from grader.config_groups import RunSettings
from grader.containers.container import SandboxContainer
from grader.containers.losses import SandboxLost
from grader.containers.pool import SandboxPool
from grader.containers.protocol import Outcome
from grader.grading.bounds import bound_verdict
from grader.grading.execution import ModuleRun, NoSandbox, run_module
from grader.grading.expected import Expected, ExpectedCache, ProblemBroken
from grader.grading.isolated import JudgeUnavailable
from grader.grading.judge import LOCAL, Judge, judge_module
from grader.grading.model import Sandboxes
from grader.grading.selection import Selection, one_test, visible_tests
from grader.grading.verdict import RUNNER_TO_TEST, Status, TestStatus, Verdict
from grader.problems.custom_input import InputsRefused
from grader.problems.registry import LoadedProblem
from grader.submissions.intake import SourceText
from grader.submissions.public import TestPublic
from grader.submissions.run_limits import RunLimits
from grader.submissions.submitters import Refused

log = logging.getLogger(__name__)

MAX_INPUT_NAMES = 64
RETRY = {"Retry-After": "5"}
TESTS_GONE = (
    "tests: a run takes no test code of its own any more (learner code never runs beside the reference); "
    "send no `inputs` to run the visible tests, or `inputs` (argument name -> value) for the problem's custom "
    "test: its arguments are listed under `custom_test` in GET /api/problems/{id}"
)


class _GoneTest(BaseModel):
    """A test body as runs once took them: read only so that a request that sends one is told so."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    code: str = ""


class RunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    problem_id: str = Field(min_length=1, max_length=64)
    source: SourceText
    inputs: dict[str, Any] | None = Field(
        None,
        max_length=MAX_INPUT_NAMES,
        description="values for the problem's custom test, by argument name (JSON numbers, true/false, nested "
        "lists for tensors); arguments left out take their defaults. Without it: the visible tests",
    )
    tests: list[_GoneTest] | None = Field(
        None,
        max_length=10,
        description="gone: refused with 422 (runs take values, never code; see `inputs`)",
        json_schema_extra={"deprecated": True},
    )


class RunTestPublic(TestPublic):
    expected: dict[str, Any] | None = Field(
        None, description="what the reference returned, per returned key (type, shape, dtype, a sample)"
    )
    got: dict[str, Any] | None = Field(None, description="what the submission returned, per returned key")
    details_html: str | None = Field(
        None,
        description="`details` drawn as the report page draws them (HTML, escaped): what the problem page shows",
    )


class RunPublic(BaseModel):
    problem_id: str
    kind: Literal["visible", "custom"] = Field(
        "visible", description="what ran: the visible tests, or the custom test on the values sent"
    )
    status: Status
    score: float
    message: str | None = None
    line: int | None = None
    traceback: str | None = None
    tests: list[RunTestPublic]


class _Within:
    """Sandboxes whose hand-out waits at most `wait_s`: a run's bound on waiting for a container."""

    def __init__(self, source: Sandboxes, wait_s: float) -> None:
        self.source = source
        self.wait_s = wait_s

    @property
    def image_id(self) -> str | None:
        return self.source.image_id

    def acquire(self, timeout: float | None = None, due_in_s: float = 3600.0) -> SandboxContainer:
        return self.source.acquire(self.wait_s if timeout is None else min(timeout, self.wait_s), due_in_s)

    def release(self, container: SandboxContainer, reusable: bool) -> None:
        self.source.release(container, reusable)

    def engine_ok(self) -> bool:
        return self.source.engine_ok()


RemoteRun = Callable[[LoadedProblem, RunRequest], RunPublic]


class Runs:
    """`remote`, under Celery in the API: the run is a task on a worker (components.py), which calls
    `execute` there, in its own pools; the answer is the same as on one machine."""

    def __init__(
        self,
        *,
        runs: RunSettings,
        sandbox: SandboxSettings,
        pool: SandboxPool,
        references: SandboxPool,
        load: Callable[[str], bytes | None],
        save: Callable[[str, bytes], None],
        remote: RemoteRun | None = None,
        judge: Judge = LOCAL,
    ) -> None:
        self.runs = runs
        self.sandbox = sandbox  # what a job may take to load and send back
        self.pool = pool
        self.references = references
        self.remote = remote
        self.judge = judge
        self._pool = _Within(pool, runs.wait_s)
        self._references = _Within(references, runs.wait_s)
        self.expected = ExpectedCache(sandbox, self._references, load, save)
        overall = runs.concurrency or 2 * runs.pool_size
        self.limits = RunLimits(runs.rate_per_minute, runs.concurrency_per_client, overall)
        # Every admitted run holds one thread of each until its work ends: no queue forms behind them.
        self._work = ThreadPoolExecutor(max_workers=overall, thread_name_prefix="run")
        self._side = ThreadPoolExecutor(max_workers=overall, thread_name_prefix="run-reference")
        self._lock = threading.Lock()
        self._started = self._closed = False

    # -- lifecycle ------------------------------------------------------------------------------------
    def start(self, after: Callable[[], bool], stopping: threading.Event) -> None:
        """Starts the runs' pools in the background once `after()` holds (the grading pool is full: it
        warms first, and readiness waits for it only); a run that comes before starts them itself."""

        def wait_then_start() -> None:
            while not stopping.is_set() and not after():
                stopping.wait(0.5)
            if not stopping.is_set():
                self.start_pools()

        threading.Thread(target=wait_then_start, name="runs-pools", daemon=True).start()

    def start_pools(self) -> None:
        with self._lock:
            if self._started or self._closed:
                return
            self._started = True
        self.pool.start()
        self.references.start()

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._work.shutdown(wait=False, cancel_futures=True)
        self._side.shutdown(wait=False, cancel_futures=True)
        self.pool.close()
        self.references.close()

    # -- a run ----------------------------------------------------------------------------------------
    async def answer(self, problem: LoadedProblem, request: RunRequest, who: str) -> RunPublic:
        """The run, awaited without holding a thread of the server's; Refused for what a run may not do
        (422), for the client's limits (429) and when no place, container or time is left (503)."""
        self.refuse_early(problem, request)
        admission = self.limits.admit(who)
        try:
            future = self._work.submit(self.execute, problem, request)
        except RuntimeError:  # shutting down
            admission.release()
            raise Refused(503, "the service is stopping", headers=RETRY) from None
        future.add_done_callback(lambda _future: admission.release())
        # Under Celery the call has this same bound and answers 504 itself: a little slack lets it.
        timeout = self.runs.timeout_s + (5.0 if self.remote is not None else 0.0)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout)
        except TimeoutError:
            raise Refused(503, f"the run did not finish within {timeout:g} s; try again", headers=RETRY) from None

    def refuse_early(self, problem: LoadedProblem, request: RunRequest) -> None:
        """What is refused before a run takes any place: test bodies, and inputs for no custom test."""
        if request.tests is not None:
            raise Refused(422, TESTS_GONE)
        if request.inputs is not None and problem.problem.custom_test is None:
            raise Refused(
                422,
                f"inputs: problem {problem.id!r} has no custom test; send no `inputs` to run its visible tests",
            )

    def plan(self, problem: LoadedProblem, request: RunRequest) -> Selection:
        """The tests to run: the visible ones, or the custom test on the validated values (422 otherwise)."""
        self.refuse_early(problem, request)
        custom = problem.problem.custom_test
        if request.inputs is None or custom is None:
            return visible_tests(problem)
        try:
            values = custom.values(request.inputs)
        except InputsRefused as exc:
            raise Refused(422, str(exc)) from None
        return one_test(problem, custom.case(values), "custom")

    def execute(self, problem: LoadedProblem, request: RunRequest) -> RunPublic:
        """The run itself: validated here, then run in this process's pools (or, under Celery, a worker's)."""
        plan = self.plan(problem, request)
        if self.remote is not None:
            return self.remote(problem, request)
        self.start_pools()
        if plan.part == "custom":
            return self._custom(problem, plan, request.source)
        return self._visible(problem, plan, request.source)

    def _visible(self, problem: LoadedProblem, plan: Selection, source: str) -> RunPublic:
        reference = self._side.submit(self._expected, plan)
        submission = self._module(self._pool, plan, source)
        try:
            expected = reference.result()
        except ProblemBroken as exc:
            return RunPublic(problem_id=problem.id, status=Status.INTERNAL_ERROR, score=0.0, message=str(exc), tests=[])
        return self._judged(problem, plan, expected, submission, "visible")

    def _custom(self, problem: LoadedProblem, plan: Selection, source: str) -> RunPublic:
        reference_future = self._side.submit(self._module, self._references, plan, problem.reference, False)
        submission = self._module(self._pool, plan, source)
        reference = reference_future.result()
        failed = _reference_failure(reference)
        if failed is not None and submission.loaded:
            # No expected output to compare with: what the submission did is still shown.
            message = f"the reference solution fails on these inputs ({failed}); try other values"
            shown = self._judged(problem, plan, Expected([None], []), submission, "custom")
            for test in shown.tests:
                if test.status == TestStatus.FAILED:
                    test.status, test.message, test.details = TestStatus.SKIPPED, "no expected output", None
            return shown.model_copy(update={"status": Status.INTERNAL_ERROR, "message": message})
        return self._judged(problem, plan, Expected([reference.body(0)], []), submission, "custom")

    def _expected(self, plan: Selection) -> Expected:
        try:
            return self.expected.get(plan, self.references.image_id or "unknown", None)
        except (NoSandbox, SandboxLost) as exc:
            raise Refused(503, f"no sandbox for the reference now: {exc}", headers=RETRY) from None

    def _module(self, sandboxes: Sandboxes, plan: Selection, source: str, rules: bool = True) -> ModuleRun:
        """A module's run; rules: False for the reference (the problem's own code is not held to its forbid)."""
        try:
            return run_module(sandboxes, plan, source, self.sandbox, rules=rules)
        except NoSandbox as exc:
            raise Refused(503, f"no sandbox to run in now: {exc}", headers=RETRY) from None

    def _judged(
        self, problem: LoadedProblem, plan: Selection, expected: Expected, submission: ModuleRun, kind: str
    ) -> RunPublic:
        try:
            verdict = bound_verdict(judge_module(plan, expected, submission, judge=self.judge))
            keys = [(side, result.index) for result in verdict.tests for side in ("expected", "got")]
            bodies = [expected.body(i) if side == "expected" else submission.body(i) for side, i in keys]
            described = dict(zip(keys, self.judge.describe(bodies), strict=True))
        except JudgeUnavailable as exc:
            raise Refused(503, f"cannot judge a run now: {exc}", headers=RETRY) from None
        return _public(problem.id, plan, verdict, described, kind)


def _reference_failure(reference: ModuleRun) -> str | None:
    """How the reference failed on a custom input, in words that show nothing of its code; None if it did not."""
    run = reference.tests.get(0)
    if reference.load is not None and reference.load.status != Outcome.OK:
        return "it does not load"
    if run is None:
        return "it crashed" if reference.crashed else "it returned nothing"
    status = run.header.status
    if status == Outcome.OK:
        return None
    if status == Outcome.ERROR:
        return f"it raises {run.header.error_type or 'an exception'}"
    test_status = RUNNER_TO_TEST.get(status)
    return vocabulary.TEST[test_status].short if test_status is not None else status.value


def _public(
    problem_id: str, plan: Selection, verdict: Verdict, described: dict[tuple[str, int], Any], kind: str
) -> RunPublic:
    """Every test with expected beside got; a visible test's index is its place in the problem."""
    tests: list[RunTestPublic] = []
    for result in verdict.tests:
        shown = RunTestPublic(**result.model_dump(include=set(TestPublic.model_fields)))
        shown.index = plan.positions[result.index] if kind == "visible" else None
        shown.expected = described.get(("expected", result.index))
        shown.got = described.get(("got", result.index))
        tests.append(shown)
    return RunPublic(
        problem_id=problem_id,
        kind=kind,  # type: ignore[arg-type]
        status=verdict.status,
        score=verdict.score,
        message=verdict.message,
        line=verdict.line,
        traceback=verdict.traceback,
        tests=tests,
    )
