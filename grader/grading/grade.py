"""grade_submission: one submission, from source to verdict, through a warm sandbox."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from grader.config import Settings
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
from grader.sandbox.container import LOADING, SandboxLost, SandboxProtocolError
from grader.sandbox.frames import TestHeader
from grader.sandbox.pool import SandboxPool
from grader.sandbox.values import MalformedValue, decode_value

log = logging.getLogger(__name__)

DEFAULT_TOLERANCE = Tolerance()


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
        """Grades one submission. Never raises for anything the submission does."""
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
        for _attempt in range(self.settings.max_attempts):
            results: list[TestResult] = []
            failed_values: dict[int, Any] = {}

            def landed(
                header: TestHeader,
                body: bytes,
                results: list[TestResult] = results,
                failed_values: dict[int, Any] = failed_values,
            ) -> None:
                result = self._test_result(problem, expected, header, body, failed_values)
                results.append(result)
                if on_test is not None:
                    on_test(result)

            try:
                container = self.pool.acquire()
            except SandboxLost as exc:
                lost.append(exc)
                continue
            try:
                outcome = container.run_job(job, job_deadline(problem, self.settings), landed)
            except SandboxLost as exc:
                self.pool.release(container, reusable=False)
                log.warning("sandbox lost while grading (attempt %d): %s", _attempt + 1, exc)
                lost.append(exc)
                if _same_test_twice(lost):
                    break  # the same test lost its sandbox twice: the submission is doing it
                continue
            self.pool.release(container, reusable=outcome.clean)
            if outcome.compile.status != "ok":
                return self._load_failure(problem, outcome.compile)
            return self._finish(problem, expected, results, failed_values)
        return self._lost_verdict(problem, lost)

    # -- pieces ------------------------------------------------------------------------------------
    def _test_result(
        self,
        problem: LoadedProblem,
        expected: ExpectedOutputs,
        header: TestHeader,
        body: bytes,
        failed_values: dict[int, Any],
    ) -> TestResult:
        test = problem.problem.tests[header.index]
        result = TestResult(
            index=header.index,
            name=test.name,
            visible=test.visible,
            weight=test.weight,
            status=TestStatus.PASSED,
            time_ms=round(header.time_ms, 3),
        )
        if header.status != "ok":
            result.status = RUNNER_TO_TEST[header.status]
            kind = f"{header.error_type}: " if header.error_type and header.status == "error" else ""
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
        comparison = self._compare(problem, header.index, expected.reference.values[header.index], got)
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
            verdict.hint = self._pitfall_hint(problem, expected, results, failed_values)
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

    def _load_failure(self, problem: LoadedProblem, header: Any) -> Verdict:
        status = LOAD_TO_STATUS.get(header.status, Status.RUNTIME_ERROR)
        kind = f"{header.error_type}: " if header.error_type else ""
        message = f"{kind}{header.message or ''}".strip() or status.value.replace("_", " ")
        if status == Status.RUNTIME_ERROR and header.line:
            message = f"line {header.line}: {message}"
        tests = [
            TestResult(index=i, name=t.name, visible=t.visible, weight=t.weight, status=TestStatus.SKIPPED)
            for i, t in enumerate(problem.problem.tests)
        ]
        return Verdict(
            status=status,
            score=0.0,
            message=message,
            line=header.line,
            tests=tests,
            traceback=header.traceback if status == Status.RUNTIME_ERROR else None,
        )

    def _lost_verdict(self, problem: LoadedProblem, lost: list[SandboxLost]) -> Verdict:
        """Every attempt lost its sandbox. Twice in the same test: the submission did it; otherwise the judge."""
        if _same_test_twice(lost):
            index = lost[-1].during_test
            reason = (
                "broke the sandbox protocol" if isinstance(lost[-1], SandboxProtocolError) else "killed the sandbox"
            )
            if index == LOADING:
                return Verdict(
                    status=Status.RUNTIME_ERROR,
                    score=0.0,
                    message=f"the submission {reason} while it was loaded",
                    tests=[
                        TestResult(index=i, name=t.name, visible=t.visible, weight=t.weight, status=TestStatus.SKIPPED)
                        for i, t in enumerate(problem.problem.tests)
                    ],
                )
            tests = []
            for i, t in enumerate(problem.problem.tests):
                status = TestStatus.ERROR if i == index else TestStatus.SKIPPED
                tests.append(
                    TestResult(
                        index=i,
                        name=t.name,
                        visible=t.visible,
                        weight=t.weight,
                        status=status,
                        message=f"the submission {reason}" if i == index else None,
                    )
                )
            return Verdict(
                status=Status.RUNTIME_ERROR, score=0.0, message=f"the submission {reason} during a test", tests=tests
            )
        message = str(lost[-1]) if lost else "no sandbox available"
        return Verdict(status=Status.INTERNAL_ERROR, message=f"the judge failed: {message}")


def _same_test_twice(lost: list[SandboxLost]) -> bool:
    """The last two attempts both lost their sandbox during the same test."""
    return len(lost) >= 2 and lost[-1].during_test is not None and lost[-1].during_test == lost[-2].during_test
