"""The custom-input test (grader/problems/custom_test.py, custom_input.py) without Docker: what a declaration
may say (refused at load, with the line), what values a learner may send (refused with the argument and the
position, bounded), and the code the values become: literals only, made of characters this side chose."""

from __future__ import annotations

import ast
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from grader.problems.custom_input import InputsRefused, TensorValue, literal
from grader.problems.custom_test import CustomTest
from grader.problems.registry import ProblemError, parse_problem
from tests.conftest import PROBLEMS_DIR

EMBEDDING_TEXT = (PROBLEMS_DIR / "embedding-layer.yaml").read_text()
EMBEDDING = parse_problem(EMBEDDING_TEXT, "embedding-layer.yaml")
CUSTOM = EMBEDDING.custom_test
assert CUSTOM is not None

DECLARATION: dict[str, Any] = {
    "arguments": [
        {"name": "n", "type": "int", "min": 1, "max": 10, "default": 3},
        {"name": "scale", "type": "float", "min": 0, "max": 2.5, "default": 0.5},
        {"name": "flag", "type": "bool", "default": True},
        {"name": "x", "type": "tensor", "dtype": "float32", "shape": ["batch", "n"], "default": [[1, 2.5, -3]]},
        {
            "name": "ids",
            "type": "tensor",
            "dtype": "int64",
            "shape": ["batch"],
            "min": 0,
            "max": "n - 1",
            "default": [2],
        },
        {"name": "mask", "type": "tensor", "dtype": "bool", "shape": [2, 2], "default": [[True, False], [False, True]]},
    ],
    "dimensions": {"batch": {"max": 4}},
    "code": "return {'y': x * scale}",
}


def declared(**changes: Any) -> CustomTest:
    return CustomTest.model_validate({**DECLARATION, **changes})


def refused(test: CustomTest, inputs: Any) -> str:
    with pytest.raises(InputsRefused) as caught:
        test.values(inputs)
    return str(caught.value)


# -- values ---------------------------------------------------------------------------------------------
def test_the_defaults_are_the_values_left_out() -> None:
    values = declared().values({"n": 4, "x": [[0, 0, 0, 0]]})
    assert values["n"] == 4 and values["scale"] == 0.5 and values["flag"] is True
    assert values["x"] == TensorValue("float32", (1, 4), [0.0, 0.0, 0.0, 0.0])
    assert values["mask"] == TensorValue("bool", (2, 2), [True, False, False, True])


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"n": "__import__('os').system('id')"}, "inputs.n: expected an integer (int64), got a string"),
        ({"n": True}, "inputs.n: expected an integer (int64), got true"),
        ({"n": 3.0}, "inputs.n: expected an integer (int64), got a number 3.0"),
        ({"n": 11}, "inputs.n: 11 is above the maximum, 10"),
        ({"n": 10**4000}, "inputs.n: an integer of more than 64 bits does not fit in int64"),
        ({"scale": float("nan")}, "inputs.scale: nan is not a finite number"),
        ({"scale": float("inf")}, "inputs.scale: inf is not a finite number"),
        ({"scale": "NaN"}, "inputs.scale: expected a number (float64), got a string 'NaN'"),
        ({"flag": 1}, "inputs.flag: expected true or false, got an integer 1"),
        ({"x": "torch.zeros(10**10)"}, "inputs.x: expected a list (a tensor of shape [batch, n]), got a string"),
        ({"x": {"__class__": 1}}, "inputs.x: expected a list (a tensor of shape [batch, n]), got an object"),
        ({"x": [[1, 2, 3], [1, 2]]}, "inputs.x[1]: 2 items where the others have 3: rows must be equal"),
        ({"x": [[1, "2", 3]]}, "inputs.x[0][1]: expected a number (float32), got a string '2'"),
        ({"x": [[1, [2], 3]]}, "inputs.x[0][1]: expected a number (float32), got a list"),
        ({"x": [[1, 2, 1e39]]}, "inputs.x[0][2]: 1e+39 is beyond the largest float32"),
        ({"x": [[1, 2]]}, "dimension 2 of [batch, n] (n) has 2 entries, but n = 3"),
        ({"x": [[1, 2, 3]] * 5, "ids": [0] * 5}, "dimension 1 of [batch, n] (batch) has 5 entries; it takes 1 to 4"),
        ({"ids": [3]}, "inputs.ids[0]: 3 is above the maximum, n - 1 = 2"),
        ({"ids": [0, 1]}, "inputs.ids: dimension 1 of [batch] (batch) has 2 entries, but in x batch is 1"),
        ({"ids": [-1]}, "inputs.ids[0]: -1 is below the minimum, 0"),
        ({"mask": [[1, 0], [0, 1]]}, "inputs.mask[0][0]: expected true or false (bool), got an integer 1"),
        ({"mask": [[True, False]]}, "inputs.mask: dimension 1 of [2, 2] has 1 entries; it must have 2"),
        ({"nope": 1, "__builtins__": 2}, "inputs: no argument named 'nope', '__builtins__' (this test takes n, scale"),
    ],
)
def test_values_that_do_not_fit_are_refused_naming_the_argument_and_where(inputs: dict, message: str) -> None:
    assert message in refused(declared(), inputs)


