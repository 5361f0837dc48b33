"""Torch's process-wide settings are the judge's in every test (sandbox/runner/torchstate.py): what a submission
sets at import (a default dtype, deterministic algorithms) or leaves set by one test (grad mode off, inference
mode, print options, threads) changes neither the tests' own inputs nor the next test. In the real sandbox."""

from __future__ import annotations

import textwrap

import pytest

from grader.grading.verdict import Status, Verdict
from grader.problems.check import ProblemChecker
from grader.problems.registry import Registry, parse_problem
from grader.vocabulary import TestStatus
from sandbox.runner.messages import Limits
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
    trivial: it reads the settings a test finds, whatever the module answers
    code: |
      return {
          "deterministic": torch.are_deterministic_algorithms_enabled(),
          "inference": torch.ones(1).is_inference(),
          "grad": torch.ones(1, requires_grad=True).mul(2).requires_grad,
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
    problem = Registry(Limits(time_s=10, memory_mb=1024, output_kb=64)).make(parse_problem(PROBLEM, "p.yaml"))
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


# Every process-wide setting a module can set at import, set to something other than the judge's. Its own calls
# (a function, a method of the object it returns, a generator it hands back, a builtin it names as an entry point)
# find them, each call as the import left them; the test's code around those calls finds the judge's.
LEARNER = """\
import numpy as np
import torch

torch.set_default_dtype(torch.float64)
torch.set_grad_enabled(False)
torch.use_deterministic_algorithms(True)
torch.autograd.set_detect_anomaly(True)
torch.set_float32_matmul_precision("medium")
torch.set_printoptions(precision=10)
torch.backends.mkldnn.enabled = False
np.seterr(all="raise")


def readings():
    made = torch.full((2,), 1 / 3)
    readings = {
        "dtype": str(made.dtype),
        "grad": torch.is_grad_enabled(),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "anomaly": torch.is_anomaly_enabled(),
        "matmul": torch.get_float32_matmul_precision(),
        "printed": str(torch.tensor([1 / 3])),
        "mkldnn": torch.backends.mkldnn.enabled,
        "numpy": np.geterr()["divide"],
    }
    torch.set_default_dtype(torch.float32)  # changed inside one call: the next call starts from the import's again
    return readings


class Probe:
    def read(self):
        return readings()

    def each(self):
        yield readings()
        yield readings()


def probe():
    return Probe()


made_by_builtin = torch.zeros
"""

INSIDE = {
    "dtype": "torch.float64",
    "grad": False,
    "deterministic": True,
    "anomaly": True,
    "matmul": "medium",
    "printed": "tensor([0.3333333333])",
    "mkldnn": False,
    "numpy": "raise",
}
OUTSIDE = {
    "dtype": "torch.float32",
    "grad": True,
    "deterministic": False,
    "anomaly": False,
    "matmul": "highest",
    "printed": "tensor([0.3333])",
    "mkldnn": True,
    "numpy": "warn",
}

LEARNER_PROBLEM = f"""\
id: learner-settings
title: Settings
difficulty: easy
statement: Report the settings.
starter_code: |
  def readings():
      pass
entry_points: [readings, probe, made_by_builtin]
reference: |
{textwrap.indent(LEARNER, "  ")}
helpers: |
  def judges():
      return {{
          "dtype": str(torch.full((2,), 1 / 3).dtype),
          "grad": torch.is_grad_enabled(),
          "deterministic": torch.are_deterministic_algorithms_enabled(),
          "anomaly": torch.is_anomaly_enabled(),
          "matmul": torch.get_float32_matmul_precision(),
          "printed": str(torch.tensor([1 / 3])),
          "mkldnn": torch.backends.mkldnn.enabled,
          "numpy": np.geterr()["divide"],
      }}
tests:
  - name: inside and outside
    visible: true
    code: |
      before = judges()
      first = readings()
      between = judges()
      second = probe().read()
      each = list(probe().each())
      return {{
          "inside": [first, second, *each],
          "outside": [before, between, judges()],
          "builtin": str(made_by_builtin(2).dtype),
          "input": str(torch.randn(2).dtype),
      }}
    check:
      inside:
        holds:
          - "all(r == {INSIDE!r} for r in inside)"
      outside:
        holds:
          - "all(r == {OUTSIDE!r} for r in outside)"
      builtin:
        holds: ["builtin == 'torch.float64'"]
      input:
        holds: ["input == 'torch.float32'"]
"""


def test_what_a_module_sets_at_import_holds_in_its_own_calls_and_never_in_the_tests_code(
    checker: ProblemChecker,
) -> None:
    problem = Registry(Limits(time_s=10, memory_mb=1024, output_kb=64)).make(parse_problem(LEARNER_PROBLEM, "p.yaml"))
    verdict = graded(checker, problem, LEARNER)
    failures = [(t.name, t.status, t.message) for t in verdict.tests if t.status != "passed"]
    assert verdict.status == Status.ACCEPTED, failures
