"""Problem files that check themselves, before anyone is graded against them.

The steps, in order, each reported as soon as it is known:

  schema         the file parses and validates (no sandbox)
  reference      the reference loads and every test returns a value: it is accepted
  deterministic  a second run of the reference, in another sandbox, gives identical outputs
  starter        the starter code loads and is not accepted
  pitfalls       every pitfall fails at least one test (the report says which)
  tolerances     an all-zeros answer and the reference's answer with 1% relative noise each fail some
                 test that returns floats

Everything runs in real sandboxes, two at a time; the tolerance step is computed here, on the trusted
side, from the reference's decoded outputs as plain data. Errors read `file:line: field: message`.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np
import yaml
from pydantic import BaseModel, Field, computed_field

from grader.config import Settings
from grader.grading.compare import Comparison, Tolerance, compare_outputs
from grader.grading.expected import MISSING, build_job, job_deadline
from grader.grading.grade import DEFAULT_TOLERANCE
from grader.grading.verdict import LOAD_TO_STATUS, RUNNER_TO_TEST, Status, TestResult, TestStatus, overall
from grader.problems import strict_yaml
from grader.problems.registry import (
    EffectiveLimits,
    LoadedProblem,
    ProblemError,
    Registry,
    parse_problem,
    problem_version,
    yaml_line,
)
from grader.sandboxes.container import JobOutcome, SandboxContainer, SandboxLost
from grader.sandboxes.protocol import TestHeader
from grader.sandboxes.values import FLOAT_DTYPES, MalformedValue, Tensor, decode_value

log = logging.getLogger(__name__)

STEPS = ("schema", "reference", "deterministic", "starter", "pitfalls", "tolerances")
LANES = 2  # sandboxes per check: the reference runs in both at once, the rest is spread over them
NOISE = 0.01
EXACT = Tolerance(rtol=0.0, atol=0.0)
SLOW_FRACTION = 0.5  # a reference test using more of its time limit than this is flagged
LARGE_OUTPUT = 1024 * 1024
TEST_FRAME = re.compile(r'File "<test (\d+)>", line (\d+)')


class SandboxUnavailable(Exception):
    """No sandbox could be started or kept alive: the judge's problem, not the problem file's."""


class StepStatus(StrEnum):
    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"


class CheckStep(BaseModel):
    name: str
    status: StepStatus
    summary: str
    details: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list, description="each 'file:line: field: message'")
    seconds: float = 0.0


class CheckReport(BaseModel):
    source: str
    problem_id: str | None = None
    version: str | None = None
    steps: list[CheckStep] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        return all(step.status != StepStatus.FAILED for step in self.steps)

    @property
    def errors(self) -> list[str]:
        return [error for step in self.steps for error in step.errors]


# -- where things are in the file ------------------------------------------------------------------
class _Locator:
    """Turns a field path into `file:line: field` using the YAML node tree of the checked text."""

    def __init__(self, source: str, text: str) -> None:
        self.source = source
        try:
            self.root: yaml.Node | None = strict_yaml.compose(text)
        except yaml.YAMLError:
            self.root = None

    def error(self, loc: tuple[str | int, ...], message: str, line: int | None = None) -> str:
        line = line or yaml_line(self.root, loc)
        where = f"{self.source}:{line}" if line else self.source
        return f"{where}: {'.'.join(map(str, loc))}: {message}"

    def code_line(self, loc: tuple[str | int, ...], line_in_code: int | None) -> int | None:
        """The file line of a line inside a block scalar (`code: |`), or None if it cannot be known."""
        node = self.root
        for part in loc:
            if isinstance(node, yaml.MappingNode):
                node = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part), None)
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
                node = node.value[part]
            else:
                return None
        if not line_in_code or not isinstance(node, yaml.ScalarNode) or node.style not in ("|", ">"):
            return None
        return node.start_mark.line + 1 + line_in_code


# -- one module's run in a sandbox ------------------------------------------------------------------
@dataclass
class _Run:
    """How a module loaded, then per test the runner's header and the decoded value (MISSING if none)."""

    load_status: str
    load_message: str | None = None
    load_line: int | None = None
    headers: list[TestHeader | None] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    lost_during: int | None = None  # the module killed the sandbox during this test, on every attempt


