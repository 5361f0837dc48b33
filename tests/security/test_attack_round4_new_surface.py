"""Attacks on the surface added last: a module's import-time settings held in its own calls
(torchstate.LearnerSettings), a problem's forbid:/require: (grader/grading/source_rules.py,
sandbox/runner/forbid.py), in the real sandbox.

What was found and how each ends:
- forbid: through torch.ops.aten's operator of the same name: refused on the source, and replaced in the child;
  through another operator that computes the same (a backend's variant) or the original found by gc: residuals,
  marked xfail(strict) below and described in SECURITY.md;
- forbid: on a name the child's own code calls (numpy's or random's seed, torch.Tensor.detach) once failed every test
  of a correct solution: such a name is refused in the problem file, and the runner's modules keep theirs;
- the import's settings once leaked into the test's own code (a callable the test hands the submission; a
  RecursionError that took the profile function away): whose code runs is decided frame by frame, and the profile
  function is put back after every call of an entry point.
What held from the first: a generator's yield and an exception leave the test under the judge's settings; a call
that takes the profile function away leaves the next test untouched."""

from __future__ import annotations

import pytest

from grader.grading.verdict import Status, Verdict
from grader.problems.check import ProblemChecker
from grader.problems.registry import ProblemError, Registry, parse_problem
from grader.vocabulary import TestStatus
from sandbox.runner.messages import Limits
from tests.integration.judging import graded

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def checker(shared_checker_one_seed: ProblemChecker) -> ProblemChecker:
    return shared_checker_one_seed


def grade(checker: ProblemChecker, text: str, source: str) -> Verdict:
    problem = Registry(Limits(time_s=10, memory_mb=1024, output_kb=64)).make(parse_problem(text, "p.yaml"))
    return graded(checker, problem, source)


def said(verdict: Verdict) -> list:
    return [(t.status, t.message) for t in verdict.tests]


# -- forbid: reached through another object that runs the same kernel -----------------------------------------------

ATTENTION = """\
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

# Named plainly in the source: the static check does not take torch.ops.aten.X for the rule's name, and forbid.apply
# replaces only attributes holding the very object F.scaled_dot_product_attention is.
OPS_ATEN = """\
import torch


def attend(q, k, v):
    return torch.ops.aten.scaled_dot_product_attention(q, k, v)
"""

FLASH_FOR_CPU = """\
import torch


def attend(q, k, v):
    return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q[None], k[None], v[None])[0][0]
"""

# The original builtin, still alive (torch._C._nn's attribute was replaced, the object was not): found by gc, once
# the zygote's frozen objects (gc.freeze) are handed back to the collector.
BY_GC = """\
import gc


def attend(q, k, v):
    gc.unfreeze()
    original = next(
        o for o in gc.get_objects()
        if type(o).__name__ == "builtin_function_or_method"
        and getattr(o, "__name__", None) == "scaled_dot_product_attention"
        and getattr(o, "__module__", None) == "torch._C._nn"
    )
    return original(q, k, v)
"""


RESIDUAL = pytest.mark.xfail(
    strict=True, reason="a residual (SECURITY.md): another operator computing the same, or the original found by gc"
)


@pytest.mark.parametrize(
    "source",
    [OPS_ATEN, pytest.param(FLASH_FOR_CPU, marks=RESIDUAL), pytest.param(BY_GC, marks=RESIDUAL)],
    ids=["ops-aten", "flash-for-cpu", "gc"],
)
def test_a_forbidden_kernel_reached_through_another_object_is_not_accepted(
    checker: ProblemChecker, source: str
) -> None:
    verdict = grade(checker, ATTENTION, source)
    assert verdict.status != Status.ACCEPTED, said(verdict)


# -- forbid: on a name the child's own code calls --------------------------------------------------------------------

DOUBLE = """\
id: double
title: Double
difficulty: easy
statement: Twice the input.
starter_code: |
  def double(x):
      pass
entry_points: [double]
forbid: [RULE]
reference: |
  def double(x):
      return x * 2
tests:
  - name: a vector
    visible: true
    code: |
      return {"y": double(torch.randn(3))}
"""

HONEST_DOUBLE = """\
def double(x):
    return x + x
"""


# sandbox/runner/execute.py run_test seeds with np.random.seed and random.seed (outside any except: the child dies);
# sandbox/runner/values.py encodes a tensor through torch.Tensor.detach. None of them is the submission's use.
@pytest.mark.parametrize("rule", ["numpy.random.seed", "random.seed", "torch.Tensor.detach", "torch.nn.Linear"])
def test_a_rule_on_a_name_the_judge_itself_calls_is_refused_with_the_problem_file(rule: str) -> None:
    # Only a function of a torch module may be forbidden: never NumPy's or Python's (the child seeds with them), a
    # class or a class's method (values.py encodes through torch.Tensor's): a correct solution is never refused.
    with pytest.raises(ProblemError, match="only a function of a torch module"):
        parse_problem(DOUBLE.replace("RULE", rule), "p.yaml")


def test_a_rule_on_a_torch_function_leaves_the_judges_own_code_alone(checker: ProblemChecker) -> None:
    # torch.manual_seed and torch.flatten by name: the runner's own modules keep what they call.
    verdict = grade(checker, DOUBLE.replace("RULE", "torch.manual_seed, torch.flatten"), HONEST_DOUBLE)
    assert verdict.status == Status.ACCEPTED, said(verdict)


# -- the import's settings and the test's own code -------------------------------------------------------------------

CALLBACK = """\
id: apply-to
title: Apply
difficulty: easy
statement: Apply a function.
starter_code: |
  def apply_to(fn, x):
      pass
