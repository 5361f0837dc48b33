"""A problem's own limits hold as stated, above the server's defaults too: its memory limit is what the
test's process gets (the sandbox is sized for the most any problem may ask, GRADER_MAX_MEMORY_MB), no
less and no more."""

from __future__ import annotations

import pytest

from grader.grading.verdict import Status, Verdict
from grader.problems.check import ProblemChecker, StepStatus
from grader.problems.registry import Registry
from sandbox.runner.messages import Limits
from tests.integration.judging import graded

pytestmark = pytest.mark.docker

LIMIT_MB = 3072  # three times the server's default


def big_problem(allocate_mb: int) -> str:
    return f"""\
id: big-memory
title: Big Memory
difficulty: easy
statement: Sum a large tensor of ones.
starter_code: |
  def total(n_mb):
      pass
entry_points: [total]
reference: |
  import torch


  def total(n_mb):
      ones = torch.ones(n_mb * 256 * 1024, dtype=torch.float32)  # n_mb MiB
      return float(ones.sum().item())
limits: {{time_s: 20, memory_mb: {LIMIT_MB}}}
tests:
  - name: about 2.4 GB held at once
    visible: true
    code: |
      return {{"sum": total({allocate_mb})}}
pitfalls:
  - name: half
    hint: All of them.
    code: |
      def total(n_mb):
          return n_mb * 128 * 1024.0
"""


@pytest.fixture(scope="module")
def checker(shared_checker_one_seed: ProblemChecker) -> ProblemChecker:
    return shared_checker_one_seed  # on the session's warm sandboxes (tests/conftest.py)


def grade(checker: ProblemChecker, text: str, source: str) -> Verdict:
    """A submission graded as the Grader grades it: the reference's outputs, then the module judged."""
    registry = Registry(Limits(time_s=2, memory_mb=1024, output_kb=64), max_memory_mb=4096)
    problem = registry.make(registry.parse(text, "big.yaml"))
    assert problem.limits.memory_mb == LIMIT_MB
    return graded(checker, problem, source)


def test_a_reference_using_more_than_the_default_memory_within_its_problems_limit_is_accepted(
    checker: ProblemChecker,
) -> None:
    report = checker.check_text(big_problem(2400), "big.yaml")
    reference = next(step for step in report.steps if step.name == "reference")
    assert reference.status == StepStatus.OK, reference
    assert report.ok, report.errors


def test_a_submission_within_the_limit_is_accepted_and_one_past_it_is_memory_limit_exceeded(
    checker: ProblemChecker,
) -> None:
    text = big_problem(2400)
    within = grade(checker, text, "import torch\n\n\ndef total(n_mb):\n    return float(n_mb * 256 * 1024)\n")
    assert within.status == Status.ACCEPTED, within
    over = "import torch\n\n\ndef total(n_mb):\n    return float(torch.ones(900 * 1024 * 1024).sum().item())\n"
    verdict = grade(checker, text, over)  # 3.5 GiB: more than its 3 GB, less than the sandbox holds
    assert verdict.status == Status.MEMORY_LIMIT_EXCEEDED, verdict
    assert f"memory limit of {LIMIT_MB} MB" in verdict.tests[0].message, verdict.tests[0]