def _decode_outcome(outcome: JobOutcome, test_count: int) -> _Run:
    header = outcome.load
    if header.status != "ok":
        kind = f"{header.error_type}: " if header.error_type else ""
        return _Run(
            load_status=header.status, load_message=f"{kind}{header.message or ''}".strip(), load_line=header.line
        )
    run = _Run(load_status="ok", headers=[None] * test_count, values=[MISSING] * test_count, sizes=[0] * test_count)
    for test_header, body in outcome.tests[:test_count]:
        index = test_header.index
        run.headers[index] = test_header
        run.sizes[index] = len(body)
        if test_header.status == "ok":
            try:
                run.values[index] = decode_value(body)
            except MalformedValue as exc:
                run.headers[index] = test_header.model_copy(
                    update={"status": "error", "message": f"the sandbox returned a malformed result: {exc}"}
                )
    return run


class _Lane:
    """One sandbox slot: a container started on first use and replaced after a failure or a job that
    left it unclean. Every container it starts is removed, at the latest by discard()."""

    def __init__(self, start: Callable[[], SandboxContainer], attempts: int) -> None:
        self._start = start
        self._attempts = attempts
        self._container: SandboxContainer | None = None

    def container(self) -> SandboxContainer:
        if self._container is not None:
            return self._container
        last: Exception | None = None
        for attempt in range(self._attempts):
            try:
                self._container = self._start()
                return self._container
            except SandboxLost as exc:
                last = exc
                log.warning("starting a sandbox for a problem check failed (attempt %d): %s", attempt + 1, exc)
                if attempt + 1 < self._attempts:
                    time.sleep(0.5 * (attempt + 1))
        raise SandboxUnavailable(f"cannot start a sandbox: {last}")

    def run(self, problem: LoadedProblem, source: str, settings: Settings) -> _Run:
        job = build_job(problem, source, settings)
        count = len(problem.problem.tests)
        losses: list[SandboxLost] = []
        for _attempt in range(self._attempts):
            container = self.container()
            try:
                outcome = container.run_job(job, job_deadline(problem, settings))
            except SandboxLost as exc:
                log.warning("a problem check lost its sandbox: %s", exc)
                losses.append(exc)
                self.discard()
                continue
            if not outcome.clean:
                self.discard()
            return _decode_outcome(outcome, count)
        during = {exc.during_test for exc in losses}
        if len(during) == 1 and None not in during:
            # The same test took the sandbox down every time: the module did it, not the judge.
            index = during.pop()
            assert index is not None
            return _Run(load_status="ok", headers=[None] * count, values=[MISSING] * count, lost_during=index)
        raise SandboxUnavailable(f"the sandbox failed on every attempt: {losses[-1] if losses else 'no attempt'}")

    def discard(self) -> None:
        if self._container is not None:
            self._container.remove()
            self._container = None


def docker_sandboxes(settings: Settings) -> Callable[[], SandboxContainer]:
    """Starts hardened sandbox containers straight from the Docker engine (for the command line, where
    no service and no pool run)."""
    lock = threading.Lock()
    clients: list[Any] = []

    def start() -> SandboxContainer:
        import docker

        from grader.sandboxes.container import docker_client

        with lock:
            if not clients:
                try:
                    clients.append(docker_client())
                    clients[0].images.get(settings.sandbox_image)
                except docker.errors.DockerException as exc:
                    clients.clear()
                    raise SandboxLost(
                        f"Docker engine or sandbox image {settings.sandbox_image!r} unavailable: {exc}"
                    ) from exc
        container = SandboxContainer(clients[0], settings)
        container.start()
        return container

    return start


# -- judging a run against the reference's outputs --------------------------------------------------
@dataclass
class _Judged:
    status: Status
    message: str
    tests: list[TestResult]

    def failing(self) -> list[TestResult]:
        return [test for test in self.tests if test.status != TestStatus.PASSED]


def _checks(problem: LoadedProblem, index: int) -> dict[str, Tolerance]:
    return {key: Tolerance(tol.rtol, tol.atol) for key, tol in problem.problem.tests[index].check.items()}


def _compare(problem: LoadedProblem, index: int, expected: Any, got: Any) -> Comparison:
    return compare_outputs(expected, got, _checks(problem, index), DEFAULT_TOLERANCE)


def _runner_message(header: TestHeader | None) -> str:
    if header is None:
        return "no result"
    kind = f"{header.error_type}: " if header.error_type and header.status == "error" else ""
    return f"{kind}{header.message or header.status}".strip()


