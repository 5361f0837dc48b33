"""Torch's process-wide settings are the judge's in every test (sandbox/runner/torchstate.py): what a submission
sets at import (a default dtype, deterministic algorithms) or leaves set by one test (grad mode off, inference
mode, print options, threads) changes neither the tests' own inputs nor the next test. In the real sandbox."""

from __future__ import annotations

import pytest

from grader.grading.verdict import Status, Verdict
from grader.problems.check import ProblemChecker
from grader.problems.registry import EffectiveLimits, Registry, parse_problem
from grader.vocabulary import TestStatus
from tests.integration.judging import graded

pytestmark = pytest.mark.docker

PROBLEM = """\
id: state
title: Settings
difficulty: easy
statement: Double a tensor; and a training step.
starter_code: |
  def predict(x):
      pass


  def loss(w):
      pass
entry_points: [predict, loss]
reference: |
  def predict(x):
      return x * 2


  def loss(w):
      return (w * w).sum()
tests:
  - name: the test's own input keeps the default dtype
    visible: true
    code: |
      x = torch.tensor([1.0, 2.0])
      return {"y": predict(x), "dtype": str(x.dtype), "made": str(torch.zeros(1).dtype)}
  - name: a gradient, after a test whose call turned grad mode off
    visible: true
    code: |
      w = torch.tensor([1.0, -2.0], requires_grad=True)
      loss(w).backward()
      return {"grad": w.grad}
  - name: the settings a test finds
    visible: true
    code: |
      return {
          "deterministic": torch.are_deterministic_algorithms_enabled(),
          "inference": torch.is_inference_mode_enabled(),
          "grad": torch.is_grad_enabled(),
          "anomaly": torch.is_anomaly_enabled(),
          "printed": str(torch.tensor([1 / 3])),
      }
"""

# Correct, but it changes torch's settings: at import, and in predict (as an inference helper might).
UNTIDY = """\
import torch

torch.set_default_dtype(torch.float64)
torch.use_deterministic_algorithms(True)
torch.set_printoptions(precision=10)
torch.autograd.set_detect_anomaly(True)


def predict(x):
    torch.set_grad_enabled(False)
    torch.inference_mode(True).__enter__()
    torch.set_num_threads(1)
    return x * 2


def loss(w):
    return (w * w).sum()
"""


@pytest.fixture(scope="module")
def checker(shared_checker: ProblemChecker) -> ProblemChecker:
    return shared_checker  # on the session's warm sandboxes (tests/conftest.py)


def grade(checker: ProblemChecker, source: str) -> Verdict:
    problem = Registry(EffectiveLimits(time_s=10, memory_mb=1024, output_kb=64)).make(parse_problem(PROBLEM, "p.yaml"))
    return graded(checker, problem, source)


def test_settings_a_submission_changes_reach_neither_the_tests_inputs_nor_the_next_test(
    checker: ProblemChecker,
) -> None:
    verdict = grade(checker, UNTIDY)
    failures = [(t.name, t.status, t.message) for t in verdict.tests if t.status != "passed"]
    assert verdict.status == Status.ACCEPTED, failures


def test_the_check_names_a_reference_and_a_test_that_leave_settings_changed(checker: ProblemChecker) -> None:
    """Harmless to verdicts (the judge puts them back), but the author should know: named, as warnings."""
    leaky = PROBLEM.replace(
        "reference: |\n  def predict(x):\n      return x * 2\n",
        "reference: |\n  import torch\n\n  torch.set_printoptions(precision=2)\n\n\n"
        "  def predict(x):\n      return x * 2\n",
    ).replace(
        '      loss(w).backward()\n      return {"grad": w.grad}\n',
        '      loss(w).backward()\n      torch.set_default_dtype(torch.float64)\n      return {"grad": w.grad}\n',
    )
    assert leaky.count("set_printoptions") == 1 and leaky.count("set_default_dtype") == 1
    report = checker.check_text(leaky, "leaky.yaml")
    assert report.ok, report.errors
    warnings = next(step for step in report.steps if step.name == "reference").warnings
    assert any(w.startswith("the reference changes torch's print options when it is imported") for w in warnings)
    assert any(
        w.startswith("test 2 'a gradient, after a test whose call turned grad mode off' leaves torch's default dtype")
        for w in warnings
    ), warnings
    assert not any("test 1 " in w or "test 3 " in w for w in warnings)


def test_a_tidy_problem_gets_no_settings_warning(checker: ProblemChecker) -> None:
    report = checker.check_text(PROBLEM, "tidy.yaml")
    assert report.ok, report.errors
    assert not [w for step in report.steps for w in step.warnings if "torch's" in w]


# predict changes the default dtype and breaks the setter that would put it back: every test after it finds
# the setting wrong and cannot put it back, and says so, rather than make its inputs with the changed setting.
BREAKS_THE_SETTER = """\
import torch


def predict(x):
    torch.set_default_dtype(torch.float64)

    def refuse(*args, **kwargs):
        raise RuntimeError("no setting back")

    torch._C._set_default_dtype = refuse  # what torch.set_default_dtype calls
    return x * 2


def loss(w):
    return (w * w).sum()
"""


def test_a_test_after_one_that_broke_a_setter_says_so_rather_than_run_with_the_changed_setting(
    checker: ProblemChecker,
) -> None:
    verdict = grade(checker, BREAKS_THE_SETTER)
    first, *later = verdict.tests
    # Its own tensor made after the call is float64: its value differs (the setting is put back only after it).
    assert first.status == TestStatus.FAILED, (first.status, first.message)
    assert later
    for test in later:
        assert test.status == TestStatus.ERROR, (test.status, test.message)
        assert "no setting back" in (test.message or ""), test.message
