"""The guards of `expect:`/`holds:` expressions (grader/grading/guards.py): every node kind that can build
something huge from small returned values is refused before it runs, with a reason, and without the
memory it would have taken. What the guards miss, the judge process's own limits catch
(tests/unit/test_isolated_judge.py)."""

from __future__ import annotations

import resource

import numpy as np
import pytest

from grader.grading import guards
from grader.grading.expressions import ExpressionError, as_input, compile_expression

SMALL = 12_000  # elements: 48 KB of float32, 96 KB of int64

# Each: an expression over the names below, and what it would build (far past guards.MAX_ELEMENTS,
# or past MAX_SEQUENCE Python objects). The names are what a submission could return: small arrays.
BLOW_UPS = {
    "indexing with an int array (weight[tokens])": "weight[tokens]",
    "indexing with a list": "weight[[0] * 2_000_000]",
    "indexing with two broadcast index arrays": "square[column_index, row_index]",
    "a comparison that broadcasts": "column == row",
    "bitwise or that broadcasts": "(column > 0) | (row > 0)",
    "bitwise and that broadcasts": "(column > 0) & (row > 0)",
    "bitwise xor that broadcasts": "(column > 0) ^ (row > 0)",
    "a shift that broadcasts": "column_int >> row_int",
    "arithmetic that broadcasts": "column + row",
    "a product that broadcasts": "column * row",
    "a matrix product": "column @ row",
    "a call that broadcasts (np.where)": "np.where(column > 0, column, row)",
    "a call that broadcasts (torch.isclose)": "torch.isclose(column, row)",
    "a call that broadcasts (np.maximum)": "np.maximum(column, row)",
    "np.matmul": "np.matmul(column, row)",
    "np.dot": "np.dot(column, row)",
    "a method that repeats": "flat.repeat(100_000)",
    "a method that repeats per element": "flat.repeat(flat_int * 0 + 1000)",
    "a matrix product method": "column.dot(row)",
    "np.corrcoef of many variables": "np.corrcoef(column)",
    "a list of every element": "flat.tolist() if big_flat is None else big_flat.tolist()",
    "a list() of every element": "list(big_flat)",
    "sorted() of every element": "sorted(big_flat)",
    "a comprehension over every element": "[x for x in big_flat]",
    "a sequence multiplied": "[0] * 10_000_000",
    "a string multiplied": "'x' * 10_000_000",
    "an integer power": "7 ** 100_000",
    "an integer shift": "1 << 100_000",
    "a range": "sum(range(10**9))",
}


@pytest.mark.parametrize(
    "text", ["flat.astype(str)", "flat.astype('U1000000')", "np.array(flat, dtype='O')", "np.asarray(flat, dtype='S9')"]
)
def test_arrays_of_text_or_objects_are_not_built(names: dict, text: str) -> None:
    with pytest.raises(TypeError, match="at most the wire's numeric dtypes"):
        compile_expression(text).evaluate(names)


@pytest.fixture(scope="module")
def names() -> dict:
    rng = np.random.default_rng(0)
    flat = rng.normal(size=SMALL).astype("f4")
    values = {
        "weight": rng.normal(size=(12, 4000)).astype("f4"),  # 192 KB
        "tokens": np.zeros(SMALL, dtype=np.int64),  # 96 KB: weight[tokens] is 48 million elements
        "square": rng.normal(size=(4000, 4000)).astype("f4")[:2, :2],
        "column_index": np.zeros((SMALL, 1), dtype=np.int64),
        "row_index": np.zeros((1, SMALL), dtype=np.int64),
        "column": flat.reshape(-1, 1),
        "row": flat.reshape(1, -1),
        "column_int": np.arange(SMALL).reshape(-1, 1),
        "row_int": np.arange(SMALL).reshape(1, -1) % 7,
        "flat": flat,
        "flat_int": np.arange(SMALL),
        "big_flat": np.zeros(2_000_000, dtype=np.uint8),  # 2 MB: two million Python objects as a list
    }
    return {key: as_input(value) for key, value in values.items()}


def _peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


@pytest.mark.parametrize("text", list(BLOW_UPS.values()), ids=list(BLOW_UPS))
def test_every_node_kind_that_can_allocate_is_refused_before_it_runs(names: dict, text: str) -> None:
    expression = compile_expression(text)
    before = _peak_kib()
    with pytest.raises(ValueError) as refused:
        expression.evaluate(names)
    assert "at most" in str(refused.value)
    # The refusal came first: this process's peak memory did not grow by what the node would build.
    assert _peak_kib() - before < 64 * 1024


@pytest.mark.parametrize(
    "text",
    [
        "weight[tokens[:10]]",
        "weight[0] == weight[1]",
        "bool(((flat > 0) | (flat <= 0)).all())",
        "column.reshape(-1)[:5].tolist()",
        "np.where(flat > 0, flat, 0 * flat).shape",
        "flat.repeat(2).shape",
        "[x for x in flat[:100]]",
        "0 <= flat_int[3] < 10",
        "square[0, 1] + square[1, 0]",
        "weight[..., 0]",
        "weight[:, 1:3].sum()",
        "list(weight.shape)",
    ],
)
def test_ordinary_expressions_pass_the_guards(names: dict, text: str) -> None:
    compile_expression(text).evaluate(names)


@pytest.mark.parametrize(
    "text", ["np.maximum.outer(flat, flat)", "np.add.at(flat, 0, 1)", "np.maximum.accumulate(flat)"]
)
def test_ufunc_methods_that_build_or_write_are_not_allowed(text: str) -> None:
    with pytest.raises(ExpressionError):
        compile_expression(text)


def test_a_chained_comparison_keeps_its_meaning(names: dict) -> None:
    assert compile_expression("0 <= 3 < 5").evaluate(names) is True
    assert compile_expression("0 <= 7 < 5").evaluate(names) is False
    assert compile_expression("1 < 2 > 0 != 4").evaluate(names) is True


def test_the_guards_limit_is_the_one_documented() -> None:
    assert guards.MAX_ELEMENTS == 10_000_000 and guards.MAX_SEQUENCE == 1_000_000
