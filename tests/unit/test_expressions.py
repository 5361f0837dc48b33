"""`expect:`, `holds:` and `round:` in a test's `check:` (grader/grading/expressions.py, torchlike.py and
checkers/tolerance.py): expressions compiled when the problem loads, evaluated on the trusted side over
decoded values, total on hostile data."""

from __future__ import annotations

import json

import numpy as np
import pytest

from grader.grading.checkers import get
from grader.problems.registry import ProblemError, parse_problem
from grader.sandboxes.values import Tensor

TOLERANCE = get("tolerance")


def compare(expected, got, check):
    return TOLERANCE.compare(expected, got, TOLERANCE.parse(check))


def embedding(scale: float, weight_seed: int = 0) -> dict:
    weight = np.random.default_rng(weight_seed).normal(size=(7, 4)).astype("f4")
    tokens = np.array([3, 0, 6, 3])
    out = (weight[tokens] * np.float32(scale)).astype("f4")
    return {"out": Tensor("float32", out), "weight": Tensor("float32", weight), "tokens": Tensor("int64", tokens)}


EXPECT = {
    "out": {"expect": "weight[tokens] * math.sqrt(weight.shape[1])", "rtol": 1e-5},
    "weight": {"holds": ["weight.shape == (7, 4)"]},  # its own weights, whatever they are
}


def test_expect_computes_the_expected_value_from_the_submissions_own_values() -> None:
    reference = embedding(2.0, weight_seed=0)
    own_weights = embedding(2.0, weight_seed=1)  # re-initialised differently: still right
    assert compare(reference, own_weights, EXPECT).passed
    wrong = compare(reference, embedding(1.0, weight_seed=1), EXPECT)
    assert not wrong.passed
    assert wrong.details["path"] == "out" and wrong.details["reason"] == "values differ"


def dropout_mask(sampler: str, seed: int, p: float = 0.3, n: int = 200_000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if sampler == "rand_like":  # torch.rand_like(x) >= p
        return rng.random(n) >= p
    return rng.binomial(1, 1 - p, n).astype(bool)  # torch.bernoulli(torch.full_like(x, 1 - p))


HOLDS = {"mask": {"holds": ["abs((mask == 0).double().mean().item() - 0.3) < 0.02", "mask.numel() == 200000"]}}


@pytest.mark.parametrize("sampler", ["rand_like", "bernoulli"])
def test_a_statistical_test_passes_any_correct_sampler(sampler: str) -> None:
    reference = {"mask": Tensor("bool", dropout_mask("bernoulli", 0))}
    got = {"mask": Tensor("bool", dropout_mask(sampler, 7))}
    assert compare(reference, got, HOLDS).passed


def test_a_statistical_test_refuses_the_wrong_rate_and_names_the_property() -> None:
    reference = {"mask": Tensor("bool", dropout_mask("bernoulli", 0))}
    wrong = compare(reference, {"mask": Tensor("bool", dropout_mask("rand_like", 1, p=0.7))}, HOLDS)
    assert not wrong.passed
    assert "does not hold" in wrong.details["reason"] and "0.3" in wrong.details["reason"]


@pytest.mark.parametrize(
    "hostile",
    [
        pytest.param("not a tensor", id="a string"),
        pytest.param(10**4000, id="a huge int"),
        pytest.param(None, id="None"),
        pytest.param([1, 2, 3], id="a list"),
    ],
)
def test_hostile_values_are_a_wrong_answer_with_a_bounded_message(hostile) -> None:
    reference = {"mask": Tensor("bool", dropout_mask("bernoulli", 0))}
    result = compare(reference, {"mask": hostile}, HOLDS)
    assert not result.passed
    assert len(result.details["reason"]) < 600
    result = compare(embedding(2.0), {**embedding(2.0), "weight": hostile}, EXPECT)
    assert not result.passed and "cannot be computed" in result.details["reason"]


def test_operators_that_would_build_something_huge_are_refused_while_evaluated() -> None:
    check = {"n": {"holds": ["2 ** n > 0"]}, "x": {"holds": ["(x[:, None] * x[None, :]).sum() >= 0"]}}
    big = {"n": 10**6, "x": Tensor("float32", np.zeros(100_000, "f4"))}
    result = compare(big, big, check)
    assert not result.passed
    assert "integer power" in result.details["reason"]
    result = compare({**big, "n": 3}, {**big, "n": 3}, check)
    assert "elements" in result.details["reason"]


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("out.__class__", "names starting with '_'"),
        ("_secret", "names starting with '_'"),
        ("[a for a in out].gi_frame", "'gi_frame' is not allowed"),
        ("(a for a in out).gi_frame.f_globals", "is not allowed"),
        ("out.tofile('/tmp/x')", "'tofile' is not allowed"),
        ("(lambda: 1)()", "Lambda is not allowed"),
        ("f'{out:>1000000000}'", "JoinedStr is not allowed"),
        ("[a for a in out for b in out]", "at most one `for`"),
        ("out +", "does not parse"),
    ],
)
def test_expressions_are_refused_when_the_problem_loads_at_their_line(expression: str, message: str) -> None:
    text = PROBLEM.replace('"EXPRESSION"', json.dumps(expression))
    with pytest.raises(ProblemError) as caught:
        parse_problem(text, "p.yaml")
    [line] = caught.value.lines()
    assert line.startswith("p.yaml:16: tests.1.check.out.holds.1: "), line
    assert message in line


def test_holds_and_round_take_no_tolerance() -> None:
    for options in ("{holds: ['out > 0'], rtol: 0.1}", "{round: 3, atol: 0.1}", "{holds: ['out > 0'], expect: out}"):
        text = PROBLEM.replace('\n        holds:\n          - "EXPRESSION"', " " + options)
        with pytest.raises(ProblemError, match="takes no"):
            parse_problem(text, "p.yaml")


def test_round_compares_after_rounding() -> None:
    assert compare({"rate": 0.12345}, {"rate": 0.123449}, {"rate": {"round": 3}}).passed
    assert not compare({"rate": 0.1234}, {"rate": 0.1236}, {"rate": {"round": 3}}).passed


PROBLEM = """\
id: p
title: P
difficulty: easy
statement: s
starter_code: |
  def f(): pass
entry_points: [f]
reference: |
  def f(): return 1
tests:
  - name: t
    code: 'return {"out": f()}'
    check:
      out:
        holds:
          - "EXPRESSION"
"""
