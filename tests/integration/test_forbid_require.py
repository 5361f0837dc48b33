"""A problem's `forbid:` and `require:` (docs/problems.md) in the real sandbox: a submission that names a forbidden
function is refused before it runs (compile_error, with the line); one that reaches it without naming it fails the
test that calls it, with the rule's name; a solution written by hand is accepted; the reference, which uses the
function, is the problem's own code and is never held to the rule."""

from __future__ import annotations

import pytest

from grader.grading.verdict import Status, Verdict
from grader.problems.check import ProblemChecker
from grader.problems.registry import Registry, parse_problem
from grader.vocabulary import TestStatus
from sandbox.runner.messages import Limits
from tests.integration.judging import graded

pytestmark = pytest.mark.docker

PROBLEM = """\
id: attention-by-hand
title: Attention by hand
difficulty: easy
statement: Scaled dot-product attention, written without torch's fused function.
starter_code: |
  def attend(q, k, v):
      pass
entry_points: [attend]
forbid: [torch.nn.functional.scaled_dot_product_attention]
reference: |
  import torch.nn.functional as F


  def attend(q, k, v):
      return F.scaled_dot_product_attention(q, k, v)
tests:
  - name: one head
    visible: true
    code: |
      q, k, v = torch.randn(2, 5, 8), torch.randn(2, 7, 8), torch.randn(2, 7, 8)
      return {"out": attend(q, k, v)}
"""

BY_HAND = """\
import math
import torch


def attend(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return torch.softmax(scores, dim=-1) @ v
"""

NAMED = """\
import torch.nn.functional as F


def attend(q, k, v):
    return F.scaled_dot_product_attention(q, k, v)
"""

# Not named in the source: reached by a string, and through another module that holds the same function.
BY_STRING = """\
import torch.nn.functional as F


def attend(q, k, v):
    return getattr(F, "scaled_dot" + "_product_attention")(q, k, v)
"""

THROUGH_C = """\
import torch


def attend(q, k, v):
    return getattr(torch._C, "_nn").scaled_dot_product_attention(q, k, v)
"""


@pytest.fixture(scope="module")
def checker(shared_checker_one_seed: ProblemChecker) -> ProblemChecker:
    return shared_checker_one_seed  # on the session's warm sandboxes (tests/conftest.py)


def grade(checker: ProblemChecker, source: str, text: str = PROBLEM) -> Verdict:
    problem = Registry(Limits(time_s=10, memory_mb=1024, output_kb=64)).make(parse_problem(text, "p.yaml"))
    return graded(checker, problem, source)


def test_a_solution_by_hand_is_accepted_and_the_reference_may_use_what_learners_may_not(
    checker: ProblemChecker,
) -> None:
    verdict = grade(checker, BY_HAND)
    assert verdict.status == Status.ACCEPTED, [(t.status, t.message) for t in verdict.tests]


def test_a_source_that_names_a_forbidden_function_is_refused_with_its_line(checker: ProblemChecker) -> None:
    verdict = grade(checker, NAMED)
    assert verdict.status == Status.COMPILE_ERROR, verdict.status
    assert "line 5" in (verdict.message or "") and "forbids" in (verdict.message or ""), verdict.message


@pytest.mark.parametrize("source", [BY_STRING, THROUGH_C], ids=["by-string", "through-torch-C"])
def test_a_forbidden_function_reached_without_its_name_fails_the_test_that_calls_it(
    checker: ProblemChecker, source: str
) -> None:
    verdict = grade(checker, source)
    assert verdict.status == Status.RUNTIME_ERROR, verdict.status
    [test] = verdict.tests
    assert test.status == TestStatus.ERROR and "forbidden in this problem" in (test.message or ""), test.message


def test_a_required_name_the_source_never_uses_is_refused(checker: ProblemChecker) -> None:
    text = PROBLEM.replace("forbid: [torch.nn.functional.scaled_dot_product_attention]", "require: [torch.einsum]")
    verdict = grade(checker, BY_HAND, text)
    assert verdict.status == Status.COMPILE_ERROR and "torch.einsum" in (verdict.message or ""), verdict.message
    with_einsum = BY_HAND.replace("q @ k.transpose(-2, -1)", "torch.einsum('bqd,bkd->bqk', q, k)")
    assert grade(checker, with_einsum, text).status == Status.ACCEPTED
