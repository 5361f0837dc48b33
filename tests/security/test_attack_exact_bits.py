"""Issue 41, point 5 (values keep what they are), in a real sandbox: `checker: exact` compares bits, so a module
that returns `0 - x` where the reference returns `-x` is refused where x holds a zero (+0.0 against the
reference's -0.0), and the problem check no longer calls such a pitfall one that "passes every test". Before,
both sides were compared by value (0.0 == -0.0) and the module was accepted."""

from __future__ import annotations

import pytest

from grader.grading.verdict import Status
from grader.problems.check import ProblemChecker
from grader.problems.check.report import StepStatus
from tests.integration.test_authoring_features import grade

pytestmark = pytest.mark.docker

PROBLEM = """\
id: negate
title: Negate
difficulty: easy
statement: Return -x, bit for bit (the sign of a zero included).
starter_code: |
  def negate(x):
      pass
entry_points: [negate]
reference: |
  def negate(x):
      return -x
tests:
  - name: zeros among the values
    visible: true
    checker: exact
    code: |
      return negate(torch.tensor([0.0, 1.5, -2.0, 0.0]))
pitfalls:
  - name: subtracted from zero
    hint: 0 - x is +0.0 where x is 0.0; -x is -0.0.
    code: |
      def negate(x):
          return 0 - x
"""
SUBTRACTED = "def negate(x):\n    return 0 - x\n"
NEGATED = "import torch\n\n\ndef negate(x):\n    return torch.neg(x)\n"


@pytest.fixture(scope="module")
def checker(shared_checker: ProblemChecker) -> ProblemChecker:
    return shared_checker  # on the session's warm sandboxes (tests/conftest.py)


def test_a_zero_of_the_other_sign_is_refused_by_exact(checker: ProblemChecker) -> None:
    verdict = grade(checker, PROBLEM, SUBTRACTED)
    assert verdict.status == Status.WRONG_ANSWER, [(t.name, t.status, t.message) for t in verdict.tests]
    assert "sign of a zero" in (verdict.tests[0].message or ""), verdict.tests[0].message


def test_the_same_bits_written_another_way_pass(checker: ProblemChecker) -> None:
    verdict = grade(checker, PROBLEM, NEGATED)
    assert verdict.status == Status.ACCEPTED, [(t.name, t.status, t.message) for t in verdict.tests]


def test_the_problem_check_does_not_call_the_pitfall_passing(checker: ProblemChecker) -> None:
    report = checker.check_text(PROBLEM, "negate.yaml")
    said = [line for step in report.steps for line in step.errors + step.warnings + step.details]
    assert not any("passes every test" in line for line in said), said
    pitfalls = next(step for step in report.steps if step.name == "pitfalls")
    assert pitfalls.status != StepStatus.FAILED, pitfalls
