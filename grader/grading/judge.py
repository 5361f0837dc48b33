"""From what a module did to a verdict, as data: no sandbox here, only the module's run, the expected
outputs and the problem's checkers. The Grader judges submissions with it; the problem check judges
the starter code and the pitfalls with it; nothing about judging is written anywhere else.

Judging a returned value (decoding it, comparing, evaluating a check's expressions, matching pitfalls)
is work on hostile data. A `Judge` says where it happens: `LOCAL`, in this process, for the values the
problem's author's own modules return (the check) and for tests; for submissions and runs, in
processes whose memory and CPU the operating system bounds (grading/isolated.py), which call the same
functions here."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from grader.containers.container import LOADING
from grader.containers.protocol import LoadHeader, Outcome, TestHeader
from grader.grading import checkers
from grader.grading.compare import Comparison, describe_outputs
from grader.grading.execution import MISSING, ModuleRun, TestRun
from grader.grading.expected import Expected, decoded
from grader.grading.hints import pitfall_hint
from grader.grading.model import ProblemSpec
from grader.grading.verdict import LOAD_TO_STATUS, RUNNER_TO_TEST, Status, TestResult, TestStatus, Verdict, overall

log = logging.getLogger(__name__)

CRASHED = "the submission crashed the sandbox"


def compare(problem: ProblemSpec, index: int, expected: Any, got: Any) -> Comparison:
    """Test `index`'s own rule (its checker, with the options its file gives), applied to two values."""
    test = problem.tests[index]
    return checkers.get(test.checker).compare(expected, got, test.check)


def base_result(problem: ProblemSpec, index: int, header: TestHeader) -> TestResult:
    """A test's result before its value is judged: what the problem and the runner's header say."""
    test = problem.tests[index]
    return TestResult(
        index=index,
        name=test.name,
        visible=test.visible,
        weight=test.weight,
        status=TestStatus.PASSED,
        time_ms=round(header.time_ms, 3),
        memory_mb=header.memory_mb,
        # The limit is the trusted side's own (the job's); a judge process's spec has none, nor needs it.
        memory_limit_mb=limits[index].memory_mb if (limits := getattr(problem, "test_limits", None)) else None,
        output=header.output,
    )


def judge_test(problem: ProblemSpec, expected: Expected, index: int, run: TestRun) -> TestResult:
    """One test's result; never raises, whatever the run holds (but MemoryError, in a judge process)."""
    result = base_result(problem, index, run.header)
    header = run.header
    if header.status != Outcome.OK:
        result.status = RUNNER_TO_TEST[header.status]
        kind = f"{header.error_type}: " if header.error_type and header.status == Outcome.ERROR else ""
        result.message = f"{kind}{header.message or ''}".strip() or None
        result.traceback = header.traceback
        result.line = header.line
        return result
    if run.malformed is not None:
        result.status = TestStatus.ERROR
        result.message = f"the sandbox returned a malformed result: {run.malformed}"
        return result
    try:
        comparison = compare(problem, index, expected.value(index), run.value)
    except MemoryError:  # in a judge process: the values are larger than its memory (grading/isolated.py)
        raise
    except Exception as exc:  # a value the rule cannot take is not one the test asked for
        log.exception("comparing test %d failed", index + 1)
        comparison = Comparison(False, {"reason": f"the result could not be compared ({type(exc).__name__})"})
    if not comparison.passed:
        result.status = TestStatus.FAILED
        result.message = comparison.details.get("reason")
        result.details = comparison.details
    return result


CALL_KEY = "returned"  # how a benchmark call's value is named in a comparison's details


def judge_call(expected_body: bytes | None, body: bytes, check: Mapping[str, Any]) -> dict[str, Any]:
    """A benchmark call's returned value against the reference's on the same inputs (speed.py): {} when it
    matches within `check` (rtol, atol), else the reason and the comparison's details."""
    expected, got = decoded(expected_body), decoded(body)
    if got is MISSING:
        return {"message": "the returned value could not be decoded"}
    comparison = checkers.get(checkers.DEFAULT).compare({CALL_KEY: expected}, {CALL_KEY: got}, {CALL_KEY: check})
    return {} if comparison.passed else {"message": comparison.details.get("reason"), "details": comparison.details}


class Judge(Protocol):
    """Where returned values are judged (see the module's docstring)."""

    def test(self, problem: ProblemSpec, expected: Expected, index: int, run: TestRun) -> TestResult: ...

    def tests(self, problem: ProblemSpec, expected: Expected, runs: Sequence[tuple[int, TestRun]]) -> list[TestResult]:
        """Tests that landed together, each judged as by test(), in the order given."""
        ...

    def call(self, expected_body: bytes | None, body: bytes, check: Mapping[str, Any]) -> dict[str, Any]: ...

    def hint(self, problem: ProblemSpec, expected: Expected, run: ModuleRun, tests: list[TestResult]) -> str | None: ...

    def describe(self, bodies: Sequence[bytes | None]) -> list[dict[str, Any] | None]: ...


