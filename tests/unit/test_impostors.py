"""The impostors step of the problem check (grader/problems/check/impostors.py) on the trusted side: which answers
that ignore the question pass which test, and the refusal unless the test says why (`trivial:`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from grader.containers.values import Tensor
from grader.problems.check.impostors import impostor_step, passed_by, trusted_impostors
from grader.problems.check.locate import Locator
from grader.problems.check.report import StepStatus
from grader.problems.registry import LoadedProblem, Registry, parse_problem
from sandbox.runner.messages import Limits

PROBLEM = """\
id: scale
title: Scale
difficulty: easy
statement: Scale x.
starter_code: |
  def scale(x):
      pass
entry_points: [scale]
reference: |
  def scale(x):
      return 2 * x
tests:
  - name: varied
    code: |
      return {"y": scale(torch.randn(32))}
  - name: zeros in, zeros out
    code: |
      return {"y": scale(torch.zeros(4))}
  - name: a constant
    code: |
      return {"y": scale(torch.ones(4))}
  - name: only a dtype
    code: |
      return {"dtype": str(scale(torch.ones(4)).dtype)}
  - name: a flag
    code: |
      return {"flag": bool(scale(torch.ones(1)) > 0)}
"""


def problem(text: str = PROBLEM) -> LoadedProblem:
    return Registry(Limits(time_s=10, memory_mb=1024, output_kb=64)).make(parse_problem(text, "s.yaml"))


def f32(values: Any) -> Tensor:
    return Tensor("float32", np.asarray(values, dtype=np.float32))


EXPECTED = [
    {"y": f32(np.random.default_rng(0).standard_normal(32) * 2)},
    {"y": f32(np.zeros(4))},
    {"y": f32(np.full(4, 2.0))},
    {"dtype": "torch.float32"},
    {"flag": True},
]


def test_each_test_is_named_with_the_impostors_that_pass_it() -> None:
    found = passed_by(problem(), EXPECTED, None, None)
    assert 0 not in found, found[0]  # a varied answer: no impostor passes
    assert found[1] == ["all zeros", "one constant (each tensor's mean)"]
    assert found[2] == ["one constant (each tensor's mean)"]
    assert 3 not in found  # no number in it: the impostors do not judge it
    assert found[4] == ["all ones"]  # a bool: True is all ones
    assert trusted_impostors({"n": 3, "flag": True}, 4)["all ones"] == {"n": 1, "flag": True}


def test_the_step_refuses_each_named_test_at_its_line_unless_it_says_why() -> None:
    text = PROBLEM
    step = impostor_step(problem(text), EXPECTED, None, None, Locator("s.yaml", text))
    assert step.status == StepStatus.FAILED
    assert [error.split(": ")[1] for error in step.errors] == ["tests.2", "tests.3", "tests.5"]
    assert step.errors[0].startswith("s.yaml:") and "all zeros" in step.errors[0] and "`trivial:`" in step.errors[0]
    excused = text.replace(
        '      return {"y": scale(torch.zeros(4))}\n',
        '      return {"y": scale(torch.zeros(4))}\n    trivial: zero in, zero out is the rule itself\n',
    )
    step = impostor_step(problem(excused), EXPECTED, None, None, Locator("s.yaml", excused))
    assert [error.split(": ")[1] for error in step.errors] == ["tests.3", "tests.5"]
    assert any("zero in, zero out is the rule itself" in detail for detail in step.details)


def test_random_values_pass_nothing_that_has_enough_elements() -> None:
    values = trusted_impostors(EXPECTED[0], 0)["random values of the right shape"]
    assert values["y"].shape == (32,) and not np.allclose(values["y"].array, EXPECTED[0]["y"].array)
    # Too few elements to tell chance from a pass: no random impostor for it.
    assert "random values of the right shape" not in trusted_impostors({"y": f32([1.0, 2.0])}, 0)
