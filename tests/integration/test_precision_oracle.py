"""The problem check's float64 oracle (grader/problems/check/oracle.py), against the real sandbox: a test whose
tolerance is tighter than the float32 reference's own error refuses a submission more accurate than the
reference, so the check refuses the test, with the error measured and a tolerance that holds it; a test the oracle
cannot measure (other draws in float64) is named, never refused; a tolerance that holds the error passes."""

from __future__ import annotations

import pytest

from grader.grading.execution import run_module
from grader.grading.judge import Expected, judge_module
from grader.grading.verdict import Status
from grader.problems.check import ProblemChecker, StepStatus
from grader.problems.registry import Registry, parse_problem
from sandbox.runner.messages import Limits

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def checker(shared_checker_one_seed: ProblemChecker) -> ProblemChecker:
    return shared_checker_one_seed  # on the session's warm sandboxes (tests/conftest.py)


# The sum of 200,000 float32 values, returned in float32 and checked to within rtol 1e-9: float32 keeps about 7
# digits, and the reference's running sum loses more than that. {rtol} is the test's tolerance.
SUM = """\
id: total
title: Total
difficulty: easy
statement: Return the sum of x, in x's dtype.
starter_code: |
  def total(x):
      pass
entry_points: [total]
reference: |
  import torch


  def total(x):
      out = torch.zeros((), dtype=x.dtype)
      for chunk in x.split(1000):
          out = out + chunk.sum()
      return out
alternatives:
  - name: in one call
    code: |
      def total(x):
          return x.sum()
tests:
  - name: many values
    visible: true
    code: |
      x = torch.rand(200_000) * 3 + 1
      return {{"y": total(x)}}
    check:
      y: {{rtol: {rtol}, atol: 0}}
  - name: a draw of its own
    code: |
      return {{"y": total(torch.ones(4)) + noise(4)}}
    check:
      y: {{rtol: 1.0e-5}}
helpers: |
  def noise(n):
      return torch.zeros(()) + 0 * n
"""

# A reference that draws inside itself: in float64 it draws other numbers, which say nothing of its precision.
DRAWS = SUM.replace(
    "      out = torch.zeros((), dtype=x.dtype)\n",
    "      out = torch.rand((), dtype=torch.get_default_dtype()).to(x.dtype) * 0\n"
    "      out = out + torch.rand(()).to(x.dtype) * 1000\n",
).replace("          return x.sum()", "          return x.sum() + torch.rand(()) * 0 + torch.rand(()) * 1000")


def step(checker: ProblemChecker, text: str):  # type: ignore[no-untyped-def]
    report = checker.check_text(text, "total.yaml")
    return next(s for s in report.steps if s.name == "tolerances"), report


def test_a_tolerance_tighter_than_the_references_own_error_is_refused_with_the_error_and_a_tolerance(
    checker: ProblemChecker,
) -> None:
    text = SUM.format(rtol="1.0e-9")
    # What the check guards against, for real: the exact sum (a more accurate submission) fails this test.
    problem = Registry(Limits(time_s=10, memory_mb=1024, output_kb=64)).make(parse_problem(text, "p.yaml"))
    sandboxes = checker.sandboxes()
    reference = run_module(sandboxes, problem, problem.reference, checker.sandbox, rules=False)
    expected = Expected([reference.body(i) for i in range(len(problem.tests))], [])
    exact = "import torch\n\ndef total(x):\n    return x.double().sum().to(x.dtype)\n"
    verdict = judge_module(problem, expected, run_module(sandboxes, problem, exact, checker.sandbox, rules=True))
    assert verdict.status == Status.WRONG_ANSWER, verdict.status

    tolerances, report = step(checker, text)
    assert tolerances.status == StepStatus.FAILED and not report.ok
    [error] = tolerances.errors
    assert "total.yaml:" in error and "tests.1" in error, error
    assert "tighter than the reference's own float32 error" in error and "rtol " in error, error
    assert "test 2" not in error


def test_a_tolerance_that_holds_the_error_passes_and_the_summary_gives_the_error(checker: ProblemChecker) -> None:
    tolerances, report = step(checker, SUM.format(rtol="1.0e-4"))
    assert tolerances.status == StepStatus.OK, tolerances.errors
    assert "the reference's own error (against float64) within the tolerance of 2 of 2 tests" in tolerances.summary


def test_a_reference_that_draws_other_numbers_in_float64_is_named_not_refused(checker: ProblemChecker) -> None:
    tolerances, report = step(checker, DRAWS.format(rtol="1.0e-9"))
    assert tolerances.status == StepStatus.OK, tolerances.errors
    assert any("could not measure" in w and "1 'many values'" in w for w in tolerances.warnings), tolerances.warnings


# A factory whose module draws its weights when it is made: the oracle makes it as the reference does (the same
# weights), widens it, and gives its forward float64 inputs, so the error of its forward is measured too.
FACTORY = """\
id: layer
title: Layer
difficulty: easy
statement: Make a linear layer from n inputs to 1 output.
starter_code: |
  def make_layer(n):
      pass
entry_points: [make_layer]
reference: |
  import torch


  def make_layer(n):
      return torch.nn.Linear(n, 1)
tests:
  - name: a wide layer
    visible: true
    code: |
      layer = make_layer(50_000)
      x = torch.rand(8, 50_000) * 3 + 1
      with torch.no_grad():
          return {{"y": layer(x)}}
    check:
      y: {{rtol: {rtol}, atol: 0}}
"""


def test_a_module_a_factory_makes_is_measured_with_the_references_own_weights(checker: ProblemChecker) -> None:
    tolerances, _ = step(checker, FACTORY.format(rtol="1.0e-9"))
    assert tolerances.status == StepStatus.FAILED, tolerances.summary
    assert "tighter than the reference's own float32 error" in tolerances.errors[0], tolerances.errors
    tolerances, _ = step(checker, FACTORY.format(rtol="1.0e-3"))
    assert tolerances.status == StepStatus.OK, tolerances.errors
    assert "within the tolerance of 1 of 1 tests" in tolerances.summary, tolerances.summary
