"""Which known mistake a wrong submission makes: the pitfall whose outputs it shares."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grader.grading.compare import Comparison
from grader.grading.execution import MISSING, ModuleRun
from grader.grading.model import ProblemSpec
from grader.grading.verdict import TestResult, TestStatus

Compare = Callable[[int, Any, Any], Comparison]  # (test index, expected, got)


def matching_pitfall(
    pitfall_values: list[list[Any]], run: ModuleRun, tests: list[TestResult], compare: Compare
) -> int | None:
    """The first pitfall that matches the module on every test it did not pass: where the module's
    answer was wrong, the pitfall's answer passes the test's own rule against it; where the module
    returned nothing (an error, a limit), the pitfall returned nothing either."""
    failing = [t for t in tests if t.status != TestStatus.PASSED]
    if not failing:
        return None
    for number, values in enumerate(pitfall_values):
        if all(_matches(test, values[test.index], run.value(test.index), compare) for test in failing):
            return number
    return None


def pitfall_hint(
    problem: ProblemSpec, pitfall_values: list[list[Any]], run: ModuleRun, tests: list[TestResult], compare: Compare
) -> str | None:
    """The hint of the matching pitfall, if any."""
    number = matching_pitfall(pitfall_values, run, tests, compare)
    return problem.pitfalls[number].hint if number is not None and number < len(problem.pitfalls) else None


def _matches(test: TestResult, theirs: Any, ours: Any, compare: Compare) -> bool:
    if test.status == TestStatus.FAILED:
        return theirs is not MISSING and ours is not MISSING and compare(test.index, theirs, ours).passed
    return theirs is MISSING  # we failed to answer: so must the pitfall