def test_nesting_deeper_than_the_rank_is_read_no_deeper() -> None:
    deep: Any = 0
    for _ in range(100_000):  # far past any recursion limit: the walk must not recurse
        deep = [deep]
    assert "inputs.x[0][0]: expected a number (float32), got a list" in refused(declared(), {"x": deep})


def test_a_huge_value_stops_at_the_element_cap_quickly() -> None:
    started = time.perf_counter()
    message = refused(declared(), {"x": [[0.5] * 3] * 3 + [[1] * 3] * 3_000_000})
    assert "more than 10000 elements" in message or "it takes 1 to 4" in message
    assert time.perf_counter() - started < 1.0


def test_only_the_first_few_errors_are_told_with_a_count() -> None:
    test = CustomTest.model_validate(
        {
            "arguments": [{"name": f"a{i}", "type": "int", "default": 0} for i in range(16)],
            "code": "return 1",
        }
    )
    message = refused(test, {f"a{i}": "x" * 10_000 for i in range(16)})
    assert message.count("inputs.a") == 5 and message.endswith("and 11 more errors")
    assert len(message) < 1000, "each value is quoted in a few characters"


def test_non_finite_floats_where_the_author_allows_them() -> None:
    test = declared(arguments=[{"name": "s", "type": "float", "finite": False, "default": "NaN"}], dimensions={})
    assert str(test.values({"s": "-Infinity"})["s"]) == "-inf"
    assert literal(test.values({})["s"], "float") == "float('nan')"


# -- the code the values become --------------------------------------------------------------------------
ALLOWED = re.compile(r"^[A-Za-z0-9_ .,()\[\]=;+\-'e]*$")


