"""grader/grading/details.py: every key compare.py writes into a failed comparison's details is a field of
the typed model and reads back as written; stored details of any shape read without failing; the report
page and Run draw the details with the same template."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grader.containers.values import DTYPES, Opaque, Tensor
from grader.grading.compare import Tolerance, compare_outputs, compare_values
from grader.grading.details import ComparisonDetails, ValueDescription
from grader.web import report
from grader.web.routes import comparison_html, templates


def tensor(values: Any, dtype: str = "float32") -> Tensor:
    return Tensor(dtype, np.array(values, dtype=DTYPES[dtype]))


NAN = math.nan
# Failed comparisons of every kind compare.py reports: values, NaN against numbers, rounding, integers, a
# 2-D float output (its heatmap), shapes, dtypes, types, lengths, keys, scalars, strings, None.
FAILURES: dict[str, tuple[Any, Any, Tolerance]] = {
    "floats differ": (tensor([1.0, 2.0, 3.0]), tensor([1.0, 2.5, 3.0]), Tolerance()),
    "NaN against a number": (tensor([NAN, 1.0]), tensor([0.0, 1.0]), Tolerance()),
    "only non-finite differ": (tensor([math.inf, 1.0]), tensor([NAN, 1.0]), Tolerance()),
    "rounded": (tensor([1.004, 2.0], "float64"), tensor([1.006, 2.0], "float64"), Tolerance(decimals=2)),
    "integers differ": (tensor([1, 2, 3], "int64"), tensor([1, 2, 4], "int64"), Tolerance()),
    "a 2-D float output": (tensor(np.ones((4, 5))), tensor(np.zeros((4, 5))), Tolerance()),
    "shape": (tensor([1.0, 2.0]), tensor([[1.0, 2.0]]), Tolerance()),
    "dtype": (tensor([1.0]), tensor([1.0], "float64"), Tolerance()),
    "type": (tensor([1.0]), [1.0], Tolerance()),
    "length": ([1, 2], [1, 2, 3], Tolerance()),
    "keys": ({"a": 1, "b": 2}, {"a": 1, "c": 2}, Tolerance()),
    "a float": (1.0, 1.5, Tolerance()),
    "an int": (3, 4, Tolerance()),
    "a string": ("yes", "no", Tolerance()),
    "None against a number": (None, 1, Tolerance()),
    "an unsupported value": (1, Opaque("Attention"), Tolerance()),
    "nested": ({"stats": [tensor([1.0]), 2.0]}, {"stats": [tensor([1.5]), 2.0]}, Tolerance()),
}


def _failure(name: str) -> dict[str, Any]:
    expected, got, tolerance = FAILURES[name]
    result = compare_values("out", expected, got, tolerance)
    assert not result.passed, name
    # As the details are stored: JSON (NaN and infinities already strings).
    return json.loads(json.dumps(result.details, allow_nan=False))


def _plain(value: Any) -> Any:
    return value.model_dump(exclude_unset=True) if hasattr(value, "model_dump") else value


@pytest.mark.parametrize("name", sorted(FAILURES))
def test_every_key_compare_writes_is_a_field_and_reads_back_as_written(name: str) -> None:
    details = _failure(name)
    unknown = set(details) - set(ComparisonDetails.model_fields)
    assert unknown == set(), f"compare.py writes {sorted(unknown)}: add them to ComparisonDetails"
    typed = ComparisonDetails.read(details)
    assert typed is not None
    for key, value in details.items():
        read = getattr(typed, key)
        if key == "first_mismatches":
            read = [_plain(item) for item in read]
        assert _plain(read) == value, key
    for side in ("expected", "got"):
        description = details.get(side)
        if isinstance(description, dict):
            assert set(description) <= set(ValueDescription.model_fields), side


def test_the_whole_output_compared_has_typed_details_too() -> None:
    result = compare_outputs({"out": tensor([1.0])}, {"out": tensor([2.0])}, {}, Tolerance())
    typed = ComparisonDetails.read(json.loads(json.dumps(result.details)))
    assert typed is not None and typed.path == "out" and typed.max_abs_error == 1.0


@pytest.mark.parametrize(
    "details",
    [
        {"mismatches": "many", "total": {"x": 1}, "rtol": [1], "first_mismatches": [5, None, {"index": "x"}]},
        {"expected": ["list"], "got": 5, "path": 12, "reason": ["a"], "error_heatmap": "no"},
        {"expected": {"shape": ["a", None], "sample": "not a list", "keys": [1, 2]}, "first_nonfinite": "x"},
        {"nested": json.loads("[" * 200 + "]" * 200), "key": object()},
    ],
)
def test_malformed_fields_read_as_absent(details: dict[str, Any]) -> None:
    typed = ComparisonDetails.read(details)
    assert typed is not None
    odd = {key for key in details if key in ComparisonDetails.model_fields and key != "first_mismatches"}
    for key in odd:
        value = getattr(typed, key)
        assert value is None or isinstance(value, ValueDescription), key
    if isinstance(typed.expected, ValueDescription):
        assert typed.expected.shape is None and typed.expected.sample is None and typed.expected.keys is None
    # Only the mismatches that are objects are kept; their odd fields read as absent.
    assert [m.index for m in typed.first_mismatches] == ([None] if "first_mismatches" in details else [])


def test_no_details_read_as_none() -> None:
    assert ComparisonDetails.read(None) is None
    assert ComparisonDetails.read({}) is None
    assert ComparisonDetails.read(["not", "a", "dict"]) is None


def test_a_value_present_as_null_is_told_from_no_value() -> None:
    typed = ComparisonDetails.read({"expected": {"type": "NoneType", "value": None}, "got": {"type": "tensor"}})
    assert typed is not None and typed.expected is not None and typed.got is not None
    assert typed.expected.has_value and not typed.got.has_value
    rows = {row.label: row for row in report.lay_out(typed, "t").fields}
    assert (rows["value"].expected, rows["value"].got) == ("None", "—")


def test_non_finite_mismatches_are_shown() -> None:
    laid_out = report.comparison(_failure("NaN against a number"), "t")
    assert laid_out is not None and laid_out.nonfinite == "1 (the first at [0])"
    assert "NaN or infinite where the other side is not: 1 (the first at [0])" in comparison_html(
        _failure("NaN against a number"), "t"
    )


@pytest.mark.parametrize("name", sorted(FAILURES))
def test_run_and_the_report_page_draw_the_same(name: str) -> None:
    details = _failure(name)
    # The report page's failure block includes the very template Run's answer is drawn with.
    page = templates.env.get_template("_comparison.html").render(c=report.comparison(details, "t"))
    assert comparison_html(details, "t") == page
    assert 'class="compare"' in page and "Expected against got" in page
    failure = (Path(report.__file__).parent / "templates" / "_failure.html").read_text()
    assert '{% include "_comparison.html" %}' in failure


def test_what_a_submission_wrote_is_escaped_in_runs_drawing() -> None:
    details = {
        "path": "<script>alert(1)</script>",
        "reason": "values differ",
        "expected": {"type": "str", "value": "<img src=x onerror=alert(1)>"},
        "got": {"type": "str", "value": "{{ 7 * 7 }}"},
    }
    html = comparison_html(details, "t")
    assert html is not None
    assert "<script>" not in html and "<img" not in html and "&lt;script&gt;" in html
    assert "{{ 7 * 7 }}" in html  # shown as written, not evaluated
