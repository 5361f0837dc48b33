"""The float64 oracle's trusted side (grader/problems/check/oracle.py): the reference's values with the oracle's
floats in their place, the error measured, and values that are not the same computation told apart."""

from __future__ import annotations

import numpy as np
import pytest

from grader.containers.values import Tensor
from grader.problems.check.oracle import Finding, Unlike, narrowed, oracle_source, suggested


def f32(*values: float) -> Tensor:
    return Tensor("float32", np.array(values, dtype=np.float32))


def f64(*values: float) -> Tensor:
    return Tensor("float64", np.array(values, dtype=np.float64))


def test_the_oracles_floats_take_the_references_place_in_its_dtype_and_the_error_is_measured() -> None:
    finding = Finding(0)
    reference = {"y": f32(1.0, 2.0), "n": 3, "idx": Tensor("int64", np.array([1]))}
    out = narrowed(reference, {"y": f64(1.0000001, 2.0), "n": 3, "idx": Tensor("int64", np.array([7]))}, finding)
    assert out["y"].dtype == "float32" and out["n"] == 3 and out["idx"].array.tolist() == [1]
    assert finding.error_abs == pytest.approx(1e-7, rel=1e-3) and finding.error_rel == pytest.approx(1e-7, rel=1e-3)


@pytest.mark.parametrize(
    "oracle",
    [
        {"y": f64(1.0, 2.0, 3.0)},  # another shape
        {"y": [1.0, 2.0]},  # another type
        {"z": f64(1.0, 2.0)},  # other keys
        {"y": f64(1.0, float("nan"))},  # a NaN where the reference has none
        {"y": f64(1.5, 2.0)},  # far from it: not a rounding
        {"y": Tensor("int64", np.array([1, 2]))},  # an integer where the reference has floats
    ],
)
def test_values_that_are_not_the_same_computation_are_unlike(oracle: dict) -> None:
    with pytest.raises(Unlike):
        narrowed({"y": f32(1.0, 2.0)}, oracle, Finding(0))


def test_infinities_and_nans_in_the_same_places_are_alike() -> None:
    finding = Finding(0)
    narrowed(f32(float("inf"), float("nan"), 1.0), f64(float("inf"), float("nan"), 1.0), finding)
    assert finding.error_abs == 0.0


@pytest.mark.parametrize(("error", "said"), [(1.2e-7, "5e-7"), (3e-5, "2e-4"), (0.0, "0"), (2.5e-9, "1e-8")])
def test_a_suggested_tolerance_holds_the_error_four_times_over(error: float, said: str) -> None:
    assert suggested(error) == said
    assert float(said) >= 4 * error


def test_the_shim_compiles_after_any_reference_and_names_the_entry_points() -> None:
    source = oracle_source("def f(x):\n    return x\n", ["f", "g"])
    compile(source, "oracle.py", "exec")
    assert "['f', 'g']" in source
