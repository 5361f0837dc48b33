"""A verdict is decided where the submission cannot reach it, in a real sandbox. A test's code runs in the
submission's process: a test that returned `bool(torch.equal(x, before))` handed the verdict to a submission
that replaces torch.equal (and Tensor.equal, torch.allclose) with a function returning True, and then
clobbers its inputs in place. The shipped attention problem's test now returns the inputs as the call
leaves them, and the judge compares them with the reference's; the problem check refuses the old form
(grader/problems/check/inside.py, tests/unit/test_check_computed_bools.py).

Before the rewrite this submission was accepted on scaled-dot-product-attention.yaml."""

from __future__ import annotations

import pytest

from grader.grading import verdict as verdicts
from grader.grading.verdict import Status
from grader.problems.check import ProblemChecker
from grader.problems.check.authoring import file_findings
from grader.problems.check.locate import Locator
from grader.problems.registry import parse_problem
from tests.conftest import PROBLEMS_DIR
from tests.integration.test_authoring_features import grade

pytestmark = pytest.mark.docker

# Right on every value, but it zeroes the keys it is given (in the shape of the problem's "not modified"
# test only, so that every other test sees correct answers), and says any two tensors are equal.
FORGER = """\
import math

import torch

torch.equal = torch.Tensor.equal = lambda *args, **kwargs: True
torch.allclose = torch.Tensor.allclose = lambda *args, **kwargs: True


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    output = weights @ v
    if mask is not None and tuple(k.shape) == (2, 5, 4) and not k.requires_grad:
        k.zero_()
    return output, weights
"""
SHIPPED = PROBLEMS_DIR / "scaled-dot-product-attention.yaml"

# The old form of the test, as a problem of its own: the bool computed beside the submission.
OLD_FORM = """\
id: keep-input
title: Keep the input
difficulty: easy
statement: Return twice x; do not modify x.
starter_code: |
  def double(x):
      pass
entry_points: [double]
reference: |
  def double(x):
      return 2 * x
tests:
  - name: the input is left alone
    visible: true
    code: |
      x = torch.ones(3)
      before = x.clone()
      out = double(x)
      return {"out": out, "unchanged": bool(torch.equal(x, before))}
"""
OLD_FORM_FORGER = """\
import torch

torch.equal = lambda *args, **kwargs: True


def double(x):
    out = 2 * x
    x.zero_()
    return out
"""


@pytest.fixture(scope="module")
def checker(shared_checker: ProblemChecker) -> ProblemChecker:
    return shared_checker  # on the session's warm sandboxes (tests/conftest.py)


def test_a_forged_torch_equal_does_not_pass_the_shipped_problem(checker: ProblemChecker) -> None:
    verdict = grade(checker, SHIPPED.read_text(), FORGER)
    failed = [(t.name, t.status, t.message) for t in verdict.tests if t.status != verdicts.TestStatus.PASSED]
    assert verdict.status == Status.WRONG_ANSWER, failed
    assert [name for name, *_ in failed] == ["the inputs are not modified"], failed


def test_the_old_form_is_forged_in_the_sandbox_and_refused_by_the_check(checker: ProblemChecker) -> None:
    # What the rule stops: the forger is accepted where the test decides `unchanged` itself.
    verdict = grade(checker, OLD_FORM, OLD_FORM_FORGER)
    assert verdict.status == Status.ACCEPTED, [(t.name, t.status, t.message) for t in verdict.tests]
    errors, _ = file_findings(parse_problem(OLD_FORM, "keep.yaml"), Locator("keep.yaml", OLD_FORM))
    [error] = errors
    assert "returns `unchanged`, a bool its code computes (`bool(torch.equal(x, before))`)" in error
