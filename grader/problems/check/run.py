"""Problem files that check themselves, before anyone is graded against them.

The steps, in order, each reported as soon as it is known:

  schema         the file parses and validates (no sandbox)
  reference      the reference loads and every test returns a value: it is accepted
  deterministic  a second run of the reference, in another sandbox, gives identical outputs
  starter        the starter code loads and is not accepted
  pitfalls       every pitfall fails at least one test (the report says which)
  alternatives   every alternative (another correct solution) is accepted
  tolerances     an all-zeros answer and the reference's answer with 1% relative noise each fail some
                 test that returns floats; the reference computed in float64 (oracle.py) passes every test
  impostors      no test is passed by an answer that ignores the question (impostors.py), unless it says why
  custom         (a problem with a custom-input test) on its defaults the reference answers, the same in
                 two sandboxes, and every alternative is accepted

The check is a caller of grading, not a second grader: every module runs through run_module and is
judged by judge_module, as a submission is (grader/grading/). It runs in sandboxes of its own, two
at a time: a private pool of two warm containers, or whatever `sandboxes` it is given.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from grader.config_grading import LimitsSettings, SandboxSettings
from grader.containers.container import SandboxContainer
from grader.containers.losses import SandboxLost
from grader.containers.pool import SandboxPool
from grader.grading.execution import ModuleRun, NoSandbox, run_module
from grader.grading.judge import Expected, judge_module
from grader.grading.model import ProblemSpec, Sandboxes
from grader.grading.seeds import draws_fresh
from grader.grading.selection import one_test
from grader.problems.check.authoring import file_findings, reference_findings
from grader.problems.check.custom import custom_step
from grader.problems.check.impostors import identity_source, impostor_step
from grader.problems.check.locate import Locator
from grader.problems.check.oracle import oracle_source
from grader.problems.check.report import (
    SEEDS_CHECKED,
    STEPS,
    CheckReport,
    CheckStep,
    StepStatus,
    check_seeds,
    merge_steps,
)
from grader.problems.check.speed import speed_step
from grader.problems.check.steps import (
    alternatives_step,
    determinism_step,
    pitfalls_step,
    reference_step,
    starter_step,
)
from grader.problems.check.tolerances import tolerance_step
from grader.problems.registry import LoadedProblem, ProblemError, Registry

log = logging.getLogger(__name__)
ONE, BOTH = frozenset({0}), frozenset({0, 1})  # trusted positions: the reference's runs

LANES = 2  # modules run at once: the reference's two runs land in two different containers

__all__ = ["CheckReport", "CheckStep", "ProblemChecker", "SandboxUnavailable", "StepStatus"]


class SandboxUnavailable(Exception):
    """No sandbox could be started or kept alive: the judge's problem, not the problem file's."""


class ProblemChecker:
    """Checks problem files in real sandboxes; reuse one for many files, then close() it (or use `with`)
    so that every container it started is removed."""

    def __init__(
        self,
        sandbox: SandboxSettings,
        limits: LimitsSettings,
        sandboxes: Sandboxes | None = None,
        *,
        seeds: int = SEEDS_CHECKED,
        budget_s: float | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.limits = limits
        # How many seeds a problem with fresh inputs is checked under, and the seconds its rounds may take
        # (None: no bound): a round that would end past the budget is not started.
        self.seeds = seeds
        self.budget_s = budget_s
        self._registry = Registry(
            limits.defaults,
            max_memory_mb=limits.max_memory_mb,
            devices=limits.device_list,
        )
        self._sandboxes = sandboxes
        self._own_pool: SandboxPool | None = None
        # What the last check_text ran: its problem, and per seed the reference's first run and each
        # pitfall's (an upload seeds the expected-output cache with them: problems/uploads.py).
        self.problem: LoadedProblem | None = None
        self.outputs: dict[int | None, tuple[ModuleRun, list[ModuleRun]]] = {}
        self._executor = ThreadPoolExecutor(max_workers=LANES, thread_name_prefix="problem-check")

    def __enter__(self) -> ProblemChecker:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        if self._own_pool is not None:
            self._own_pool.close()

    def sandboxes(self) -> Sandboxes:
        """The sandboxes given, or a pool of LANES warm containers of the check's own, started once."""
        if self._sandboxes is None:
            # Only the problem's own code runs here: no keeper of the image's pages (that is for submissions).
            owner = f"check-{uuid.uuid4().hex[:12]}"
            pool = SandboxPool(self.sandbox, self.limits, owner=owner, size=LANES, keep_image=False)
            pool.start()
            self._own_pool = pool
            if pool.image_id is None:
                raise SandboxUnavailable(pool.last_error or "the sandbox engine is not available")
            self._sandboxes = pool
        return self._sandboxes

    # -- the steps -------------------------------------------------------------------------------
    def check_text(
        self,
        text: str,
        source: str,
        on_step: Callable[[CheckStep], None] | None = None,
        *,
        schema_only: bool = False,
    ) -> CheckReport:
        """Checks one problem file's text. Raises SandboxUnavailable when no sandbox can run."""
        report = CheckReport(source=source)
        self.problem, self.outputs = None, {}

        def emit(step: CheckStep) -> None:
            report.steps.append(step)
            if on_step is not None:
                on_step(step)

        started = time.monotonic()
        try:
            problem = self._registry.make(self._registry.parse(text, source))
        except ProblemError as exc:
            emit(CheckStep(name="schema", status=StepStatus.FAILED, summary="does not validate", errors=exc.lines()))
            _skip_rest(report, emit, "the file does not validate")
            return report
        report.problem_id, report.version = problem.id, problem.version
        self.problem = problem
        visible = sum(test.visible for test in problem.tests)
        counts = f"{len(problem.tests)} tests ({visible} visible), {len(problem.pitfalls)} pitfalls"
        if problem.alternatives:
            counts += f", {len(problem.alternatives)} alternatives"
        locate = Locator(source, text)
        errors, warnings = file_findings(problem, locate)
        emit(
            CheckStep(
                name="schema",
                status=StepStatus.FAILED if errors else StepStatus.OK,
                summary=f"{problem.id}: {counts}",
                errors=errors,
                warnings=warnings,
                seconds=round(time.monotonic() - started, 3),
            )
        )
        if not schema_only:
            self._run_steps(problem, locate, report, emit)
        return report

    def _run_steps(
        self, problem: LoadedProblem, locate: Locator, report: CheckReport, emit: Callable[[CheckStep], None]
    ) -> None:
        """Every step under each of the check's seeds (one when no test draws fresh inputs), merged: a step
        fails if it fails under any seed, and says under which."""
        seeds = check_seeds(problem, self.seeds)
        rounds: list[list[CheckStep]] = []
        started = time.monotonic()
        for index, seed in enumerate(seeds):
            elapsed = time.monotonic() - started
            if rounds and self.budget_s is not None and elapsed * (index + 1) / index > self.budget_s:
                break  # one more round, as long as the ones before took, would end past the budget
            rounds.append(self._round(problem, locate, seed, first=index == 0))
            if rounds[-1][0].status == StepStatus.FAILED:
                break  # a reference that is not accepted: the rest is skipped
        short = None
        if len(rounds) < len(seeds) and rounds[-1][0].status != StepStatus.FAILED:
            short = (
                f"checked under {len(rounds)} of {len(seeds)} seeds: another would pass the check's time budget "
                f"of {self.budget_s:.0f} s (check the file with `grader problems check --seeds {len(seeds)}`)"
            )
        for index, name in enumerate(STEPS[1:]):
            steps = [steps[index] for steps in rounds if index < len(steps)]
            if not steps:
                break
            merged = merge_steps(steps, seeds[: len(steps)])
            if name == "reference" and short is not None:
                merged.warnings.append(short)
            emit(merged)
            if steps[0].status == StepStatus.FAILED and name == "reference":
                _skip_rest(report, emit, "the reference is not accepted")
                return
        if problem.problem.custom_test is not None:
            emit(self._custom(problem, locate))
        if problem.speed is not None:
            emit(speed_step(self.sandbox, self.sandboxes(), problem, locate, seeds[0]))

    def _custom(self, problem: LoadedProblem, locate: Locator) -> CheckStep:
        """The custom-input test on its defaults (check_custom.py): the reference twice, apart, then each
        alternative."""
        custom = problem.problem.custom_test
        assert custom is not None
        selection = one_test(problem, custom.case(custom.values({}, where="defaults")), "custom")
        started = time.monotonic()
        first, second = self._run_all(selection, [problem.reference] * 2, None, apart=True, trusted=BOTH)
        alternatives = self._run_all(selection, [a.code for a in problem.alternatives], None)
        return custom_step(selection, first, second, alternatives, locate, round(time.monotonic() - started, 3))

    def _round(self, problem: LoadedProblem, locate: Locator, seed: int | None, *, first: bool) -> list[CheckStep]:
        """The steps after the schema, under one seed; stops after a reference that is not accepted. The
        tolerance step is judged once, on the first seed's outputs."""
        started = time.monotonic()
        ours, again = self._run_all(problem, [problem.reference] * 2, seed, apart=True, trusted=BOTH)
        seconds = round(time.monotonic() - started, 3)
        reference = reference_step(problem, ours, locate, seconds)
        if reference.status != StepStatus.FAILED:
            reference.errors += reference_findings(problem, [ours.value(i) for i in range(len(problem.tests))], locate)
            if reference.errors:
                reference.status, reference.summary = StepStatus.FAILED, "the tests have mistakes"
        if reference.status == StepStatus.FAILED:
            return [reference]
        steps = [reference, determinism_step(problem, ours, again, locate, seconds)]
        started = time.monotonic()
        pitfalls = [pitfall.module for pitfall in problem.pitfalls]
        alternatives = [alternative.code for alternative in problem.alternatives]
        # The first seed's round also runs the float64 oracle and the impostor that returns its input unchanged.
        extra = [oracle_source(problem.reference, problem.entry_points), identity_source(problem.entry_points)]
        sources = [problem.starter_code, *pitfalls, *alternatives, *(extra if first else [])]
        oracle_at = frozenset({len(sources) - 2} if first else set())
        runs = self._run_all(problem, sources, seed, trusted=oracle_at)
        oracle_run, identity_run = (runs.pop(-2), runs.pop()) if first else (None, None)
        seconds = round(time.monotonic() - started, 3)
        self.outputs[seed] = (ours, runs[1:])
        reference_values = [ours.value(index) for index in range(len(problem.tests))]
        pitfall_runs = runs[1 : 1 + len(pitfalls)]
        count = len(problem.tests)
        expected = Expected(
            [ours.body(i) for i in range(count)], [[run.body(i) for i in range(count)] for run in pitfall_runs]
        )
        verdicts = [judge_module(problem, expected, run) for run in runs]
        steps.append(starter_step(runs[0], verdicts[0], locate, seconds))
        steps.append(pitfalls_step(problem, expected, pitfall_runs, verdicts[1 : 1 + len(pitfalls)], locate, seconds))
        steps.append(alternatives_step(problem, verdicts[1 + len(pitfalls) :], locate, seconds))
        if first:
            steps.append(tolerance_step(problem, reference_values, locate, oracle_run))
            other = (
                self._run_all(problem, [problem.reference], (seed or 0) + 1, trusted=ONE)[0]
                if draws_fresh(problem)
                else None
            )
            steps.append(impostor_step(problem, reference_values, identity_run, other, locate))
        return steps

    def _run_all(
        self,
        problem: ProblemSpec,
        sources: list[str],
        seed: int | None,
        *,
        apart: bool = False,
        trusted: frozenset[int] = frozenset(),
    ) -> list[ModuleRun]:
        """Runs modules LANES at a time, in the check's sandboxes; every one is run before a failure is
        raised. `apart`: each module in a container of its own (the two runs of the determinism step).
        `trusted`: the positions of the problem's own code (the reference, its oracle), which the problem's
        forbid and require do not hold for; they hold for every other module, as for a submission."""
        sandboxes = self.sandboxes()
        held: list[_Held] = []
        if apart:
            try:
                held = [_Held(sandboxes, sandboxes.acquire()) for _ in sources]
            except SandboxLost as exc:
                for each in held:
                    each.give_back()
                raise SandboxUnavailable(f"cannot start a sandbox: {exc}") from exc

        def run(index: int, source: str) -> ModuleRun:
            where = held[index] if held else sandboxes
            return run_module(where, problem, source, self.sandbox, seed=seed, rules=index not in trusted)

        futures = [self._executor.submit(run, index, source) for index, source in enumerate(sources)]
        runs: list[ModuleRun] = []
        failure: Exception | None = None
        for future in futures:
            try:
                runs.append(future.result())
            except NoSandbox as exc:
                failure = failure or exc
        if failure is not None:
            raise SandboxUnavailable(f"cannot run the problem in a sandbox: {failure}") from failure
        return runs


class _Held:
    """One container taken ahead of time for one module: handed out first, then (should it be lost) the
    source's next one."""

    def __init__(self, source: Sandboxes, container: SandboxContainer) -> None:
        self.source = source
        self.container: SandboxContainer | None = container
        self.image_id = source.image_id

    def acquire(self, timeout: float | None = None, due_in_s: float = 3600.0) -> SandboxContainer:
        container, self.container = self.container, None
        return container if container is not None else self.source.acquire(timeout, due_in_s)

    def release(self, container: SandboxContainer, reusable: bool) -> None:
        self.source.release(container, reusable)

    def engine_ok(self) -> bool:
        return self.source.engine_ok()

    def give_back(self) -> None:
        if self.container is not None:
            self.source.release(self.container, reusable=True)
            self.container = None


def _skip_rest(report: CheckReport, emit: Callable[[CheckStep], None], reason: str) -> None:
    done = {step.name for step in report.steps}
    for name in STEPS:
        if name not in done:
            emit(CheckStep(name=name, status=StepStatus.SKIPPED, summary=reason))