entry_points: [apply_to]
reference: |
  def apply_to(fn, x):
      return fn(x)
tests:
  - name: the test's own function
    visible: true
    code: |
      x = torch.tensor([1.0, 2.0])
      return {"y": apply_to(lambda t: t + torch.ones(2), x)}
"""

CALLBACK_FLOAT64 = """\
import torch

torch.set_default_dtype(torch.float64)


def apply_to(fn, x):
    return fn(x)
"""


def test_a_function_the_test_hands_the_submission_runs_under_the_judges_settings(checker: ProblemChecker) -> None:
    # The lambda is the test's code: `torch.ones(2)` in it is made under the submission's float64 today.
    verdict = grade(checker, CALLBACK, CALLBACK_FLOAT64)
    assert verdict.status == Status.ACCEPTED, said(verdict)


RECURSION = """\
id: total
title: Total
difficulty: easy
statement: The sum.
starter_code: |
  def total(x):
      pass
entry_points: [total]
reference: |
  def total(x):
      return x.sum()
tests:
  - name: after a deep call
    visible: true
    code: |
      s = total(torch.ones(20000))
      return {"s": s, "made": torch.zeros(2)}
  - name: the next test
    visible: true
    code: |
      return {"made": torch.zeros(2)}
"""

# An honest module: a recursive sum that falls back on torch's when Python's stack runs out. The RecursionError meets
# the profile function first, which CPython then takes away: the test's own `torch.zeros(2)` after the call is
# float64.
RECURSIVE_FLOAT64 = """\
import torch

torch.set_default_dtype(torch.float64)


def _sum(xs, i=0):
    return 0.0 if i == len(xs) else xs[i] + _sum(xs, i + 1)


def total(x):
    try:
        return torch.tensor(_sum(x.tolist()), dtype=x.dtype)
    except RecursionError:
        return x.sum()
"""


def test_a_recursion_error_the_submission_catches_leaves_the_test_under_the_judges_settings(
    checker: ProblemChecker,
) -> None:
    verdict = grade(checker, RECURSION, RECURSIVE_FLOAT64)
    assert verdict.tests[1].status == TestStatus.PASSED, said(verdict)  # holds: the next test starts afresh
    assert verdict.status == Status.ACCEPTED, said(verdict)  # the hole: the first test's own zeros are float64


TRACKED = """\
id: tracked
title: Tracked
difficulty: easy
statement: Generators and errors.
starter_code: |
  def halves(x):
      pass


  def check(x):
      pass
entry_points: [halves, check]
reference: |
  def halves(x):
      yield x / 2
      yield x / 4


  def check(x):
      raise ValueError("no")
tests:
  - name: after a yield, and after an error
    visible: true
    code: |
      x = torch.tensor([1.0, 2.0])
      g = halves(x)
      first = next(g)
      after_yield = torch.zeros(1)
      try:
          check(x)
      except ValueError:
          pass
      after_error = torch.zeros(1)
      return {"first": first, "rest": list(g), "y": after_yield, "e": after_error}
"""

TRACKED_FLOAT64 = """\
import torch

torch.set_default_dtype(torch.float64)


def halves(x):
    yield x / 2
    yield x / 4


def check(x):
    raise ValueError("no " + str(torch.zeros(1).dtype))
"""


def test_a_yield_and_an_error_leave_the_test_under_the_judges_settings(checker: ProblemChecker) -> None:
    verdict = grade(checker, TRACKED, TRACKED_FLOAT64)
    assert verdict.status == Status.ACCEPTED, said(verdict)


UNHOOKED = """\
id: unhooked
title: Unhooked
difficulty: easy
statement: Twice the input.
starter_code: |
  def double(x):
      pass
entry_points: [double]
reference: |
  def double(x):
      return x * 2
tests:
  - name: the call
    visible: true
    code: |
      return {"y": double(torch.tensor([1.0, 2.0])), "made": torch.zeros(1)}
  - name: the next test
    visible: true
    code: |
      return {"y": double(torch.tensor([3.0])), "made": torch.zeros(1)}
"""

# Hostile: its call takes the profile function away (and plants one of its own that keeps float64 everywhere).
UNHOOKING = """\
import sys
import torch

torch.set_default_dtype(torch.float64)


def _mine(frame, event, arg):
    torch.set_default_dtype(torch.float64)


def double(x):
    sys.setprofile(_mine)
    return x * 2
"""


def test_a_call_that_takes_the_profile_away_leaves_the_next_test_untouched(checker: ProblemChecker) -> None:
    # The entry point's wrapper puts the judge's profile function back after each call, and the test's side's
    # settings with it: the test's own zeros are float32 in both tests (its own planted function runs no more).
    verdict = grade(checker, UNHOOKED, UNHOOKING)
    assert verdict.status == Status.ACCEPTED, said(verdict)
    # ... and a module that unhooks only once (a flag) gets the next test under the judge's settings:
    once = UNHOOKING.replace(
        "def double(x):\n    sys.setprofile(_mine)",
        "_done = []\n\n\ndef double(x):\n    if not _done:\n        _done.append(1)\n        sys.setprofile(_mine)",
    )
    verdict = grade(checker, UNHOOKED, once)
    assert verdict.tests[1].status == TestStatus.PASSED, said(verdict)
