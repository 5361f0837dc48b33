"""Which known mistake a wrong submission makes: the pitfall it resembles, by what it gets wrong rather
than by its bytes.

A pitfall matches a submission when
1. every test the submission does not pass, the pitfall fails too (the submission's failed tests are a
   non-empty subset of the pitfall's: a submission that makes the mistake only where it shows, or whose
   other tests happen to pass, still makes it; one that fails a test the pitfall passes has a mistake
   the hint does not explain), and
2. on each of those tests, what the submission returned is closer to the pitfall's result than to the
   reference's (grading/distance.py: relative distance over finite elements, NaN and infinities one
   class, a different shape, dtype or type far; a test that returned nothing is close only to a test
   that returned nothing); keys a test checks by properties of their own values (`expect`, `holds`) are
   close when the same properties fail.
Of the pitfalls that match, the closest wins: the least mean distance to the pitfall over the tests the
pitfall fails (so one failing the same tests beats one failing more); ties go to the first in the file.
Everything here is a courtesy: nothing raises out of it, and its work is linear in the values' sizes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from grader.grading import checkers
from grader.grading.compare import Comparison
from grader.grading.distance import FAR, distance
from grader.grading.execution import MISSING, ModuleRun
from grader.grading.model import ProblemSpec
from grader.grading.verdict import TestResult, TestStatus

log = logging.getLogger(__name__)

Compare = Callable[[int, Any, Any], Comparison]  # (test index, expected, got)


class _Measure:
    """Distances between two results of one test, property keys judged by the properties that fail."""

    def __init__(self, problem: ProblemSpec) -> None:
        self.problem = problem
        self._properties: dict[tuple[int, int], dict[str, frozenset[str]]] = {}

    def properties(self, index: int, value: Any) -> dict[str, frozenset[str]]:
        key = (index, id(value))
        if key not in self._properties:
            try:
                test = self.problem.tests[index]
                self._properties[key] = checkers.get(test.checker).failing_properties(value, test.check)
            except Exception:  # noqa: BLE001 - a value the rule cannot take has no properties to compare
                log.debug("properties of test %d could not be computed", index + 1, exc_info=True)
                self._properties[key] = {}
        return self._properties[key]

    def __call__(self, index: int, a: Any, b: Any) -> float:
        if a is MISSING or b is MISSING:
            return 0.0 if a is b else FAR
        mine, theirs = self.properties(index, a), self.properties(index, b)
        if not (mine or theirs) or not isinstance(a, dict) or not isinstance(b, dict):
            return distance(a, b)
        keys = set(a) | set(b)
        total = 0.0
        for key in keys:
            if key in mine or key in theirs:
                total += 0.0 if mine.get(key) == theirs.get(key) else FAR
            else:
                total += distance(a[key], b[key]) if key in a and key in b else FAR
        return total / len(keys)


def _at(values: Sequence[Any], index: int) -> Any:
    return values[index] if 0 <= index < len(values) else MISSING


def _fails(compare: Compare, index: int, expected: Any, got: Any) -> bool:
    if got is MISSING:
        return True
    try:
        return not compare(index, expected, got).passed
    except Exception:  # noqa: BLE001 - as the judge: a value the rule cannot take fails the test
        return True


def matching_pitfall(
    problem: ProblemSpec,
    reference: Sequence[Any],
    pitfall_values: Sequence[Sequence[Any]],
    run: ModuleRun,
    tests: list[TestResult],
    compare: Compare,
) -> int | None:
    """The number of the pitfall whose mistake the module makes (see the module's docstring), if any."""
    failed = [t.index for t in tests if t.status != TestStatus.PASSED]
    if not failed:
        return None
    measure = _Measure(problem)
    ours = {i: run.value(i) for i in range(len(reference))}
    to_reference = {i: measure(i, ours.get(i, MISSING), _at(reference, i)) for i in failed}
    best: tuple[float, int] | None = None
    for number, values in enumerate(pitfall_values):
        if any(not _fails(compare, i, _at(reference, i), _at(values, i)) for i in failed):
            continue  # the pitfall passes a test the module fails: another mistake
        near = {i: measure(i, ours.get(i, MISSING), _at(values, i)) for i in failed}
        if any(near[i] >= to_reference[i] for i in failed):
            continue  # closer to the right answer than to the mistake
        theirs = [i for i in range(len(reference)) if i in near or _fails(compare, i, reference[i], _at(values, i))]
        score = sum(near[i] if i in near else measure(i, ours.get(i, MISSING), _at(values, i)) for i in theirs)
        score /= len(theirs)
        if best is None or score < best[0]:
            best = (score, number)
    return best[1] if best is not None else None


def why_no_hint(
    problem: ProblemSpec,
    reference: Sequence[Any],
    pitfall_values: Sequence[Sequence[Any]],
    run: ModuleRun,
    tests: list[TestResult],
    compare: Compare,
    number: int,
) -> str:
    """Why pitfall `number` does not match the module (the first of matching_pitfall's conditions it
    misses), in words for a problem's author."""
    failed = [t.index for t in tests if t.status != TestStatus.PASSED]
    if not failed:
        return "it passes every test"
    values = pitfall_values[number] if 0 <= number < len(pitfall_values) else []
    passes = [i for i in failed if not _fails(compare, i, _at(reference, i), _at(values, i))]
    if passes:
        return (
            f"its outputs differ from one run to the next: test {passes[0] + 1} failed in one run and passed in "
            "another (a hint compares a submission's outputs with the pitfall's; draw only from the seeded "
            "generators)"
        )
    measure = _Measure(problem)
    ours = {i: run.value(i) for i in range(len(reference))}
    for i in failed:
        near, far = (
            measure(i, ours.get(i, MISSING), _at(values, i)),
            measure(i, ours.get(i, MISSING), _at(reference, i)),
        )
        if near >= far:
            return (
                f"on test {i + 1} its result is no closer to its own than to the reference's ({near:.3g} against "
                f"{far:.3g}): the test fails it by a difference the distance does not see; a test where its answer "
                "is plainly wrong gives it its hint"
            )
    return "it matches"


def pitfall_hint(
    problem: ProblemSpec,
    reference: Sequence[Any],
    pitfall_values: Sequence[Sequence[Any]],
    run: ModuleRun,
    tests: list[TestResult],
    compare: Compare,
) -> str | None:
    """The hint of the matching pitfall, if any; None, never an exception, when matching fails."""
    try:
        number = matching_pitfall(problem, reference, pitfall_values, run, tests, compare)
    except Exception:  # a hint is a courtesy: its failure must not cost the verdict
        log.exception("matching pitfalls failed")
        return None
    return problem.pitfalls[number].hint if number is not None and number < len(problem.pitfalls) else None