class LocalJudge:
    """Judging in this process: only for what the problem's author wrote, and for values given directly."""

    def test(self, problem: ProblemSpec, expected: Expected, index: int, run: TestRun) -> TestResult:
        return judge_test(problem, expected, index, run)

    def tests(self, problem: ProblemSpec, expected: Expected, runs: Sequence[tuple[int, TestRun]]) -> list[TestResult]:
        return [judge_test(problem, expected, index, run) for index, run in runs]

    def call(self, expected_body: bytes | None, body: bytes, check: Mapping[str, Any]) -> dict[str, Any]:
        return judge_call(expected_body, body, check)

    def hint(self, problem: ProblemSpec, expected: Expected, run: ModuleRun, tests: list[TestResult]) -> str | None:
        return module_hint(problem, expected, run, tests)

    def describe(self, bodies: Sequence[bytes | None]) -> list[dict[str, Any] | None]:
        return describe_bodies(bodies)


LOCAL = LocalJudge()


def describe_bodies(bodies: Sequence[bytes | None]) -> list[dict[str, Any] | None]:
    """What each value returned, for a reader (compare.describe_outputs); None where there is none."""
    described: list[dict[str, Any] | None] = []
    for body in bodies:
        value = decoded(body)
        described.append(describe_outputs(value) if value is not MISSING else None)
    return described


def judge_module(
    problem: ProblemSpec,
    expected: Expected,
    run: ModuleRun,
    results: dict[int, TestResult] | None = None,
    engine_ok: Callable[[], bool] = lambda: True,
    judge: Judge = LOCAL,
) -> Verdict:
    """The verdict on a module's run. `results`: tests already judged as they landed (the rest are judged
    here, by `judge`). `engine_ok` is asked when the module lost both its containers: only then is it the
    judge's fault."""
    if run.crashed:
        return _crashed(problem, run, results or {}, engine_ok)
    assert run.load is not None
    if run.load.status != Outcome.OK:
        return _load_failure(problem, run.load)
    judged = dict(results or {})
    left = [(index, test_run) for index, test_run in run.tests.items() if index not in judged]
    judged.update((result.index, result) for result in judge.tests(problem, expected, left))
    tests = [judged[i] for i in sorted(judged)]
    status, score = overall(tests)
    verdict = Verdict(status=status, score=score, tests=tests)
    first = next((t for t in tests if t.status != TestStatus.PASSED), None)
    if first is not None:
        verdict.message = f"{first.name if first.visible else 'a hidden test'}: {first.status.value}"
    if status == Status.WRONG_ANSWER:
        verdict.hint = judge.hint(problem, expected, run, tests)
        if verdict.hint:
            for test in tests:
                if test.status == TestStatus.FAILED:
                    test.hint = verdict.hint
    return verdict


def module_hint(problem: ProblemSpec, expected: Expected, run: ModuleRun, tests: list[TestResult]) -> str | None:
    """The hint of the pitfall whose mistake the module makes (grading/hints.py), values decoded here."""
    try:
        return pitfall_hint(
            problem, expected.reference, expected.pitfalls, run, tests, lambda i, a, b: compare(problem, i, a, b)
        )
    except Exception:  # a hint is a courtesy: its failure must not cost the verdict
        log.exception("matching pitfalls failed")
        return None


def skipped_tests(problem: ProblemSpec, results: dict[int, TestResult]) -> list[TestResult]:
    """Every test: its result where there is one, skipped otherwise."""
    return [
        results.get(i)
        or TestResult(index=i, name=t.name, visible=t.visible, weight=t.weight, status=TestStatus.SKIPPED)
        for i, t in enumerate(problem.tests)
    ]


def _load_failure(problem: ProblemSpec, header: LoadHeader) -> Verdict:
    status = LOAD_TO_STATUS.get(header.status, Status.RUNTIME_ERROR)
    kind = f"{header.error_type}: " if header.error_type else ""
    message = f"{kind}{header.message or ''}".strip() or status.value.replace("_", " ")
    if status == Status.RUNTIME_ERROR and header.line:
        message = f"line {header.line}: {message}"
    return Verdict(
        status=status,
        score=0.0,
        message=message,
        line=header.line,
        tests=skipped_tests(problem, {}),
        traceback=header.traceback if status == Status.RUNTIME_ERROR else None,
    )


def _crashed(
    problem: ProblemSpec, run: ModuleRun, results: dict[int, TestResult], engine_ok: Callable[[], bool]
) -> Verdict:
    """Both containers were lost. The judge's fault if its engine is down or a loss is shown to be the judge's
    (SandboxLost.judges: a container the engine held paused); otherwise the module took them (at whatever
    tests: it can choose a different one each time)."""
    judges = next((lost for lost in run.lost if lost.judges), None)
    if judges is not None or not engine_ok():
        detail = judges or (run.lost[-1] if run.lost else "no sandbox")
        return Verdict(status=Status.INTERNAL_ERROR, message=f"the judge failed: {detail}")
    index = run.crashed_at
    tests = skipped_tests(problem, results)
    if index is not None and 0 <= index < len(tests):
        tests[index] = tests[index].model_copy(update={"status": TestStatus.ERROR, "message": CRASHED})
    _status, score = overall(tests)
    where = "while it was loaded" if index is None or index == LOADING else "during a test"
    return Verdict(status=Status.RUNTIME_ERROR, score=score, message=f"{CRASHED} {where}", tests=tests)


__all__ = [
    "CRASHED",
    "LOCAL",
    "MISSING",
    "base_result",
    "Expected",
    "Judge",
    "compare",
    "judge_call",
    "judge_module",
    "judge_test",
    "module_hint",
    "skipped_tests",
]
