"""The problem check's static rule against verdicts decided inside the sandbox
(grader/problems/check/inside.py): a test may not return a bool its own code computes beside the
submission (`torch.equal(x, before)`, `(a == b).all().item()`, `isinstance(m, nn.Module)`, ...), which
the submission, in the same process, could forge; it returns the values and the judge decides."""

from __future__ import annotations

import textwrap

import pytest

from grader.problems.check.authoring import file_findings
from grader.problems.check.inside import computed_bools
from grader.problems.check.locate import Locator
from grader.problems.registry import parse_problem


def keys(code: str, helpers: str = "") -> list[str | None]:
    return [found.key for found in computed_bools(textwrap.dedent(code), textwrap.dedent(helpers))]


FLAGGED = {
    "torch.equal": 'return {"unchanged": bool(torch.equal(x, before))}',
    "torch.equal, bare": 'return {"unchanged": torch.equal(x, before)}',
    "torch.allclose": 'return {"close": torch.allclose(a, b, atol=1e-5)}',
    "torch.isclose(...).all()": 'return {"close": torch.isclose(a, b).all()}',
    "a comparison, .all(), .item()": 'return {"same": (a == b).all().item()}',
    "!=": 'return {"differs": a != b}',
    "<": 'return {"small": f(x).max() < 1}',
    "is not": 'return {"two": layer.a is not layer.b}',
    "a shape compared": 'return {"shape_ok": x.shape == (2, 3)}',
    ".any()": 'return {"nan": torch.isnan(f(x)).any()}',
    ".is_contiguous()": 'return {"contiguous": f(x).is_contiguous()}',
    "bool(...)": 'return {"finite": bool(torch.isfinite(y).all())}',
    "isinstance": 'return {"is_module": isinstance(m, nn.Module)}',
    "hasattr": 'return {"has": hasattr(m, "weight")}',
    "callable": 'return {"call": callable(m)}',
    "builtin all": 'return {"trainable": all(p.requires_grad for p in m.parameters())}',
    "not": 'return {"eval": not m.training}',
    "and of a comparison": 'return {"ok": y.shape == z.shape and torch.allclose(y, z)}',
    "a list of them": 'return {"unchanged": [bool(torch.equal(a, b)) for a, b in zip(xs, before)]}',
    "a nested list": 'return {"norms": [[torch.equal(n.weight, one)] for n in norms]}',
    "a mean of a comparison": 'return {"kept": (out > 0).double().mean().item()}',
    "a whole value": "return torch.equal(x, before)",
    "dict(...)": "return dict(same=torch.equal(x, y))",
}


@pytest.mark.parametrize("code", FLAGGED.values(), ids=FLAGGED.keys())
def test_each_pattern_is_flagged(code: str) -> None:
    assert len(computed_bools(code)) == 1


def test_the_key_is_named_and_the_whole_value_is_none() -> None:
    assert keys('return {"out": f(x), "same": torch.equal(x, y)}') == ["same"]
    assert keys("return torch.equal(x, y)") == [None]


def test_a_name_assigned_from_one_is_followed() -> None:
    code = """
        before = x.clone()
        out = f(x)
        unchanged = all(bool(torch.equal(a, b)) for a, b in zip(before, (x,)))
        flag = unchanged
        return {"unchanged": flag, "out": out}
    """
    assert keys(code) == ["unchanged"]


def test_a_list_appended_to_and_a_dict_filled_in_are_followed() -> None:
    appended = """
        ok = []
        for a, b in zip(xs, ys):
            ok.append(torch.equal(a, b))
        return {"ok": ok}
    """
    filled = """
        result = {"out": f(x)}
        result["same"] = torch.equal(x, y)
        return result
    """
    assert keys(appended) == ["ok"]
    assert keys(filled) == ["same"]


def test_a_function_returning_one_flags_its_calls_in_the_code_and_the_helpers() -> None:
    code = """
        def created(norm):
            return [torch.equal(norm.weight, torch.ones(4))]
        return {"norms": [created(n) for n in norms]}
    """
    assert keys(code) == ["norms"]
    helpers = """
        def same(a, b):
            return bool(torch.equal(a, b))
    """
    assert keys('return {"same": same(x, y)}', helpers) == ["same"]


LEGIT = {
    "the entry point's own bool": 'return {"mask": f(x)}',
    "the entry point's mask, combined with padding": 'return {"mask": (tokens != 0).unsqueeze(-2) & f(6)}',
    "an attribute read": 'return {"requires_grad": layer.weight.requires_grad, "training": m.training}',
    "values and shapes": 'return {"out": f(x), "shape": list(f(x).shape), "dtype": str(x.dtype)}',
    "a condition choosing a value": 'return {"shapes": [list(p.shape) if isinstance(p, Tensor) else None for p in ps]}',
    "a count of objects": 'return {"two": len({id(a), id(b)})}',
    "values selected by a test-made mask": 'return {"masked": w.masked_select(~mask)}',
    "the inputs themselves": 'return {"inputs_after": [x, mask]}',
    "a comparison used, not returned": """
        keep = torch.rand(5) > 0.5
        return {"out": f(x[keep])}
    """,
    "a function's own return": """
        def helper(a):
            return a == 0
        return {"out": f(x)}
    """,
    "code that does not parse": 'return {"out": f(x}',
}


@pytest.mark.parametrize("code", LEGIT.values(), ids=LEGIT.keys())
def test_the_legitimate_forms_are_not_flagged(code: str) -> None:
    assert computed_bools(textwrap.dedent(code)) == []


PROBLEM = """\
id: inside
title: Inside
difficulty: easy
statement: Return twice the input.
starter_code: |
  def double(x):
      pass
entry_points: [double]
reference: |
  def double(x):
      return 2 * x
tests:
  - name: values
    visible: true
    code: |
      return {"out": double(torch.ones(3))}
  - name: in place
    code: |
      x = torch.ones(3)
      before = x.clone()
      out = double(x)
      return {
          "out": out,
          "unchanged": bool(torch.equal(x, before)),
      }
pitfalls:
  - name: identity
    hint: Multiply by two.
    code: |
      def double(x):
          return x
"""


def test_the_check_reports_it_at_the_line_of_the_value_with_what_to_do() -> None:
    errors, _ = file_findings(parse_problem(PROBLEM, "inside.yaml"), Locator("inside.yaml", PROBLEM))
    [error] = errors
    line = next(n for n, text in enumerate(PROBLEM.splitlines(), start=1) if '"unchanged"' in text)
    assert error.startswith(f"inside.yaml:{line}: tests.2.code: test 2 'in place' returns `unchanged`, a bool its code")
    assert "`bool(torch.equal(x, before))`" in error
    assert "can replace torch.equal" in error and "return the values themselves" in error and "holds:" in error


def test_the_shipped_problems_have_no_such_test() -> None:
    from tests.conftest import PROBLEMS_DIR

    for path in sorted(PROBLEMS_DIR.glob("*.yaml")):
        text = path.read_text()
        problem = parse_problem(text, str(path))
        assert file_findings(problem, Locator(str(path), text))[0] == [], path
