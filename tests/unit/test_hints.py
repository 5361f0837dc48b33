"""Hints by mistake, not by bytes (grader/grading/hints.py, distance.py) on hand-built runs: the same failed
tests and outputs closer to the pitfall's than to the reference's; NaN and infinities one kind of failure;
properties (`expect`, `holds`) compared by which of them fail; the closest pitfall wins, ties in file order."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from grader.containers import protocol
from grader.containers.protocol import LoadHeader, Outcome
from grader.containers.values import Opaque, Tensor
from grader.grading import execution
from grader.grading.distance import FAR, distance
from grader.grading.execution import MISSING, ModuleRun
from grader.grading.expected import Expected
from grader.grading.hints import matching_pitfall, pitfall_hint
from grader.grading.judge import compare, judge_module
from grader.grading.verdict import Status

INF, NAN = math.inf, math.nan


@dataclass
class Case:
    name: str
    check: dict[str, Any] = field(default_factory=dict)
    checker: str = "tolerance"
    visible: bool = True
    weight: float = 1.0
    code: str = "return {}"
    seed: str | None = None


@dataclass
class Pitfall:
    name: str
    hint: str
    code: str = ""


@dataclass
class Problem:
    tests: list[Case]
    pitfalls: list[Pitfall]
    id: str = "p"
    version: str = "1"
    entry_points: tuple[str, ...] = ("f",)
    reference: str = ""
    helpers: str = ""
    limits: Any = None


def f32(*values: float) -> Tensor:
    return Tensor("float32", np.array(values, dtype=np.float32))


def run_of(*values: Any) -> ModuleRun:
    """A module's run: each value returned by its test, or an error where MISSING."""
    tests = {}
    for index, value in enumerate(values):
        status = Outcome.ERROR if value is MISSING else Outcome.OK
        tests[index] = execution.TestRun(
            header=protocol.TestHeader(index=index, status=status, time_ms=1.0), value=value
        )
    return ModuleRun(load=LoadHeader(status=Outcome.OK), tests=tests)


def hint_for(problem: Problem, reference: list[Any], pitfalls: list[list[Any]], *submission: Any) -> str | None:
    """The hint on the verdict a submission returning `submission` gets, judged as every submission is."""
    verdict = judge_module(problem, Expected.of_values(reference, pitfalls), run_of(*submission))
    return verdict.hint


def problem_of(*hints: str, tests: int = 2, check: dict | None = None) -> Problem:
    return Problem(
        tests=[Case(f"t{i}", check=dict(check or {})) for i in range(tests)],
        pitfalls=[Pitfall(f"p{n}", hint) for n, hint in enumerate(hints)],
    )


# The example: the pitfall log(sum(exp(x))) - x_t gives inf where the naive -log(exp(x_t)/sum) gives NaN.
REFERENCE = [{"loss": f32(0.5, 88.0, 1.25)}, {"loss": f32(2.0)}]
PITFALL = [{"loss": f32(0.5, INF, 1.25)}, {"loss": f32(2.0)}]


def test_nan_where_the_pitfall_has_inf_is_the_same_mistake() -> None:
    problem = problem_of("Subtract the maximum before exp.")
    naive = {"loss": f32(0.5, NAN, 1.25)}
    assert hint_for(problem, REFERENCE, [PITFALL], naive, {"loss": f32(2.0)}) == "Subtract the maximum before exp."
    negative = {"loss": f32(0.5, -INF, 1.25000001)}  # an infinity of the other sign, rounding elsewhere
    assert hint_for(problem, REFERENCE, [PITFALL], negative, {"loss": f32(2.0)}) == "Subtract the maximum before exp."


def test_a_wrong_answer_closer_to_the_reference_gets_no_hint() -> None:
    problem = problem_of("Scale by sqrt(d_model).")
    reference = [{"out": f32(1.0, 2.0, 3.0)}]
    pitfall = [{"out": f32(2.0, 4.0, 6.0)}]
    problem.tests = problem.tests[:1]
    assert hint_for(problem, reference, [pitfall], {"out": f32(1.01, 2.0, 3.0)}) is None
    assert hint_for(problem, reference, [pitfall], {"out": f32(1.9, 4.1, 6.3)}) == "Scale by sqrt(d_model)."


def test_the_closest_pitfall_wins_and_ties_go_to_the_first_in_the_file() -> None:
    problem = problem_of("far", "near", "near again", tests=1)
    reference = [f32(1.0, 2.0, 3.0)]
    far, near = [f32(2.0, 4.0, 6.0)], [f32(1.5, 3.0, 4.5)]
    submission = f32(1.5, 3.0, 4.5000005)
    assert distance(submission, far[0]) < distance(submission, reference[0])  # both match...
    assert hint_for(problem, reference, [far, near, near], submission) == "near"  # ...the closer wins
    assert hint_for(problem, reference, [near, near, far], submission) == "far"  # the hint of pitfall 1
    tied = problem_of("first", "second", tests=1)
    assert hint_for(tied, reference, [near, near], submission) == "first"


def test_the_failed_tests_must_be_among_the_pitfalls() -> None:
    problem = problem_of("the mistake", tests=3)
    reference = [f32(1.0), f32(2.0), f32(3.0)]
    pitfall = [f32(5.0), f32(2.0), f32(7.0)]  # fails tests 1 and 3
    assert hint_for(problem, reference, [pitfall], f32(5.0), f32(2.0), f32(7.0)) == "the mistake"
    # Fails only test 3 (the mistake does not show on test 1): a subset, the same mistake.
    assert hint_for(problem, reference, [pitfall], f32(1.0), f32(2.0), f32(7.1)) == "the mistake"
    # Also fails test 2, which the pitfall passes: another mistake besides.
    assert hint_for(problem, reference, [pitfall], f32(5.0), f32(9.0), f32(7.0)) is None


