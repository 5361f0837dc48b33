"""Issue 13's authoring features against the real sandbox: numbers compared as numbers whichever library
computed them, `expect:` and `holds:` (a statistical dropout test that any correct sampler passes),
`helpers:`, and `alternatives:` that the check runs under every seed."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.grading.execution import run_module
from grader.grading.judge import Expected, judge_module
from grader.grading.verdict import Status, Verdict
from grader.problems.check import ProblemChecker, StepStatus
from grader.problems.registry import Registry, parse_problem
from sandbox.runner.messages import Limits

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def checker(shared_checker: ProblemChecker) -> ProblemChecker:
    return shared_checker  # on the session's warm sandboxes (tests/conftest.py)


def grade(checker: ProblemChecker, text: str, source: str) -> Verdict:
    """A submission graded as the Grader grades it: the reference's outputs, then the module judged."""
    problem = Registry(Limits(time_s=10, memory_mb=1024, output_kb=64)).make(parse_problem(text, "p.yaml"))
    sandboxes = checker.sandboxes()
    reference = run_module(sandboxes, problem, problem.reference, checker.sandbox, rules=False)
    expected = Expected([reference.body(i) for i in range(len(problem.tests))], [])
    return judge_module(problem, expected, run_module(sandboxes, problem, source, checker.sandbox, rules=True))


STATS = """\
id: stats
title: Statistics
difficulty: easy
statement: Return the mean, the count of positives, whether any is negative, and the maximum, as numbers.
starter_code: |
  def stats(x):
      pass
entry_points: [stats]
reference: |
  import numpy as np


  def stats(x):
      a = np.asarray(x, dtype=np.float64)
      return {"mean": a.mean(), "positives": np.int64((a > 0).sum()), "negative": np.bool_((a < 0).any()),
              "max": np.array(a.max())}
tests:
  - name: numbers
    visible: true
    code: |
      return stats([1.5, -2.0, 3.25, 4.0])
"""

PYTHON_NUMBERS = """\
def stats(x):
    return {"mean": sum(x) / len(x), "positives": sum(1 for v in x if v > 0), "negative": any(v < 0 for v in x),
            "max": max(x)}
"""

TORCH_NUMBERS = """\
import torch


def stats(x):
    t = torch.tensor(x, dtype=torch.float64)
    return {"mean": t.mean().item(), "positives": int((t > 0).sum()), "negative": bool((t < 0).any()),
            "max": float(t.max())}
"""

ZERO_D_TENSOR = """\
import torch


def stats(x):
    t = torch.tensor(x, dtype=torch.float64)
    return {"mean": t.mean(), "positives": 3, "negative": True, "max": 4.0}
"""


@pytest.mark.parametrize("source", [PYTHON_NUMBERS, TORCH_NUMBERS], ids=["python", "torch-item"])
def test_python_numbers_are_accepted_against_numpy_scalars(checker: ProblemChecker, source: str) -> None:
    verdict = grade(checker, STATS, source)
    assert verdict.status == Status.ACCEPTED, verdict


def test_a_zero_d_tensor_is_not_a_number(checker: ProblemChecker) -> None:
    verdict = grade(checker, STATS, ZERO_D_TENSOR)
    assert verdict.status == Status.WRONG_ANSWER
    assert verdict.tests[0].message == "expected a float, got a tensor"


DROPOUT = """\
id: dropout
title: Dropout
difficulty: easy
statement: Zero each element with probability p, scale the others by 1/(1-p).
starter_code: |
  def dropout(x, p):
      pass
entry_points: [dropout]
reference: |
  import torch


  def dropout(x, p):
      return x * torch.bernoulli(torch.full_like(x, 1 - p)) / (1 - p)
helpers: |
  def size_of(y):
      return y.numel()
seed: fixed
tests:
  - name: the rate of zeros and the scale
    visible: true
    code: |
      x = torch.ones(200_000)
      y = dropout(x, 0.3)
      return {"y": y, "n": size_of(y), "x": x}
    check:
      y:
        holds:
          - "abs((y == 0).double().mean().item() - 0.3) < 0.01"
          - "torch.allclose(y[y != 0], torch.tensor(1 / 0.7, dtype=torch.float32))"
      n: {holds: ["n == 200_000"]}
  - name: the expected value is computed from the submission's own mask
    code: |
      x = torch.randn(1000)
      y = dropout(x, 0.5)
      return {"y": y, "x": x}
    check:
      y: {expect: "torch.where(y != 0, x * 2, 0 * x)", rtol: 1.0e-6}
pitfalls:
  - name: did not scale
    hint: Scale the kept elements by 1/(1-p).
    code: |
      import torch


      def dropout(x, p):
          return x * (torch.rand_like(x) >= p)
alternatives:
  - name: rand_like
    code: |
      import torch


      def dropout(x, p):
          return torch.where(torch.rand_like(x) >= p, x / (1 - p), torch.zeros_like(x))
"""


def test_a_statistical_test_accepts_a_differently_drawn_sampler(checker: ProblemChecker) -> None:
    rand_like = DROPOUT.split("alternatives:")[1].split("code: |\n", 1)[1]
    source = "\n".join(line[6:] for line in rand_like.splitlines())
    assert grade(checker, DROPOUT, source).status == Status.ACCEPTED
    report = checker.check_text(DROPOUT, "dropout.yaml")
    assert report.ok, report.errors
    alternatives = next(step for step in report.steps if step.name == "alternatives")
    assert alternatives.status == StepStatus.OK and alternatives.summary.startswith("1/1 accepted")


def test_a_wrong_rate_fails_the_property_by_name(checker: ProblemChecker) -> None:
    source = "import torch\n\n\ndef dropout(x, p):\n    return x * (torch.rand_like(x) >= 0.5) * 2\n"
    verdict = grade(checker, DROPOUT, source)
    assert verdict.status == Status.WRONG_ANSWER
    assert "does not hold" in (verdict.tests[0].message or "")


def test_an_alternative_the_tests_refuse_fails_the_check_by_name(checker: ProblemChecker) -> None:
    text = DROPOUT.replace("  - name: rand_like", "  - name: float64 inside").replace(
        "torch.where(torch.rand_like(x) >= p, x / (1 - p), torch.zeros_like(x))",
        "(x.double() * torch.bernoulli(torch.full_like(x, 1 - p)).double() / (1 - p))",
    )
    report = checker.check_text(text, "dropout.yaml")
    assert not report.ok
    [error] = [e for e in report.errors if "alternative" in e]
    line = text.splitlines().index("  - name: float64 inside") + 1
    assert error.startswith(f"dropout.yaml:{line}: alternatives.1: alternative 'float64 inside' is not accepted: ")
    assert "fails test 2" in error and "dtype float64 instead of float32" in error


def test_helpers_that_raise_are_the_references_failure(checker: ProblemChecker, tmp_path: Path) -> None:
    text = DROPOUT.replace("      return y.numel()", "      raise ValueError('helper bug')")
    report = checker.check_text(text, "dropout.yaml")
    assert not report.ok
    assert any("the reference fails test 1" in e and "helper bug" in e for e in report.errors), report.errors
