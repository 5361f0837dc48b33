"""Runs (POST /api/runs): a submission tried on the problem's visible tests, or on test bodies its
author writes, with the reference's answer beside its own for every test. Not a submission: nothing
is stored, listed or scored. The reference runs in a container of its own (never one that ran a
submission), at the same time as the submission runs in the grading pool."""

from __future__ import annotations

import re
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from grader.config import Settings
from grader.grading.bounds import bound_verdict
from grader.grading.compare import describe_outputs
from grader.grading.execution import MISSING, ModuleRun, NoSandbox, run_module
from grader.grading.expected import Expected
from grader.grading.judge import judge_module
from grader.grading.model import Sandboxes
from grader.grading.verdict import Status, TestStatus, Verdict
from grader.problems.registry import EffectiveLimits, LoadedProblem
from grader.problems.schema import TestCase
from grader.submissions.public import TestPublic
from grader.submissions.submitters import Refused

MAX_CUSTOM_TESTS = 10
MAX_TEST_CODE = 8 * 1024
RATE_WINDOW_S = 60.0


class CustomTest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, max_length=200)
    code: str = Field(min_length=1, max_length=MAX_TEST_CODE, description="a test body, as a problem's `code`")


class RunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    problem_id: str = Field(min_length=1, max_length=64)
    source: str
    tests: list[CustomTest] | None = Field(
        None, max_length=MAX_CUSTOM_TESTS, description="test bodies to run instead of the visible tests"
    )


class RunTestPublic(TestPublic):
    expected: dict[str, Any] | None = Field(
        None, description="what the reference returned, per returned key (type, shape, dtype, a sample)"
    )
    got: dict[str, Any] | None = Field(None, description="what the submission returned, per returned key")


class RunPublic(BaseModel):
    problem_id: str
    status: Status
    score: float
    message: str | None = None
    line: int | None = None
    traceback: str | None = None
    tests: list[RunTestPublic]


@dataclass(frozen=True)
class _RunProblem:
    """The problem as a run sees it: the tests to run, all visible, on fixed inputs, no pitfalls."""

    id: str
    version: str
    entry_points: list[str]
    reference: str
    limits: EffectiveLimits
    tests: list[TestCase]
    pitfalls: list[Any] = field(default_factory=list)


class RateWindow:
    """At most `limit` runs per submitter in any minute, in this process (runs are not stored)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._times: dict[str, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()

    def take(self, who: str) -> None:
        if not self.limit:
            return
        now = time.monotonic()
        with self._lock:
            times = self._times[who]
            while times and times[0] <= now - RATE_WINDOW_S:
                times.popleft()
            if len(times) >= self.limit:
                wait = max(1, int(times[0] + RATE_WINDOW_S - now) + 1)
                raise Refused(
                    429, f"rate limit: at most {self.limit} runs per minute", headers={"Retry-After": str(wait)}
                )
            times.append(now)


RemoteRun = Callable[[LoadedProblem, RunRequest], RunPublic]


class Runs:
    """`remote`, under Celery in the API: the run is a task on a worker (components.py), which calls
    `execute` there; the answer is the same as on one machine."""

    def __init__(
        self, settings: Settings, pool: Sandboxes, references: Sandboxes, remote: RemoteRun | None = None
    ) -> None:
        self.settings = settings
        self.pool = pool
        self.references = references
        self.remote = remote
        self.rate = RateWindow(settings.rate_limit_per_minute)
        self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="run")

    def run(self, problem: LoadedProblem, request: RunRequest, who: str) -> RunPublic:
        """Runs the submission and the reference side by side; Refused for what a run may not do."""
        if request.tests is not None and problem.problem.runs == "visible-only":
            raise Refused(422, f"tests: problem {problem.id!r} runs its visible tests only")
        self.rate.take(who)
        if self.remote is not None:
            return self.remote(problem, request)
        return self.execute(problem, request)

    def execute(self, problem: LoadedProblem, request: RunRequest) -> RunPublic:
        """The run itself, in this process's sandboxes."""
        tests, broken = self._tests(problem, request.tests)
        run_problem = _RunProblem(
            problem.id, f"{problem.version}:run", problem.entry_points, problem.reference, problem.limits, tests
        )
        if tests:
            reference_future = self._executor.submit(self._module, self.references, run_problem, problem.reference)
            submission_future = self._executor.submit(self._module, self.pool, run_problem, request.source)
            reference, submission = reference_future.result(), submission_future.result()
            verdict = self._judge(run_problem, reference, submission)
        else:
            reference = submission = None
            verdict = Verdict(status=Status.COMPILE_ERROR, message="no test to run")
        return _public(problem.id, verdict, broken, len(request.tests or []) or len(tests), reference, submission)

    def _module(self, sandboxes: Sandboxes, problem: _RunProblem, source: str) -> ModuleRun:
        try:
            return run_module(sandboxes, problem, source, self.settings)  # type: ignore[arg-type]
        except NoSandbox as exc:
            raise Refused(503, f"no sandbox to run in now: {exc}", headers={"Retry-After": "5"}) from None

    def _tests(self, problem: LoadedProblem, custom: list[CustomTest] | None) -> tuple[list[TestCase], dict[int, str]]:
        """The tests to run, and the custom ones that do not compile (position -> message)."""
        if custom is None:
            return [test.model_copy(update={"seed": "fixed"}) for test in problem.tests if test.visible], {}
        tests, broken = [], {}
        for number, test in enumerate(custom, start=1):
            name = test.name or f"your test {number}"
            try:
                tests.append(TestCase(name=name, visible=True, code=test.code, seed="fixed"))
            except ValidationError as exc:
                broken[number - 1] = str(exc.errors()[0].get("msg", "does not compile")).removeprefix("Value error, ")
        return tests, broken

    def _judge(self, problem: _RunProblem, reference: ModuleRun, submission: ModuleRun) -> Verdict:
        if not reference.loaded:
            return Verdict(status=Status.INTERNAL_ERROR, message="the problem's reference does not load")
        expected = Expected([reference.value(i) for i in range(len(problem.tests))], [])
        return bound_verdict(judge_module(problem, expected, submission))  # type: ignore[arg-type]


def _public(
    problem_id: str,
    verdict: Verdict,
    broken: dict[int, str],
    count: int,
    reference: ModuleRun | None,
    submission: ModuleRun | None,
) -> RunPublic:
    """Every test in the order asked, with expected beside got; a custom test that does not compile is
    its own error, and makes the run a compile_error."""
    results = iter(verdict.tests)
    tests: list[RunTestPublic] = []
    for position in range(count):
        if position in broken:
            line = re.search(r"line (\d+)", broken[position])
            tests.append(
                RunTestPublic(
                    name=f"your test {position + 1}",
                    visible=True,
                    status=TestStatus.ERROR,
                    message=f"compile error: {broken[position]}",
                    line=int(line.group(1)) if line else None,
                )
            )
            continue
        result = next(results, None)
        if result is None:
            break
        shown = RunTestPublic(**result.model_dump(include=set(TestPublic.model_fields)))
        index = result.index
        for side, run in (("expected", reference), ("got", submission)):
            value = run.value(index) if run is not None else MISSING
            if value is not MISSING:
                setattr(shown, side, describe_outputs(value))
        tests.append(shown)
    status = Status.COMPILE_ERROR if broken else verdict.status
    message = f"{len(broken)} of your tests do not compile" if broken else verdict.message
    return RunPublic(
        problem_id=problem_id,
        status=status,
        score=verdict.score,
        message=message,
        line=verdict.line,
        traceback=verdict.traceback,
        tests=tests,
    )