def _judge(problem: LoadedProblem, expected: list[Any], run: _Run) -> _Judged:
    """What the grader would make of a module: its status and each test's result, as data."""
    if run.load_status != "ok":
        status = LOAD_TO_STATUS.get(run.load_status, Status.RUNTIME_ERROR)
        return _Judged(status, run.load_message or status.value, [])
    results = []
    for index, test in enumerate(problem.problem.tests):
        result = TestResult(
            index=index, name=test.name, visible=test.visible, weight=test.weight, status=TestStatus.PASSED
        )
        header = run.headers[index]
        if run.lost_during is not None and index >= run.lost_during:
            result.status = TestStatus.ERROR
            result.message = "killed the sandbox" if index == run.lost_during else "not run"
        elif header is None or header.status != "ok":
            result.status = RUNNER_TO_TEST.get(header.status, TestStatus.ERROR) if header else TestStatus.ERROR
            result.message = _runner_message(header)
        else:
            comparison = _compare(problem, index, expected[index], run.values[index])
            if not comparison.passed:
                result.status = TestStatus.FAILED
                path = comparison.details.get("path", "result")
                result.message = f"{path}: {comparison.details.get('reason', 'values differ')}"
        results.append(result)
    status, _score = overall(results)
    first = next((t for t in results if t.status != TestStatus.PASSED), None)
    message = f"test {first.index + 1} {first.name!r}: {first.message}" if first else "every test passes"
    return _Judged(status, message, results)


def _numbers(indices: list[int]) -> str:
    """1-based test numbers with runs folded: [0, 2, 3, 4] -> '1, 3-5'."""
    parts: list[str] = []
    numbers = [i + 1 for i in sorted(indices)]
    start = previous = numbers[0] if numbers else 0
    for number in numbers[1:] + [None]:  # type: ignore[list-item]
        if number is not None and number == previous + 1:
            previous = number
            continue
        parts.append(str(start) if start == previous else f"{start}-{previous}")
        if number is not None:
            start = previous = number
    return ", ".join(parts)


_KIND = {
    TestStatus.FAILED: "wrong answer",
    TestStatus.ERROR: "error",
    TestStatus.TIMEOUT: "time limit",
    TestStatus.MEMORY: "memory limit",
    TestStatus.OUTPUT: "output limit",
    TestStatus.SKIPPED: "skipped",
}


# -- the tolerance sanity check: plain data, no sandbox ---------------------------------------------
def has_floats(value: Any) -> bool:
    if isinstance(value, Tensor):
        return value.dtype in FLOAT_DTYPES and value.array.size > 0
    if isinstance(value, float):
        return True
    if isinstance(value, (list, tuple)):
        return any(has_floats(item) for item in value)
    if isinstance(value, dict):
        return any(has_floats(item) for item in value.values())
    return False


def perturb_floats(value: Any, change: Callable[[np.ndarray], np.ndarray]) -> Any:
    """A copy of a decoded value with every float tensor and float changed; everything else as it was."""
    if isinstance(value, Tensor):
        if value.dtype not in FLOAT_DTYPES:
            return value
        return Tensor(value.dtype, change(value.array).astype(value.array.dtype))
    if isinstance(value, float):
        return float(change(np.array([value], dtype=np.float64))[0])
    if isinstance(value, list):
        return [perturb_floats(item, change) for item in value]
    if isinstance(value, tuple):
        return tuple(perturb_floats(item, change) for item in value)
    if isinstance(value, dict):
        return {key: perturb_floats(item, change) for key, item in value.items()}
    return value


def zeros_like_floats(value: Any) -> Any:
    return perturb_floats(value, np.zeros_like)


def with_relative_noise(value: Any, seed: int, fraction: float = NOISE) -> Any:
    """Every float multiplied by 1 +/- fraction (the sign drawn at random, seeded): each element is off by
    exactly `fraction` relative, so a tolerance that lets this pass is looser than `fraction`."""
    rng = np.random.default_rng(seed)

    def noisy(array: np.ndarray) -> np.ndarray:
        signs = rng.choice(np.array([-1.0, 1.0]), size=array.shape)
        return array * (1.0 + fraction * signs)

    return perturb_floats(value, noisy)


