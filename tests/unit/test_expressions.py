"""`expect:`, `holds:` and `round:` in a test's `check:` (grader/grading/expressions.py, torchlike.py and
checkers/tolerance.py): expressions compiled when the problem loads, evaluated on the trusted side over
decoded values, total on hostile data."""

from __future__ import annotations

import json

import numpy as np
import pytest

from grader.containers.values import DTYPES, FLOAT_DTYPES, Tensor
from grader.grading.checkers import get
from grader.grading.expressions import as_input, as_value, compile_expression
from grader.grading.torchlike import TORCH
from grader.problems.registry import ProblemError, parse_problem

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


# -- every wire dtype, as itself ----------------------------------------------------------------------------
def evaluate(text: str, **names):  # type: ignore[no-untyped-def]
    return compile_expression(text).evaluate({key: as_input(value) for key, value in names.items()})


def of(dtype: str) -> Tensor:
    values = np.array([[1.0, 2.0], [4.0, 0.5]])
    values = values + 0j if dtype.startswith("complex") else values
    return Tensor(dtype, values.astype(DTYPES[dtype]))


def test_the_torch_namespace_names_every_wire_dtype_and_torchs_aliases() -> None:
    for name, dtype in DTYPES.items():
        assert getattr(TORCH, name) == dtype
    aliases = {"half": "float16", "float": "float32", "double": "float64", "cfloat": "complex64"}
    aliases |= {"cdouble": "complex128", "short": "int16", "int": "int32", "long": "int64"}
    for alias, name in aliases.items():
        assert getattr(TORCH, alias) == DTYPES[name]


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_dtype_is_the_tensors_own(dtype: str) -> None:
    x = of(dtype)
    assert evaluate(f"x.dtype == torch.{dtype}", x=x) is True
    for other in DTYPES:
        assert evaluate(f"x.dtype == torch.{other}", x=x) is (other == dtype)
    assert evaluate("x.dtype != torch.float32", x=x) is (dtype != "float32")
    assert evaluate("x.is_floating_point()", x=x) is (dtype in FLOAT_DTYPES and not dtype.startswith("complex"))
    assert evaluate("x.is_complex()", x=x) is dtype.startswith("complex")


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_conversions_work_on_every_dtype_and_give_back_wire_tensors(dtype: str) -> None:
    x = of(dtype)
    want = np.array([[1, 2], [4, 0.5]], dtype=np.float64).astype(DTYPES[dtype]).astype(np.float64)
    if dtype == "bool":
        want = np.ones((2, 2))
    for text, name in [("x.double()", "float64"), ("x.float()", "float32"), ("x.to(torch.float64)", "float64")]:
        if dtype.startswith("complex"):
            text = text.replace("x.", "x.real.")
        value = as_value(evaluate(text, x=x), None)
        assert isinstance(value, Tensor) and value.dtype == name
        np.testing.assert_array_equal(value.array.astype(np.float64), want)
    for target in DTYPES:
        if dtype.startswith("complex") and not target.startswith("complex"):
            continue  # as in torch, a complex tensor is not cast to a real one implicitly
        value = as_value(evaluate(f"x.to(torch.{target})", x=x), of(target))
        assert isinstance(value, Tensor) and value.dtype == target and value.array.dtype == DTYPES[target]
    for text in ("x.to('cpu')", "x.to('cpu', torch.bfloat16)", "x.to(dtype=torch.bfloat16)", "x.bfloat16()"):
        value = as_value(evaluate(text, x=x), None)
        assert value.dtype == ("bfloat16" if "bfloat16" in text else dtype)
    assert as_value(evaluate("x.to(y)", x=x, y=of("float16")), None).dtype == "float16"


@pytest.mark.parametrize("dtype", sorted(FLOAT_DTYPES - {"complex64", "complex128"}))
def test_arithmetic_and_reductions_keep_a_narrow_dtype_as_torch_does(dtype: str) -> None:
    x = of(dtype)
    assert as_value(evaluate("x * 2", x=x), None).dtype == dtype
    assert as_value(evaluate("abs(x) + x", x=x), None).dtype == dtype
    assert as_value(evaluate("x.max()", x=x), None) == 4.0  # a 0-d result against no tensor: a number
    assert as_value(evaluate("x.max()", x=x), x).dtype == dtype  # against a tensor: a 0-d tensor
    assert evaluate("x.double().sum().item()", x=x) == 7.5
    assert evaluate("torch.tensor(1.5, dtype=torch.bfloat16).dtype == torch.bfloat16") is True


@pytest.mark.parametrize("bad", ["str", "dict", "[('a', 'f4')]", "1", "(1, 2)"])
def test_to_takes_only_a_dtype_a_tensor_can_have(bad: str) -> None:
    # No conversion builds what no tensor is (text, objects, records), whatever its size.
    with pytest.raises(TypeError):
        evaluate(f"x.to({bad})", x=of("float32"))
    for dtype in (bad, "'float32'", "'U100000000'"):  # torch takes no dtype by its name either
        with pytest.raises(TypeError):
            evaluate(f"torch.tensor([1.0], dtype={dtype})")


def test_a_holds_that_the_weights_are_float32_is_false_for_bfloat16_weights() -> None:
    """Issue 24's forgery: bfloat16 weights used to arrive widened to float32 and pass this check."""
    check = {"weight": {"holds": ["weight.dtype == torch.float32"]}}
    weight = np.random.default_rng(0).normal(size=(4, 3))
    float32 = {"weight": Tensor("float32", weight.astype(np.float32))}
    bfloat16 = {"weight": Tensor("bfloat16", weight.astype(DTYPES["bfloat16"]))}
    assert compare(float32, float32, check).passed
    result = compare(float32, bfloat16, check)
    assert not result.passed and "weight.dtype == torch.float32" in result.details["reason"]
    assert compare(float32, bfloat16, {"weight": {"holds": ["weight.dtype == torch.bfloat16"]}}).passed


def test_an_expected_value_in_another_dtype_is_not_relabelled_as_the_submissions() -> None:
    """`expect:` gives the float32 value; a submission that returned it rounded to bfloat16 has the wrong dtype
    (the expression's result used to be named after the submission's dtype when their bytes agreed)."""
    x = np.linspace(-1, 1, 12, dtype=np.float32)
    got = {"x": Tensor("float32", x), "y": Tensor("bfloat16", x.astype(DTYPES["bfloat16"]))}
    result = compare(got, got, {"y": {"expect": "x * 1"}})
    assert not result.passed and result.details["reason"] == "dtype bfloat16 instead of float32"
    assert compare(got, got, {"y": {"expect": "(x * 1).to(torch.bfloat16)"}}).passed