def test_a_pitfall_failing_the_same_tests_beats_one_failing_more() -> None:
    problem = problem_of("everywhere", "only here", tests=2)
    reference = [f32(1.0), f32(2.0)]
    everywhere = [f32(5.0), f32(6.0)]
    only_here = [f32(5.0), f32(2.0)]
    assert hint_for(problem, reference, [everywhere, only_here], f32(5.0), f32(2.0)) == "only here"
    assert hint_for(problem, reference, [everywhere, only_here], f32(5.0), f32(6.0)) == "everywhere"


def test_a_test_that_returned_nothing_matches_only_a_pitfall_that_returned_nothing() -> None:
    problem = problem_of("crashes", "answers", tests=2)
    reference = [f32(1.0), f32(2.0)]
    crashes = [f32(5.0), MISSING]
    answers = [f32(5.0), f32(6.0)]
    run = run_of(f32(5.0), MISSING)
    tests = judge_module(problem, Expected.of_values(reference, [answers, crashes]), run).tests
    found = matching_pitfall(
        problem, reference, [answers, crashes], run, tests, lambda i, a, b: compare(problem, i, a, b)
    )
    assert found == 1


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (f32(NAN, 1.0), f32(-INF, 1.0), 0.0),  # non-finite is one class
        (f32(NAN, 1.0), f32(0.0, 1.0), 0.5),  # non-finite against finite: that element counts fully
        (f32(1.0), Tensor("float64", np.array([1.0])), FAR),  # dtype
        (f32(1.0, 2.0), f32(1.0, 2.0, 3.0), FAR),  # shape
        (3, 3.0, 0.0),  # numbers are numbers
        (True, 1, FAR),  # a bool is not a number
        ("a", "a", 0.0),
        ([f32(1.0), "x"], [f32(1.0), "y"], 0.5),
        ({"a": 1.0}, {"a": 1.0, "b": 2.0}, 0.5),
        ((1.0,), [1.0], FAR),
        (Opaque("Size"), Opaque("Size"), 0.0),
        (None, None, 0.0),
        (Tensor("float32", np.zeros((0, 4), np.float32)), Tensor("float32", np.zeros((0, 4), np.float32)), 0.0),
    ],
)
def test_distance(a: Any, b: Any, expected: float) -> None:
    assert distance(a, b) == pytest.approx(expected, abs=1e-6)


def test_distance_is_total_on_hostile_values() -> None:
    huge = Tensor("float64", np.array([1e308, -1e308, 5e-324]))
    assert 0.0 < distance(huge, Tensor("float64", np.array([-1e308, 1e308, 0.0]))) <= 1.0
    assert distance(10**400, 1.0) == FAR  # an int past any float is an infinity: not a finite number
    deep: Any = 1.0
    for _ in range(200):
        deep = [deep]
    assert distance(deep, deep) == FAR  # deeper than anything decoded: far, not a RecursionError
    assert distance(object(), object()) == FAR
    noise = Tensor("float32", np.array([1e-9, 1.0], np.float32))
    assert distance(noise, Tensor("float32", np.array([-1e-9, 1.0], np.float32))) < 1e-3  # rounding near zero


HOLDS = {"rate": {"holds": ["rate > 0.4", "rate < 0.6"]}, "n": {"rtol": 0.0, "atol": 0.0}}


def test_keys_checked_by_properties_match_when_the_same_properties_fail() -> None:
    problem = problem_of("too few kept", check=HOLDS, tests=1)
    reference = [{"rate": 0.5, "n": 10}]
    pitfall = [{"rate": 0.1, "n": 10}]  # fails "rate > 0.4"
    assert hint_for(problem, reference, [pitfall], {"rate": 0.3, "n": 10}) == "too few kept"  # another value
    assert hint_for(problem, reference, [pitfall], {"rate": 0.9, "n": 10}) is None  # the other property fails


EXPECT = {"out": {"expect": "x * 2"}}


def test_keys_checked_with_expect_match_when_expect_fails_on_both() -> None:
    problem = problem_of("doubled nothing", check=EXPECT, tests=1)
    reference = [{"out": f32(2.0, 4.0), "x": f32(1.0, 2.0), "y": 1.0}]
    pitfall = [{"out": f32(1.0, 2.0), "x": f32(1.0, 2.0), "y": 1.0}]  # out is not x * 2
    also_not_doubled = {"out": f32(1.5, 2.5), "x": f32(1.0, 2.0), "y": 1.0}
    assert hint_for(problem, reference, [pitfall], also_not_doubled) == "doubled nothing"
    doubled_but_y_wrong = {"out": f32(2.0, 4.0), "x": f32(1.0, 2.0), "y": 5.0}
    assert hint_for(problem, reference, [pitfall], doubled_but_y_wrong) is None


def test_a_failing_rule_or_hostile_values_cost_the_hint_not_the_verdict() -> None:
    problem = problem_of("h", tests=1)
    run = run_of(Opaque("Size"))

    def broken(index: int, expected: Any, got: Any) -> Any:
        raise RuntimeError("boom")

    tests = judge_module(problem, Expected.of_values([f32(1.0)], [[f32(2.0)]]), run).tests
    assert pitfall_hint(problem, [f32(1.0)], [[f32(2.0)]], run, tests, broken) is None
    assert pitfall_hint(problem, [f32(1.0)], [[]], run, tests, broken) is None  # a short pitfall list
    verdict = judge_module(problem, Expected.of_values([f32(1.0)], [[Opaque("Size")]]), run)
    assert verdict.status == Status.WRONG_ANSWER and verdict.hint == "h"