# -- the checker ---------------------------------------------------------------------------------------
class ProblemChecker:
    """Checks problem files in real sandboxes; reuse one for many files, then close() it (or use `with`)
    so that every container it started is removed."""

    def __init__(self, settings: Settings, start_sandbox: Callable[[], SandboxContainer] | None = None) -> None:
        self.settings = settings
        self._registry = Registry(
            EffectiveLimits(settings.default_time_s, settings.default_memory_mb, settings.default_output_kb)
        )
        start = start_sandbox or docker_sandboxes(settings)
        self._lanes = [_Lane(start, settings.max_attempts) for _ in range(LANES)]
        self._executor = ThreadPoolExecutor(max_workers=LANES, thread_name_prefix="problem-check")

    def __enter__(self) -> ProblemChecker:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        for lane in self._lanes:
            lane.discard()

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

        def emit(step: CheckStep) -> None:
            report.steps.append(step)
            if on_step is not None:
                on_step(step)

        def skip_rest(reason: str) -> None:
            done = {step.name for step in report.steps}
            for name in STEPS:
                if name not in done:
                    emit(CheckStep(name=name, status=StepStatus.SKIPPED, summary=reason))

        started = time.monotonic()
        try:
            problem = parse_problem(text, source)
        except ProblemError as exc:
            emit(CheckStep(name="schema", status=StepStatus.FAILED, summary="does not validate", errors=exc.lines()))
            skip_rest("the file does not validate")
            return report
        report.problem_id, report.version = problem.id, problem_version(problem)
        visible = sum(test.visible for test in problem.tests)
        counts = f"{len(problem.tests)} tests ({visible} visible), {len(problem.pitfalls)} pitfalls"
        emit(
            CheckStep(
                name="schema",
                status=StepStatus.OK,
                summary=f"{problem.id}: {counts}",
                seconds=round(time.monotonic() - started, 3),
            )
        )
        if schema_only:
            return report
        loaded = self._registry.make(problem)
        locate = _Locator(source, text)

        started = time.monotonic()
        first, second = self._run_all(loaded, [problem.reference, problem.reference])
        seconds = round(time.monotonic() - started, 3)
        reference = self._reference_step(loaded, first, locate, seconds)
        emit(reference)
        if reference.status == StepStatus.FAILED:
            skip_rest("the reference is not accepted")
            return report
        emit(self._determinism_step(loaded, first, second, locate, seconds))

        started = time.monotonic()
        runs = self._run_all(loaded, [problem.starter_code] + [pitfall.code for pitfall in problem.pitfalls])
        seconds = round(time.monotonic() - started, 3)
        emit(self._starter_step(loaded, first.values, runs[0], locate, seconds))
        emit(self._pitfalls_step(loaded, first.values, runs[1:], locate, seconds))
        emit(self._tolerance_step(loaded, first.values, locate))
        return report

    def _run_all(self, problem: LoadedProblem, sources: list[str]) -> list[_Run]:
        """Runs modules in the lanes at once: module i in lane i % LANES, each lane's share in order (so the
        reference's two runs land in two different sandboxes)."""
        results: list[_Run | None] = [None] * len(sources)

        def work(lane: int) -> None:
            for index in range(lane, len(sources), LANES):
                results[index] = self._lanes[lane].run(problem, sources[index], self.settings)

        futures = [self._executor.submit(work, lane) for lane in range(min(LANES, len(sources)))]
        wait(futures)  # both lanes finish before a failure of one is raised: no container is left running
        for future in futures:
            future.result()
        return [run for run in results if run is not None]

    def _reference_step(self, problem: LoadedProblem, run: _Run, locate: _Locator, seconds: float) -> CheckStep:
        step = CheckStep(name="reference", status=StepStatus.OK, summary="", seconds=seconds)
        tests = problem.problem.tests
        if run.load_status != "ok":
            line = locate.code_line(("reference",), run.load_line)
            step.errors.append(
                locate.error(
                    ("reference",), f"the reference does not load ({run.load_status}): {run.load_message}", line
                )
            )
        else:
            for index, test in enumerate(tests):
                header = run.headers[index]
                if run.lost_during is not None and index == run.lost_during:
                    message = "killed the sandbox"
                elif header is not None and header.status == "ok":
                    continue
                elif run.lost_during is not None and index > run.lost_during:
                    continue
                else:
                    message = _runner_message(header)
                    if header is not None and header.status == "timeout":
                        message += f" (limit {problem.limits.time_s:g} s)"
                loc, line = self._blame(locate, index, header)
                step.errors.append(
                    locate.error(loc, f"the reference fails test {index + 1} {test.name!r}: {message}", line)
                )
        if step.errors:
            step.status = StepStatus.FAILED
            step.summary = "not accepted"
            return step
        times = [(header.time_ms if header else 0.0, i) for i, header in enumerate(run.headers)]
        slowest_ms, slowest = max(times)
        largest, biggest = max((size, i) for i, size in enumerate(run.sizes))
        step.summary = (
            f"accepted: {len(tests)}/{len(tests)} tests pass; slowest test {slowest + 1} {slowest_ms:.0f} ms, "
            f"largest output test {biggest + 1} {largest / 1024:.1f} KiB"
        )
        for time_ms, index in times:
            if time_ms > SLOW_FRACTION * problem.limits.time_s * 1000:
                step.warnings.append(
                    f"test {index + 1} {tests[index].name!r} takes {time_ms:.0f} ms of its "
                    f"{problem.limits.time_s:g} s limit with the reference"
                )
        for index, size in enumerate(run.sizes):
            if size > LARGE_OUTPUT:
                step.warnings.append(f"test {index + 1} {tests[index].name!r} returns {size / 1024:.0f} KiB")
        return step

    def _blame(
        self, locate: _Locator, index: int, header: TestHeader | None
    ) -> tuple[tuple[str | int, ...], int | None]:
        """Where a failing reference test points: the reference's own line if the failure is in it, else
        the line of the test's code that raised, else the test."""
        if header is not None and header.line:
            return ("reference",), locate.code_line(("reference",), header.line)
        frames = TEST_FRAME.findall(header.traceback or "") if header is not None else []
        if frames:
            return ("tests", index, "code"), locate.code_line(("tests", index, "code"), int(frames[-1][1]))
        return ("tests", index), None

    def _determinism_step(
        self, problem: LoadedProblem, first: _Run, second: _Run, locate: _Locator, seconds: float
    ) -> CheckStep:
        step = CheckStep(name="deterministic", status=StepStatus.OK, summary="", seconds=seconds)
        differing = []
        for index, test in enumerate(problem.problem.tests):
            header = second.headers[index] if second.load_status == "ok" else None
            if second.load_status != "ok":
                reason = f"the second run does not load ({second.load_status}): {second.load_message}"
            elif header is None or header.status != "ok" or second.lost_during is not None:
                reason = f"the second run fails: {_runner_message(header)}"
            else:
                comparison = compare_outputs(first.values[index], second.values[index], {}, EXACT)
                if comparison.passed:
                    continue
                reason = f"{comparison.details.get('path')}: {comparison.details.get('reason')}"
            differing.append(index)
            if len(differing) <= 5:
                step.errors.append(
                    locate.error(
                        ("reference",),
                        f"the reference gives different outputs on two runs: test {index + 1} {test.name!r}: {reason}",
                    )
                )
            if second.load_status != "ok":
                break
        if differing:
            step.status = StepStatus.FAILED
            step.summary = f"the reference differs between two runs on tests {_numbers(differing)}"
            if len(differing) > 5:
                step.errors.append(locate.error(("reference",), f"... and {len(differing) - 5} more tests differ"))
        else:
            step.summary = "identical outputs on two runs, in two sandboxes"
        return step

    def _starter_step(
        self, problem: LoadedProblem, expected: list[Any], run: _Run, locate: _Locator, seconds: float
    ) -> CheckStep:
        step = CheckStep(name="starter", status=StepStatus.OK, summary="", seconds=seconds)
        judged = _judge(problem, expected, run)
        if run.load_status != "ok":
            line = locate.code_line(("starter_code",), run.load_line)
            step.errors.append(
                locate.error(
                    ("starter_code",),
                    f"the starter code does not load ({judged.status.value}: {judged.message}); it must define "
                    "every entry point so that a student's first submission fails tests instead",
                    line,
                )
            )
        elif judged.status == Status.ACCEPTED:
            step.errors.append(locate.error(("starter_code",), "the starter code is accepted; it must fail a test"))
        if step.errors:
            step.status = StepStatus.FAILED
            step.summary = "the starter code must load and fail"
        else:
            step.summary = f"not accepted: {judged.status.value}, {len(judged.failing())} tests fail"
        return step

    def _pitfalls_step(
        self, problem: LoadedProblem, expected: list[Any], runs: list[_Run], locate: _Locator, seconds: float
    ) -> CheckStep:
        step = CheckStep(name="pitfalls", status=StepStatus.OK, summary="", seconds=seconds)
        pitfalls = problem.problem.pitfalls
        if not pitfalls:
            step.status = StepStatus.SKIPPED
            step.summary = "the problem lists no pitfalls"
            return step
        judged = [_judge(problem, expected, run) for run in runs]
        count = len(problem.problem.tests)
        for index, (pitfall, result) in enumerate(zip(pitfalls, judged, strict=True)):
            loc: tuple[str | int, ...] = ("pitfalls", index)
            if runs[index].load_status != "ok":
                line = locate.code_line((*loc, "code"), runs[index].load_line)
                step.errors.append(
                    locate.error(
                        (*loc, "code"),
                        f"pitfall {pitfall.name!r} does not load ({result.status.value}: {result.message}); "
                        "its hint could never be shown",
                        line,
                    )
                )
                continue
            failing = result.failing()
            if not failing:
                step.errors.append(locate.error(loc, f"pitfall {pitfall.name!r} passes every test"))
                continue
            first = failing[0]
            step.details.append(
                f"{pitfall.name}: fails {len(failing)} of {count} tests ({_numbers([t.index for t in failing])}); "
                f"first: test {first.index + 1} {first.name!r}, {_KIND[first.status]}"
            )
            if first.status != TestStatus.FAILED:
                step.warnings.append(
                    f"pitfall {pitfall.name!r} first fails test {first.index + 1} with {_KIND[first.status]} "
                    f"({first.message}); a test it answers wrongly first gives a clearer report"
                )
            shown = self._hint_shown(problem, pitfalls, runs, judged, index)
            if shown != index:
                step.warnings.append(
                    f"a submission that makes pitfall {pitfall.name!r} gets the hint of "
                    f"{pitfalls[shown].name!r} instead"
                    if shown is not None
                    else f"a submission that makes pitfall {pitfall.name!r} gets no hint"
                )
        passed = len(pitfalls) - len(step.errors)
        step.summary = f"{passed}/{len(pitfalls)} fail at least one test"
        if step.errors:
            step.status = StepStatus.FAILED
        return step

    def _hint_shown(
        self, problem: LoadedProblem, pitfalls: list[Any], runs: list[_Run], judged: list[_Judged], index: int
    ) -> int | None:
        """Which pitfall's hint a submission giving exactly pitfall `index`'s outputs would get: the first
        pitfall that matches it on every test it fails (the grader's rule)."""
        failing = judged[index].failing()
        mine = runs[index].values
        for other, run in enumerate(runs):
            if run.load_status != "ok":
                continue
            matches = True
            for test in failing:
                theirs = run.values[test.index]
                if test.status == TestStatus.FAILED:
                    if theirs is MISSING or not _compare(problem, test.index, theirs, mine[test.index]).passed:
                        matches = False
                        break
                elif theirs is not MISSING:
                    matches = False
                    break
            if matches:
                return other
        return None

    def _tolerance_step(self, problem: LoadedProblem, expected: list[Any], locate: _Locator) -> CheckStep:
        step = CheckStep(name="tolerances", status=StepStatus.OK, summary="")
        float_tests = [index for index, value in enumerate(expected) if has_floats(value)]
        if not float_tests:
            step.status = StepStatus.SKIPPED
            step.summary = "no test returns floats"
            return step
        zeros_fail = [
            i for i in float_tests if not _compare(problem, i, expected[i], zeros_like_floats(expected[i])).passed
        ]
        noise_fail = [
            i for i in float_tests if not _compare(problem, i, expected[i], with_relative_noise(expected[i], i)).passed
        ]
        tests = problem.problem.tests
        if not zeros_fail:
            step.errors.append(
                locate.error(
                    ("tests",),
                    "an all-zeros answer passes every test that returns floats: the floats are all zero or the "
                    "tolerances are too loose",
                )
            )
        if not noise_fail:
            step.errors.append(
                locate.error(
                    ("tests",),
                    f"the reference's answer with {NOISE:.0%} relative noise passes every test that returns floats: "
                    "the tolerances (check: rtol, atol) are too loose",
                )
            )
        # Only where the floats are not all zero (zeros fail there): relative noise cannot move a zero.
        lenient = [i for i in float_tests if i not in noise_fail and i in zeros_fail]
        if lenient and noise_fail:
            names = ", ".join(f"{i + 1} {tests[i].name!r}" for i in lenient[:5])
            step.warnings.append(f"tests accepting {NOISE:.0%} noise: {names}" + (" ..." if len(lenient) > 5 else ""))
        step.summary = (
            f"all-zeros fails {len(zeros_fail)} of {len(float_tests)} float tests; "
            f"{NOISE:.0%} noise fails {len(noise_fail)} of {len(float_tests)}"
        )
        if step.errors:
            step.status = StepStatus.FAILED
        return step
