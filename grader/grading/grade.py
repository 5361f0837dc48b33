"""grade_submission: one submission, from source to verdict, through a warm sandbox.

Total: whatever the sandbox sends and whatever fails on this side while it is handled, the result is
a verdict (bounded: grading/bounds.py) and the container goes back to the pool or is replaced. Blame
goes where it belongs: a submission whose sandbox is lost twice, at any tests, crashed it itself
(runtime_error); internal_error is for the judge's own failures (no container can be had, the engine
does not answer, the problem's reference fails). At most two containers are spent on one submission.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from grader.config import Settings
from grader.grading.bounds import bound_verdict
from grader.grading.compare import Comparison, Tolerance, compare_outputs
from grader.grading.expected import MISSING, ExpectedCache, ExpectedOutputs, ProblemBroken, build_job, job_deadline
from grader.grading.verdict import (
    LOAD_TO_STATUS,
    RUNNER_TO_TEST,
    Status,
    TestResult,
    TestStatus,
    Verdict,
    overall,
)
from grader.problems.registry import LoadedProblem
from grader.sandboxes.container import SandboxLost
from grader.sandboxes.pool import SandboxPool
from grader.sandboxes.protocol import LoadHeader, Outcome, TestHeader
from grader.sandboxes.values import MalformedValue, decode_value

log = logging.getLogger(__name__)

DEFAULT_TOLERANCE = Tolerance()
CONTAINERS_PER_SUBMISSION = 2
CRASHED = "the submission crashed the sandbox"


class Grader:
    def __init__(self, settings: Settings, pool: SandboxPool, expected: ExpectedCache) -> None:
        self.settings = settings
        self.pool = pool
        self.expected = expected

    def grade_submission(
        self,
        problem: LoadedProblem,
        source: str,
        on_test: Callable[[TestResult], None] | None = None,
    ) -> Verdict:
        """Grades one submission. Never raises: every outcome is a verdict."""
        try:
            verdict = self._grade(problem, source, on_test)
        except Exception as exc:  # the judge's own bug: reported, never blamed on the submission
            log.exception("grading crashed")
            verdict = Verdict(status=Status.INTERNAL_ERROR, message=f"the judge failed: {type(exc).__name__}")
        return bound_verdict(verdict)

    def _grade(self, problem: LoadedProblem, source: str, on_test: Callable[[TestResult], None] | None) -> Verdict:
        try:
            expected = self.expected.get(problem, self.pool.image_id or "unknown", self.pool.fresh)
        except ProblemBroken as exc:
            return Verdict(status=Status.INTERNAL_ERROR, message=str(exc))
        except SandboxLost as exc:
            return Verdict(
                status=Status.INTERNAL_ERROR, message=f"the judge could not run the problem's reference: {exc}"
            )
        job = build_job(problem, source, self.settings)
        lost: list[SandboxLost] = []
        results: dict[int, TestResult] = {}
        for attempt in range(CONTAINERS_PER_SUBMISSION):
            results = {}
            failed_values: dict[int, Any] = {}

            def landed(header: TestHeader, body: bytes, results=results, failed_values=failed_values) -> None:  # type: ignore[no-untyped-def]
                try:
                    result = self._judge_test(problem, expected, header, body, failed_values)
                except Exception as exc:  # the judge's fault, charged to this test alone
                    log.exception("judging test %d failed", header.index + 1)
                    result = TestResult(
                        index=header.index,
                        name=problem.problem.tests[header.index].name,
                        visible=problem.problem.tests[header.index].visible,
                        weight=problem.problem.tests[header.index].weight,
                        status=TestStatus.ERROR,
                        message=f"the judge could not read this result ({type(exc).__name__})",
                    )
                results[header.index] = result
                _notify(on_test, result)

            deadline = job_deadline(problem, self.settings)
            try:
                container = self.pool.acquire(due_in_s=deadline - time.monotonic())
            except SandboxLost as exc:
                return Verdict(status=Status.INTERNAL_ERROR, message=f"the judge has no sandbox: {exc}")
            reusable = False
            try:
                outcome = container.run_job(job, deadline, landed)
                reusable = outcome.clean
            except SandboxLost as exc:
                log.warning("sandbox lost while grading (container %d of %d): %s", attempt + 1, 2, exc)
                lost.append(exc)
                continue
            finally:
                self.pool.release(container, reusable=reusable)
            if outcome.load.status != Outcome.OK:
                return self._load_failure(problem, outcome.load)
            return self._finish(problem, expected, [results[i] for i in sorted(results)], failed_values)
        return self._lost_verdict(problem, lost, results)

    # -- pieces ------------------------------------------------------------------------------------
    def _judge_test(
        self,
        problem: LoadedProblem,
        expected: ExpectedOutputs,
        header: TestHeader,
        body: bytes,
        failed_values: dict[int, Any],
    ) -> TestResult:
        """One test's result; never raises, whatever the frame holds."""
        test = problem.problem.tests[header.index]
        result = TestResult(
            index=header.index,
            name=test.name,
            visible=test.visible,
            weight=test.weight,
            status=TestStatus.PASSED,
            time_ms=round(header.time_ms, 3),
            output=header.output,
        )
        if header.status != Outcome.OK:
            result.status = RUNNER_TO_TEST[header.status]
            kind = f"{header.error_type}: " if header.error_type and header.status == Outcome.ERROR else ""
            result.message = f"{kind}{header.message or ''}".strip() or None
            result.traceback = header.traceback
            result.line = header.line
            return result
        try:
            got = decode_value(body)
        except MalformedValue as exc:
            result.status = TestStatus.ERROR
            result.message = f"the sandbox returned a malformed result: {exc}"
            return result
        try:
            comparison = self._compare(problem, header.index, expected.reference.values[header.index], got)
        except Exception as exc:  # a value the comparison cannot take is not one the test asked for
            log.exception("comparing test %d failed", header.index + 1)
            comparison = Comparison(False, {"reason": f"the result could not be compared ({type(exc).__name__})"})
        if not comparison.passed:
            result.status = TestStatus.FAILED
            result.message = comparison.details.get("reason")
            result.details = comparison.details
            failed_values[header.index] = got
        return result

    def _compare(self, problem: LoadedProblem, index: int, expected: Any, got: Any) -> Comparison:
        test = problem.problem.tests[index]
        checks = {key: Tolerance(tol.rtol, tol.atol) for key, tol in test.check.items()}
        return compare_outputs(expected, got, checks, DEFAULT_TOLERANCE)

    def _finish(
        self,
        problem: LoadedProblem,
        expected: ExpectedOutputs,
        results: list[TestResult],
        failed_values: dict[int, Any],
    ) -> Verdict:
        status, score = overall(results)
        verdict = Verdict(status=status, score=score, tests=results)
        first = next((t for t in results if t.status != TestStatus.PASSED), None)
        if first is not None:
            verdict.message = f"{first.name if first.visible else 'a hidden test'}: {first.status.value}"
        if status == Status.WRONG_ANSWER:
            try:
                verdict.hint = self._pitfall_hint(problem, expected, results, failed_values)
            except Exception:  # a hint is a courtesy: its failure must not cost the verdict
                log.exception("matching pitfalls failed")
            if verdict.hint:
                for test in results:
                    if test.status == TestStatus.FAILED:
                        test.hint = verdict.hint
        return verdict

    def _pitfall_hint(
        self,
        problem: LoadedProblem,
        expected: ExpectedOutputs,
        results: list[TestResult],
        failed_values: dict[int, Any],
    ) -> str | None:
        """The hint of the first pitfall whose outputs equal the submission's on every test it failed."""
        failing = [t for t in results if t.status != TestStatus.PASSED]
        for pitfall, outputs in zip(problem.problem.pitfalls, expected.pitfalls, strict=False):
            matches = True
            for test in failing:
                theirs = outputs.values[test.index]
                if test.status == TestStatus.FAILED:
                    ours = failed_values.get(test.index, MISSING)
                    if (
                        theirs is MISSING
                        or ours is MISSING
                        or not self._compare(problem, test.index, theirs, ours).passed
                    ):
                        matches = False
                        break
                elif theirs is not MISSING:  # we crashed where the pitfall did not
                    matches = False
                    break
            if matches and failing:
                return pitfall.hint
        return None

    def _load_failure(self, problem: LoadedProblem, header: LoadHeader) -> Verdict:
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
            tests=_skipped(problem, {}),
            traceback=header.traceback if status == Status.RUNTIME_ERROR else None,
        )

    def _lost_verdict(self, problem: LoadedProblem, lost: list[SandboxLost], results: dict[int, TestResult]) -> Verdict:
        """Both containers were lost. The judge's fault only if its engine is down; otherwise the submission
        took them (at whatever tests: it can choose a different one each time)."""
        if not self.pool.engine_ok():
            return Verdict(
                status=Status.INTERNAL_ERROR, message=f"the judge failed: {lost[-1] if lost else 'no sandbox'}"
            )
        index = lost[-1].during_test if lost else None
        tests = _skipped(problem, results)
        if index is not None and 0 <= index < len(tests):
            tests[index] = tests[index].model_copy(update={"status": TestStatus.ERROR, "message": CRASHED})
        _status, score = overall(tests)
        where = "while it was loaded" if index is None or index < 0 else "during a test"
        return Verdict(status=Status.RUNTIME_ERROR, score=score, message=f"{CRASHED} {where}", tests=tests)


def _skipped(problem: LoadedProblem, results: dict[int, TestResult]) -> list[TestResult]:
    """Every test: its result where there is one, skipped otherwise."""
    return [
        results.get(i)
        or TestResult(index=i, name=t.name, visible=t.visible, weight=t.weight, status=TestStatus.SKIPPED)
        for i, t in enumerate(problem.problem.tests)
    ]


def _notify(on_test: Callable[[TestResult], None] | None, result: TestResult) -> None:
    """Progress is a courtesy to readers: its failure must not stop grading."""
    if on_test is None:
        return
    try:
        on_test(result)
    except Exception:
        log.exception("publishing a test's progress failed")
