"""grader/grading/compare.py: expected vs got, as plain data, on the trusted side."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from grader.containers.values import DTYPES, FLOAT_DTYPES, Tensor
from grader.grading.compare import EXACT, Comparison, Tolerance, compare_outputs, compare_values, json_number

DEFAULT = Tolerance()  # rtol 1e-5, atol 1e-6


def tensor(values, dtype: str = "float32") -> Tensor:
    return Tensor(dtype, np.array(values, dtype=DTYPES[dtype]))


def compare(expected, got, tolerance: Tolerance = DEFAULT) -> Comparison:
    return compare_values("out", expected, got, tolerance)


def strict_json(details: dict) -> dict:
    """The details as strict JSON would carry them (no NaN/Infinity tokens)."""
    return json.loads(json.dumps(details, allow_nan=False))


# -- tensors: pass -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_equal_tensors_pass(dtype: str) -> None:
    values = [[0, 1, 1], [1, 0, 1]]
    result = compare(tensor(values, dtype), tensor(values, dtype))
    assert result.passed
    assert result.details == {}


def test_empty_and_zero_d_tensors_pass() -> None:
    assert compare(tensor(np.zeros((0, 3))), tensor(np.zeros((0, 3)))).passed
    assert compare(tensor(1.5), tensor(1.5)).passed


def test_within_tolerance_passes() -> None:
    expected = tensor([1.0, 100.0, 0.0], "float64")
    got = tensor([1.0 + 5e-6, 100.0 + 5e-4, 5e-7], "float64")  # each under atol + rtol * |expected|
    assert compare(expected, got).passed


def test_tolerance_is_relative_to_the_expected_value() -> None:
    # |got - expected| <= atol + rtol * |expected|: 1e-3 off 1000 passes at rtol 1e-5 (limit 1e-2) ...
    assert compare(tensor([1000.0], "float64"), tensor([1000.001], "float64")).passed
    # ... but the same 1e-3 off 1.0 fails (limit ~1.1e-5).
    assert not compare(tensor([1.0], "float64"), tensor([1.001], "float64")).passed


def test_custom_tolerance() -> None:
    loose = Tolerance(rtol=0.0, atol=0.1)
    assert compare(tensor([1.0]), tensor([1.09]), loose).passed
    assert not compare(tensor([1.0]), tensor([1.11]), loose).passed


def test_zero_tolerance_means_exact() -> None:
    exact = Tolerance(rtol=0.0, atol=0.0)
    assert compare(tensor([0.1], "float64"), tensor([0.1], "float64"), exact).passed
    assert not compare(tensor([0.1], "float64"), tensor([np.nextafter(0.1, 1)], "float64"), exact).passed


# -- tensors: fail, with details -------------------------------------------------------------------------
def test_outside_tolerance_fails_with_details() -> None:
    expected = tensor([1.0, 2.0, 3.0, 4.0])
    got = tensor([1.0, 2.5, 3.0, 3.0])
    result = compare(expected, got)
    assert not result.passed
    d = result.details
    assert d["path"] == "out"
    assert d["reason"] == "values differ"
    assert d["mismatches"] == 2
    assert d["total"] == 4
    assert d["max_abs_error"] == pytest.approx(1.0)
    assert d["max_rel_error"] == pytest.approx(0.25)
    assert d["rtol"] == DEFAULT.rtol and d["atol"] == DEFAULT.atol
    assert d["first_mismatches"] == [
        {"index": [1], "expected": 2.0, "got": 2.5},
        {"index": [3], "expected": 4.0, "got": 3.0},
    ]
    assert d["expected"] == {"type": "tensor", "shape": [4], "dtype": "float32", "sample": [1.0, 2.0, 3.0, 4.0]}
    assert d["got"]["sample"] == [1.0, 2.5, 3.0, 3.0]


def test_first_mismatches_are_capped_and_in_index_order() -> None:
    expected = tensor(np.zeros((4, 5)))
    got = tensor(np.ones((4, 5)))
    d = compare(expected, got).details
    assert d["mismatches"] == 20
    assert len(d["first_mismatches"]) == 5
    assert [m["index"] for m in d["first_mismatches"]] == [[0, 0], [0, 1], [0, 2], [0, 3], [0, 4]]


def test_float32_values_in_details_are_shortest_decimals() -> None:
    d = compare(tensor([0.1]), tensor([0.2])).details
    assert d["first_mismatches"][0] == {"index": [0], "expected": 0.1, "got": 0.2}


def test_one_bad_element_among_many_is_found() -> None:
    expected = np.linspace(-1, 1, 1000).reshape(10, 10, 10)
    got = expected.copy()
    got[7, 3, 9] += 1e-3
    d = compare(tensor(expected, "float64"), tensor(got, "float64")).details
    assert d["mismatches"] == 1
    assert d["first_mismatches"][0]["index"] == [7, 3, 9]
    assert d["max_abs_error"] == pytest.approx(1e-3)


# -- NaN and infinities ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("expected", "got", "passed"),
    [
        pytest.param(math.nan, math.nan, True, id="nan-vs-nan"),
        pytest.param(math.nan, 1.0, False, id="nan-vs-finite"),
        pytest.param(1.0, math.nan, False, id="finite-vs-nan"),
        pytest.param(math.inf, 1e30, False, id="inf-vs-finite"),
        pytest.param(3.0e38, math.inf, False, id="finite-vs-inf"),
        pytest.param(math.inf, -math.inf, False, id="inf-vs-minus-inf"),
        pytest.param(math.inf, math.inf, True, id="inf-vs-inf"),
        pytest.param(-math.inf, -math.inf, True, id="minus-inf-vs-minus-inf"),
        pytest.param(math.nan, math.inf, False, id="nan-vs-inf"),
    ],
)
@pytest.mark.parametrize("kind", ["float32", "float64", "python-float"])
def test_nan_and_inf(kind: str, expected: float, got: float, passed: bool) -> None:
    huge = Tolerance(rtol=1.0, atol=1e40)  # no tolerance makes a non-finite value equal a finite one
    if kind == "python-float":
        result = compare(expected, got, huge)
    else:
        result = compare(tensor([0.5, expected], kind), tensor([0.5, got], kind), huge)
    assert result.passed is passed
    if not passed:
        strict_json(result.details)


def test_nan_in_details_appears_as_a_string() -> None:
    result = compare(tensor([np.nan, 1.0]), tensor([1.0, 1.0]))
    d = strict_json(result.details)
    assert d["first_mismatches"] == [{"index": [0], "expected": "nan", "got": 1.0}]
    assert d["expected"]["sample"] == ["nan", 1.0]


def test_inf_in_details_appears_as_a_string() -> None:
    d = strict_json(compare(tensor([np.inf]), tensor([-np.inf])).details)
    assert d["first_mismatches"] == [{"index": [0], "expected": "inf", "got": "-inf"}]


def test_non_finite_values_do_not_poison_the_error_summary() -> None:
    d = compare(tensor([np.nan, 1.0, np.inf]), tensor([np.nan, 1.5, 2.0])).details
    assert d["max_abs_error"] == pytest.approx(0.5)  # taken over the pairs where both are finite
    assert d["mismatches"] == 2
    assert d["nonfinite_mismatches"] == 1 and d["first_nonfinite"] == [2]


@pytest.mark.parametrize(
    ("got", "error"),
    [([np.nan, np.nan, np.nan], "nan"), ([np.inf, 1.0, 2.0], "inf"), ([1.0, -np.inf, np.nan], "nan")],
)
def test_nan_and_infinities_are_counted_never_an_error_of_zero(got: list[float], error: str) -> None:
    """A visible test whose output is all NaN once showed "Max abs error 0, Max rel error 0"."""
    d = compare(tensor([1.0, 1.0, 2.0]), tensor(got)).details
    assert d["reason"] == "values differ"
    assert d["max_abs_error"] == error and d["max_rel_error"] == error
    assert d["nonfinite_mismatches"] == d["mismatches"] == sum(not np.isfinite(x) for x in got)
    assert d["first_nonfinite"] == [next(i for i, x in enumerate(got) if not np.isfinite(x))]


# -- shape and dtype -------------------------------------------------------------------------------------
def test_shape_mismatch_fails_naming_the_shapes() -> None:
    result = compare(tensor(np.zeros((2, 3))), tensor(np.zeros((3, 2))))
    assert not result.passed
    assert "shape" in result.details["reason"]
    assert "[3, 2]" in result.details["reason"] and "[2, 3]" in result.details["reason"]
    assert result.details["expected"]["shape"] == [2, 3]
    assert result.details["got"]["shape"] == [3, 2]


def test_same_size_different_rank_fails() -> None:
    assert not compare(tensor(np.zeros(6)), tensor(np.zeros((1, 6)))).passed
    assert not compare(tensor(0.0), tensor([0.0])).passed


def test_dtype_mismatch_fails_naming_the_dtypes() -> None:
    result = compare(tensor([1.0, 2.0], "float32"), tensor([1.0, 2.0], "float64"))
    assert not result.passed
    assert "dtype" in result.details["reason"]
    assert "float64" in result.details["reason"] and "float32" in result.details["reason"]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("int64", "int32"),
        ("bool", "uint8"),
        ("float32", "bfloat16"),
        ("float16", "float32"),
        ("complex64", "complex128"),
        ("int64", "float64"),
    ],
)
def test_every_dtype_difference_fails_even_with_equal_values(a: str, b: str) -> None:
    assert not compare(tensor([1, 0], a), tensor([1, 0], b)).passed
    assert not compare(tensor([1, 0], b), tensor([1, 0], a)).passed


# Every float dtype with a negative zero (float8_e8m0fnu has no zero; the fnuz formats give its bits to NaN).
SIGNED_ZEROS = sorted(name for name in FLOAT_DTYPES if name != "float8_e8m0fnu" and not name.endswith("fnuz"))


@pytest.mark.parametrize("dtype", SIGNED_ZEROS)
def test_the_exact_checker_compares_the_sign_of_zero_in_every_float_dtype(dtype: str) -> None:
    """`exact` is bit for bit (docs/problems.md): `0 - x` is not the reference's `-x` where x is 0; NaN still
    matches NaN. A tolerance of 0 an author writes stays numeric (0.0 == -0.0)."""
    values = [0.0, 1.0, -0.0]
    flipped = [-0.0, 1.0, -0.0]
    result = compare(tensor(values, dtype), tensor(flipped, dtype), EXACT)
    assert not result.passed
    assert "sign of a zero" in result.details["reason"]
    assert result.details["mismatches"] == 1 and result.details["first_mismatches"][0]["index"] == [0]
    assert compare(tensor(flipped, dtype), tensor(flipped, dtype), EXACT).passed
    assert compare(tensor(values, dtype), tensor(flipped, dtype), Tolerance(rtol=0.0, atol=0.0)).passed


def test_the_exact_checker_compares_the_sign_of_zero_of_floats_and_complex_parts() -> None:
    assert not compare(0.0, -0.0, EXACT).passed
    assert compare(-0.0, -0.0, EXACT).passed and compare(math.nan, math.nan, EXACT).passed
    assert not compare(
        tensor([complex(1.0, -0.0)], "complex64"), tensor([complex(1.0, 0.0)], "complex64"), EXACT
    ).passed
    assert not compare_outputs({"y": tensor([-0.0])}, {"y": tensor([0.0])}, {}, EXACT).passed
    assert compare(tensor([math.nan, -0.0]), tensor([math.nan, -0.0]), EXACT).passed


# -- exact types -----------------------------------------------------------------------------------------
def test_int_tensors_are_exact_whatever_the_tolerance() -> None:
    huge = Tolerance(rtol=10.0, atol=10.0)
    result = compare(tensor([1, 2, 3], "int64"), tensor([1, 2, 4], "int64"), huge)
    assert not result.passed
    assert result.details["first_mismatches"] == [{"index": [2], "expected": 3, "got": 4}]
    assert "max_abs_error" not in result.details


def test_bool_tensors_are_exact() -> None:
    assert compare(tensor([True, False], "bool"), tensor([True, False], "bool")).passed
    result = compare(tensor([True, False], "bool"), tensor([True, True], "bool"), Tolerance(rtol=1.0, atol=1.0))
    assert not result.passed
    assert result.details["first_mismatches"] == [{"index": [1], "expected": False, "got": True}]
    strict_json(result.details)


def test_complex_tensors_compare_both_parts() -> None:
    assert compare(tensor([1 + 2j], "complex64"), tensor([1 + 2j], "complex64")).passed
    assert not compare(tensor([1 + 2j], "complex64"), tensor([1 + 3j], "complex64")).passed
    strict_json(compare(tensor([1 + 2j], "complex64"), tensor([1 + 3j], "complex64")).details)


def test_an_int_where_a_float_is_expected_is_that_number() -> None:
    assert compare(1.0, 1).passed
    assert compare(2.5, 2).details["reason"] == "values differ"
    assert compare(math.inf, 10**400).passed  # too large for a float: an infinity, not an exception
    assert not compare(1.0, 10**400).passed


@pytest.mark.parametrize(
    ("dtype", "error", "passes"),
    [
        ("float32", 1e-3, False),
        ("float16", 1e-3, True),  # 2 eps = 1.95e-3
        ("float16", 5e-3, False),
        ("bfloat16", 1e-2, True),  # 2 eps = 1.56e-2
        ("bfloat16", 3e-2, False),
        ("float8_e4m3fn", 0.2, True),  # 2 eps = 0.25 (1.2 is 1.25 in fp8)
        ("float8_e4m3fn", 0.5, False),
        ("float8_e4m3fnuz", 0.2, True),
        ("float8_e4m3fnuz", 0.5, False),
        ("float8_e5m2", 0.25, True),  # 2 eps = 0.5
        ("float8_e5m2", 1.0, False),
        ("float8_e5m2fnuz", 0.25, True),
        ("float8_e5m2fnuz", 1.0, False),
    ],
)
def test_the_default_tolerance_widens_with_the_dtype(dtype: str, error: float, passes: bool) -> None:
    expected, got = tensor([1.0, -2.0], dtype), tensor([1.0 + error, -2.0 * (1 + error)], dtype)
    assert compare(expected, got).passed is passes


def test_a_scale_in_float8_e8m0fnu_is_compared_exactly_by_default() -> None:
    # Its eps is 1: 2 eps would take 2**-100 for 1, and atol 1e-6 2**-99 for 2**-100.
    assert compare(tensor([1.0, 2.0**-100], "float8_e8m0fnu"), tensor([1.0, 2.0**-100], "float8_e8m0fnu")).passed
    for got in ([2.0**-100, 2.0**-100], [1.0, 2.0**-99], [2.0, 2.0**-100]):
        assert not compare(tensor([1.0, 2.0**-100], "float8_e8m0fnu"), tensor(got, "float8_e8m0fnu")).passed
    assert compare(tensor([1.0], "float8_e8m0fnu"), tensor([2.0], "float8_e8m0fnu"), Tolerance(rtol=1.0)).passed


def test_a_tolerance_the_test_gives_is_not_widened() -> None:
    expected, got = tensor([10.0], "bfloat16"), tensor([10.1], "bfloat16")
    assert compare(expected, got).passed
    assert not compare(expected, got, Tolerance(rtol=1e-3)).passed  # atol widened, rtol as given
    assert not compare(expected, got, Tolerance(rtol=1e-3, atol=1e-3)).passed


def test_rounding_compares_the_rounded_values() -> None:
    rounded = Tolerance(rtol=0.0, atol=0.0, decimals=3)
    assert compare(0.12345, 0.1234501, rounded).passed
    assert not compare(0.1234, 0.1235, rounded).passed
    assert compare(tensor([1.00049, 2.0]), tensor([1.0004, 2.0001]), rounded).passed
    assert compare(tensor([1.0], "float64"), tensor([1.002], "float64"), rounded).details["round"] == 3


@pytest.mark.parametrize(
    ("expected", "got"),
    [
        pytest.param(1, 1.0, id="int-vs-float"),
        pytest.param(1.0, True, id="float-vs-bool"),
        pytest.param(True, 1, id="bool-vs-int"),
        pytest.param(0, False, id="int-vs-bool"),
        pytest.param([1, 2], (1, 2), id="list-vs-tuple"),
        pytest.param((1, 2), [1, 2], id="tuple-vs-list"),
        pytest.param(None, 0, id="none-vs-zero"),
        pytest.param("1", 1, id="str-vs-int"),
        pytest.param(1.0, None, id="float-vs-none"),
    ],
)
def test_different_python_types_fail(expected, got) -> None:
    result = compare(expected, got)
    assert not result.passed
    assert "expected a" in result.details["reason"]
    strict_json(result.details)


def test_tensor_vs_python_value_fails() -> None:
    result = compare(tensor([1.0]), [1.0])
    assert not result.passed
    assert "tensor" in result.details["reason"]


@pytest.mark.parametrize(
    ("expected", "got", "passed"),
    [
        (None, None, True),
        (True, True, True),
        (True, False, False),
        (2**100, 2**100, True),
        (2**100, 2**100 + 1, False),
        ("abc", "abc", True),
        ("abc", "abd", False),
        (1.0, 1.0 + 1e-9, True),
        (1.0, 1.1, False),
    ],
)
def test_python_scalars(expected, got, passed: bool) -> None:
    assert compare(expected, got).passed is passed


def test_python_float_mismatch_has_error_summary() -> None:
    d = compare(2.0, 3.0).details
    assert d["max_abs_error"] == pytest.approx(1.0)
    assert d["max_rel_error"] == pytest.approx(0.5)
    assert d["expected"] == {"type": "float", "value": 2.0}


# -- containers ------------------------------------------------------------------------------------------
def test_lists_compare_element_by_element_and_name_the_path() -> None:
    result = compare([1, [2, 3.0]], [1, [2, 3.5]])
    assert not result.passed
    assert result.details["path"] == "out[1][1]"


def test_list_length_mismatch() -> None:
    result = compare([1, 2], [1, 2, 3])
    assert not result.passed
    assert "length" in result.details["reason"]


def test_dict_keys_differ() -> None:
    result = compare({"a": 1, "b": 2}, {"a": 1, "c": 2})
    assert not result.passed
    reason = result.details["reason"]
    assert "keys differ" in reason and "'b'" in reason and "'c'" in reason


def test_dict_extra_key_fails() -> None:
    assert not compare({"a": 1}, {"a": 1, "b": 2}).passed
    assert not compare({"a": 1, "b": 2}, {"a": 1}).passed


def test_nested_dict_value_path() -> None:
    result = compare({"a": {"b": [tensor([1.0])]}}, {"a": {"b": [tensor([2.0])]}})
    assert result.details["path"] == "out['a']['b'][0]"


# -- compare_outputs: per-key tolerance ------------------------------------------------------------------
def test_compare_outputs_equal() -> None:
    outputs = {"out": tensor([1.0, 2.0]), "shape": [2], "ok": True}
    assert compare_outputs(outputs, dict(outputs), {}, DEFAULT).passed


def test_per_key_tolerance_applies_to_that_key_only() -> None:
    checks = {"loose": Tolerance(rtol=0.0, atol=0.1)}
    expected = {"loose": tensor([1.0]), "strict": tensor([1.0])}
    assert compare_outputs(expected, {"loose": tensor([1.05]), "strict": tensor([1.0])}, checks, DEFAULT).passed
    result = compare_outputs(expected, {"loose": tensor([1.0]), "strict": tensor([1.05])}, checks, DEFAULT)
    assert not result.passed
    assert result.details["path"] == "strict"
    assert result.details["atol"] == DEFAULT.atol


def test_per_key_tolerance_is_reported_and_reaches_nested_values() -> None:
    checks = {"out": Tolerance(rtol=0.0, atol=0.1)}
    expected = {"out": [tensor([1.0]), 2.0]}
    assert compare_outputs(expected, {"out": [tensor([1.09]), 2.09]}, checks, DEFAULT).passed
    result = compare_outputs(expected, {"out": [tensor([1.2]), 2.0]}, checks, DEFAULT)
    assert not result.passed
    assert result.details["path"] == "out[0]"
    assert result.details["atol"] == 0.1


def test_check_for_an_absent_key_changes_nothing() -> None:
    checks = {"other": Tolerance(rtol=1.0, atol=1.0)}
    assert not compare_outputs({"out": tensor([1.0])}, {"out": tensor([1.5])}, checks, DEFAULT).passed


def test_compare_outputs_default_tolerance_is_used() -> None:
    loose = Tolerance(rtol=0.0, atol=1.0)
    assert compare_outputs({"out": tensor([1.0])}, {"out": tensor([1.5])}, {}, loose).passed


def test_compare_outputs_key_mismatch() -> None:
    result = compare_outputs({"out": tensor([1.0])}, {"output": tensor([1.0])}, {}, DEFAULT)
    assert not result.passed
    assert "keys differ" in result.details["reason"]


def test_compare_outputs_non_dict() -> None:
    assert compare_outputs(tensor([1.0]), tensor([1.0]), {}, DEFAULT).passed
    result = compare_outputs([1], (1,), {}, DEFAULT)
    assert not result.passed
    assert result.details["path"] == "result"


def test_compare_outputs_reports_the_first_failing_key_in_order() -> None:
    expected = {"a": 1, "b": 2, "c": 3}
    result = compare_outputs(expected, {"a": 1, "b": 20, "c": 30}, {}, DEFAULT)
    assert result.details["path"] == "b"


# -- heatmap ---------------------------------------------------------------------------------------------
def test_two_d_float_mismatch_has_an_error_heatmap() -> None:
    expected = np.zeros((2, 3), dtype=np.float32)
    got = expected.copy()
    got[1, 2] = 0.5
    d = compare(tensor(expected), tensor(got)).details
    assert d["error_heatmap"] == [[0.0, 0.0, 0.0], [0.0, 0.0, 0.5]]


def test_heatmap_is_pooled_to_at_most_16_by_16() -> None:
    expected = np.zeros((100, 40), dtype=np.float64)
    got = expected.copy()
    got[99, 0] = 2.0
    got[0, 39] = 3.0
    heatmap = compare(tensor(expected, "float64"), tensor(got, "float64")).details["error_heatmap"]
    assert len(heatmap) == 16 and all(len(row) == 16 for row in heatmap)
    assert heatmap[15][0] == 2.0 and heatmap[0][15] == 3.0
    assert sum(cell for row in heatmap for cell in row) == 5.0


def test_heatmap_marks_non_finite_errors() -> None:
    d = strict_json(compare(tensor([[np.nan, 1.0]]), tensor([[1.0, 1.0]])).details)
    assert d["error_heatmap"] == [["inf", 0.0]]


def test_no_heatmap_outside_two_d_floats() -> None:
    assert "error_heatmap" not in compare(tensor([1.0, 2.0]), tensor([1.0, 3.0])).details
    assert "error_heatmap" not in compare(tensor(np.zeros((2, 2, 2))), tensor(np.ones((2, 2, 2)))).details
    assert "error_heatmap" not in compare(tensor([[1, 2]], "int64"), tensor([[1, 3]], "int64")).details


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
def test_complex_heatmap_counts_the_imaginary_part() -> None:
    d = compare(tensor([[1 + 1j, 0]], "complex64"), tensor([[1 + 2j, 0]], "complex64")).details
    assert d["error_heatmap"] == [[1.0, 0.0]]


# -- details are JSON -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("expected", "got"),
    [
        pytest.param(
            tensor([[np.nan, 1.0], [np.inf, 2.0]]), tensor([[1.0, np.nan], [-np.inf, 2.0]]), id="non-finite-2d"
        ),
        pytest.param(tensor([1.0], "float16"), tensor([np.inf], "float16"), id="float16-inf"),
        pytest.param(tensor([1.0], "bfloat16"), tensor([np.nan], "bfloat16"), id="bfloat16-nan"),
        pytest.param(tensor([1, 2], "uint8"), tensor([1, 3], "uint8"), id="uint8"),
        pytest.param(math.nan, 1.0, id="python-nan"),
        pytest.param({"x": [math.inf]}, {"x": [1.0]}, id="nested-inf"),
        pytest.param(tensor([1.0]), tensor(np.zeros((2, 2))), id="shape"),
        pytest.param(2**200, 2**200 + 1, id="big-int"),
        pytest.param("a" * 1000, "b", id="long-str"),
    ],
)
def test_details_are_strict_json(expected, got) -> None:
    result = compare(expected, got)
    assert not result.passed
    strict_json(result.details)


def test_long_strings_are_truncated_in_details() -> None:
    d = compare("a" * 1000, "b").details
    assert len(d["expected"]["value"]) <= 200


@pytest.mark.parametrize(
    ("expected", "got"),
    [
        pytest.param(tensor([0.0]), tensor([10.0]), id="float32-zero-vs-ten"),
        pytest.param(0.0, 10.0, id="python-zero-vs-ten"),
        pytest.param(tensor([-1e308], "float64"), tensor([1e308], "float64"), id="abs-error-overflows"),
    ],
)
def test_error_summary_is_strict_json_when_it_overflows(expected, got) -> None:
    result = compare(expected, got)
    assert not result.passed
    strict_json(result.details)


# -- every wire dtype ---------------------------------------------------------------------------------------
REAL_FLOATS = sorted(FLOAT_DTYPES - {"complex64", "complex128"})


def sample(dtype: str, changed: bool = False) -> Tensor:
    """[[1, 2], [4, 0.5]] in `dtype` (bools all True); with `changed`, the element [1, 0] made 64 (False)."""
    if dtype == "bool":
        values = np.array([[True, True], [not changed, True]])
    else:
        values = np.array([[1.0, 2.0], [64.0 if changed else 4.0, 0.5]])
        values = values + 0j if dtype.startswith("complex") else values
    return Tensor(dtype, values.astype(DTYPES[dtype]))


def plain_numbers(values: list) -> bool:
    return all(type(value) in (int, float, bool) for value in values)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_every_dtype_compares_and_reports_its_values_as_plain_json(dtype: str) -> None:
    assert compare(sample(dtype), sample(dtype)).passed
    result = compare(sample(dtype), sample(dtype, changed=True))
    assert not result.passed and result.details["reason"] == "values differ"
    details = strict_json(result.details)
    assert details["expected"]["dtype"] == details["got"]["dtype"] == dtype
    [mismatch] = details["first_mismatches"]
    assert mismatch["index"] == [1, 0]
    if dtype.startswith("complex"):
        assert (mismatch["expected"], mismatch["got"]) == ("(4+0j)", "(64+0j)")
        return
    assert plain_numbers(details["expected"]["sample"]) and plain_numbers(details["got"]["sample"])
    if dtype == "bool":
        assert (mismatch["expected"], mismatch["got"]) == (True, False)
    else:
        assert (mismatch["expected"], mismatch["got"]) == (4, 64)
        assert type(mismatch["got"]) is (float if dtype in FLOAT_DTYPES else int)
    if dtype in FLOAT_DTYPES:
        assert details["max_abs_error"] == 60.0
        assert details["error_heatmap"] == [[0.0, 0.0], [60.0, 0.0]]
    else:
        assert "error_heatmap" not in details and "max_abs_error" not in details


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_a_tensor_of_one_dtype_never_equals_one_of_another(dtype: str) -> None:
    for other in DTYPES:
        if other != dtype:
            result = compare(sample(dtype), sample(other))
            assert not result.passed and result.details["reason"] == f"dtype {other} instead of {dtype}"


@pytest.mark.parametrize("dtype", REAL_FLOATS)
def test_nan_matches_only_nan_and_an_infinity_only_itself_in_every_float_dtype(dtype: str) -> None:
    def t(*values: float) -> Tensor:
        return Tensor(dtype, np.array(values).astype(DTYPES[dtype]))

    assert compare(t(math.nan, 1.0), t(math.nan, 1.0)).passed
    assert not compare(t(math.nan, 1.0), t(1.0, 1.0), Tolerance(rtol=100.0, atol=100.0)).passed
    assert not compare(t(1.0, 1.0), t(math.nan, 1.0), Tolerance(rtol=100.0, atol=100.0)).passed
    strict_json(compare(t(math.nan, 1.0), t(1.0, 1.0)).details)
    if np.isinf(t(math.inf).array.astype(np.float64)[0]):  # fp8 types other than e5m2 have no infinity
        assert compare(t(math.inf), t(math.inf)).passed
        assert not compare(t(math.inf), t(-math.inf)).passed
        assert not compare(t(math.inf), t(448.0), Tolerance(rtol=100.0, atol=100.0)).passed


@pytest.mark.parametrize("dtype", REAL_FLOATS)
def test_a_narrow_float_is_shown_as_the_shortest_decimal_that_is_the_same_value(dtype: str) -> None:
    kind = DTYPES[dtype].type
    size = DTYPES[dtype].itemsize
    # every pattern of a byte; 2,000 drawn from the wider ones
    if size == 1:
        patterns = np.arange(256, dtype=np.uint8)
    else:
        patterns = np.random.default_rng(0).integers(0, 256**size, 2000, dtype=f"<u{size}", endpoint=False)
    for value in patterns.view(DTYPES[dtype]):
        shown = json_number(value)
        if math.isnan(float(value)) or math.isinf(float(value)):
            assert shown in ("nan", "inf", "-inf")
        else:
            assert type(shown) is float and kind(shown) == value, (dtype, value, shown)
            assert np.array(shown).astype(DTYPES[dtype]).tobytes() == np.array(value).tobytes()
    if dtype in ("bfloat16", "float16", "float32"):
        assert json_number(kind(0.1)) == 0.1  # not 0.10009765625, bfloat16's exact value
