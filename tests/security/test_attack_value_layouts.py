"""Issue 41, point 5 (values keep what they are), in a real sandbox: a tensor whose layout the wire does not carry
(sparse, nested) is never densified on its way out (sandbox/runner/values.py). Before, a sparse COO value was
sent dense: a dense answer passed against a sparse reference, and the problem check took the sparse reference
without a word. Now such a value arrives as what it is, an unsupported value: the problem check refuses a
reference that returns one, with its reason, and an answer of another layout than the reference's is wrong."""

from __future__ import annotations

import pytest

from grader.grading.verdict import Status
from grader.problems.check import ProblemChecker
from tests.integration.test_authoring_features import grade

pytestmark = pytest.mark.docker


def problem(reference_body: str) -> str:
    return f"""\
id: keep
title: Keep the nonzeros
difficulty: easy
statement: Return x with its negative entries set to zero.
starter_code: |
  def keep(x):
      pass
entry_points: [keep]
reference: |
  import torch


  def keep(x):
      {reference_body}
tests:
  - name: a small matrix
    visible: true
    code: |
      return keep(torch.tensor([[1.0, -2.0], [0.0, 3.0]]))
"""


DENSE = problem("return x.clamp(min=0)")
SPARSE = problem("return x.clamp(min=0).to_sparse()")
SPARSE_ANSWER = "def keep(x):\n    return x.clamp(min=0).to_sparse()\n"
NESTED_ANSWER = "import torch\n\n\ndef keep(x):\n    return torch.nested.nested_tensor([r for r in x.clamp(min=0)])\n"
DENSE_ANSWER = "def keep(x):\n    return x.clamp(min=0)\n"


@pytest.fixture(scope="module")
def checker(shared_checker: ProblemChecker) -> ProblemChecker:
    return shared_checker  # on the session's warm sandboxes (tests/conftest.py)


def test_a_reference_that_returns_a_sparse_tensor_is_refused_by_the_check(checker: ProblemChecker) -> None:
    report = checker.check_text(SPARSE, "keep.yaml")
    assert not report.ok
    said = "\n".join(report.errors)
    assert "tensor of layout torch.sparse_coo" in said and ".to_dense()" in said, said


@pytest.mark.parametrize(("answer", "named"), [(SPARSE_ANSWER, "sparse_coo"), (NESTED_ANSWER, "nested tensor")])
def test_an_answer_of_another_layout_is_wrong(checker: ProblemChecker, answer: str, named: str) -> None:
    verdict = grade(checker, DENSE, answer)
    assert verdict.status == Status.WRONG_ANSWER, [(t.name, t.status, t.message) for t in verdict.tests]
    assert named in (verdict.tests[0].message or ""), verdict.tests[0].message


def test_a_dense_answer_to_a_dense_reference_passes(checker: ProblemChecker) -> None:
    assert grade(checker, DENSE, DENSE_ANSWER).status == Status.ACCEPTED
    report = checker.check_text(DENSE, "keep.yaml")
    assert not any("cannot compare" in error for error in report.errors), report.errors