@pytest.mark.parametrize("path", sorted(PROBLEMS_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_problem_has_a_custom_test_whose_defaults_become_literals(path: Path) -> None:
    problem = parse_problem(path.read_text(), path.name)
    assert problem.custom_test is not None, f"{path.name} declares no custom_test"
    case = problem.custom_test.case(problem.custom_test.values({}))
    bindings, body = case.code.split("\n", 1)
    assert body == problem.custom_test.code and case.visible and case.seed == "fixed"
    assert ALLOWED.match(bindings), bindings
    _only_literals(bindings, {argument.name for argument in problem.custom_test.arguments})


def _only_literals(bindings: str, names: set[str]) -> None:
    """Each binding is `name = <number | bool | torch.tensor([numbers], dtype=torch.X).reshape((sizes))>`."""
    for statement in ast.parse(bindings).body:
        assert isinstance(statement, ast.Assign) and len(statement.targets) == 1
        assert isinstance(statement.targets[0], ast.Name) and statement.targets[0].id in names
        for node in ast.walk(statement.value):
            if isinstance(node, ast.Name):
                assert node.id in ("torch", "float"), ast.dump(node)
            if isinstance(node, ast.Attribute):
                assert node.attr in ("tensor", "reshape") or node.attr in ("float32", "float64", "int64", "bool")
            assert not isinstance(node, (ast.Lambda, ast.Subscript, ast.JoinedStr, ast.Starred)), ast.dump(node)


def test_learner_text_never_reaches_the_code() -> None:
    # What a learner controls is numbers only: whatever they send that is not one is refused, and the
    # numbers are re-written by this side (1e2 -> 100.0, -0 -> 0).
    values = CUSTOM.values({"vocab_size": 7, "tokens": [[6, 0, 3]], "d_model": 2})
    code = CUSTOM.case(values).code.split("\n", 1)[0]
    assert code == (
        "vocab_size = 7; d_model = 2; tokens = torch.tensor([6, 0, 3], dtype=torch.int64).reshape((1, 3, ))"
    )
    floats = declared().values({"x": [[1e2, -0.0, 123456789.125]], "scale": 2})
    assert "torch.tensor([100.0, -0.0, 123456789.125], dtype=torch.float32).reshape((1, 3, ))" in literal(
        floats["x"], "tensor"
    )
    assert literal(floats["scale"], "float") == "2.0"


def test_a_zero_size_tensor_keeps_its_declared_dimensions() -> None:
    test = declared(dimensions={"batch": {"min": 0, "max": 4}})
    values = test.values({"x": [], "ids": []})
    assert values["x"] == TensorValue("float32", (0, 3), []) and values["ids"].shape == (0,)  # type: ignore[union-attr]
    assert literal(values["x"], "tensor") == "torch.tensor([], dtype=torch.float32).reshape((0, 3, ))"


# -- declarations ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"name": "torch"}, "'torch' is a name every test has in scope"),
        ({"name": "import"}, "'import' is not a Python name"),
        ({"type": "tensor"}, "a tensor argument needs a dtype and a shape"),
        ({"dtype": "int64"}, "dtype and shape are for tensors"),
        ({"min": "later"}, "'later' is not an int argument declared before 'n'"),
        ({"min": "n + "}, "is neither a number nor `name`"),
        ({"min": 1.5}, "the bounds of an integer must be integers"),
        ({"min": 5, "max": 2, "default": 3}, "min 5 is above max 2"),
        ({"default": 0}, "the defaults are not valid: defaults.n: 0 is below the minimum, 1"),
        ({"default": "3"}, "defaults.n: expected an integer (int64), got a string '3'"),
    ],
)
def test_a_declaration_that_cannot_work_is_refused_when_the_file_loads(change: dict, message: str) -> None:
    arguments = [{**DECLARATION["arguments"][0], **change}, *DECLARATION["arguments"][1:]]
    with pytest.raises(ProblemError) as caught:
        parse_problem(_with_custom_test({**DECLARATION, "arguments": arguments}), "p.yaml")
    assert message in str(caught.value), str(caught.value)
    assert re.search(r"^p\.yaml:\d+: custom_test\.", str(caught.value), re.M), "named with its line"


def test_more_elements_than_the_schema_allows_are_refused() -> None:
    arguments = [
        {"name": f"t{i}", "type": "tensor", "dtype": "float32", "shape": ["k"], "max_elements": 60_000, "default": [1]}
        for i in range(2)
    ]
    with pytest.raises(ProblemError, match="the tensors take up to 120000 elements together; at most 100000"):
        parse_problem(_with_custom_test({"arguments": arguments, "code": "return 1"}), "p.yaml")


def test_an_argument_named_like_an_entry_point_is_refused() -> None:
    arguments = [{"name": "embed_tokens", "type": "int", "default": 1}]
    with pytest.raises(ProblemError, match="argument 'embed_tokens' has the name of an entry point"):
        parse_problem(_with_custom_test({"arguments": arguments, "code": "return 1"}), "p.yaml")


def test_runs_all_or_visible_only_still_loads_and_means_nothing() -> None:
    problem = parse_problem(EMBEDDING_TEXT.replace("\ntests:\n", "\nruns: visible-only\ntests:\n", 1), "e.yaml")
    assert problem.model_dump() == EMBEDDING.model_dump()


def _with_custom_test(custom: dict[str, Any]) -> str:
    """embedding-layer.yaml with its custom_test replaced by this one (as JSON, which YAML reads)."""
    head, rest = EMBEDDING_TEXT.split("\ncustom_test:\n", 1)
    tail = rest[rest.index("\npitfalls:\n") :]
    return f"{head}\ncustom_test: {json.dumps(custom)}\n{tail}"
