"""A check cannot be forged through a lossy wire type (issue 24, point 5).

bfloat16 and the fp8 types used to cross the wire widened to float32, since NumPy has none of them: on the
trusted side a bfloat16 tensor was a float32 array under another name. So a `holds:` that the weights are
float32 passed with bfloat16 weights, and an `expect:` whose value is float32 was taken as the
submission's own dtype, so that a bfloat16 answer passed a float32 test with bfloat16's tolerance. Every
dtype now arrives as itself; both attacks are wrong answers, under every runtime.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.grading.verdict import Status
from grader.problems.check import ProblemChecker
from tests.integration.test_authoring_features import grade
from tests.security.conftest import security_settings

pytestmark = pytest.mark.docker

WEIGHTS = """\
id: float32-weights
title: A float32 layer
difficulty: easy
statement: Build the layer's weights, in float32, and apply the layer to x (also in float32).
starter_code: |
  def make_weights(n):
      pass


  def apply(weight, x):
      pass
entry_points: [make_weights, apply]
reference: |
  import torch


  def make_weights(n):
      return torch.randn(n, n)


  def apply(weight, x):
      return x @ weight.T
tests:
  - name: the weights are float32, whatever their values
    visible: true
    code: |
      return {"weight": make_weights(8)}
    check:
      weight: {holds: ["weight.dtype == torch.float32", "weight.shape == (8, 8)"]}
  - name: the layer's output is computed in float32 from the submission's own weights
    visible: true
    code: |
      weight = make_weights(8)
      x = torch.randn(3, 8)
      return {"y": apply(weight, x), "weight": weight.float(), "x": x}
    check:
      y: {expect: "x @ weight.T", rtol: 1.0e-5}
      weight: {holds: ["weight.shape == (8, 8)"]}
"""

CORRECT = """\
import torch


def make_weights(n):
    return torch.randn(n, n)


def apply(weight, x):
    return x @ weight.T
"""


@pytest.fixture(scope="module")
def checker(sandbox_runtime: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProblemChecker]:
    data_dir: Path = tmp_path_factory.mktemp(f"wire-{sandbox_runtime}")
    settings = security_settings(data_dir, sandbox_runtime)
    with ProblemChecker(settings.sandbox, settings.limits) as checker:
        yield checker


def test_correct_float32_weights_pass(checker: ProblemChecker) -> None:
    verdict = grade(checker, WEIGHTS, CORRECT)
    assert verdict.status == Status.ACCEPTED, [(t.name, t.message) for t in verdict.tests]


@pytest.mark.parametrize("narrow", ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_narrower_weights_do_not_pass_a_check_that_they_are_float32(checker: ProblemChecker, narrow: str) -> None:
    """Each dtype that used to be widened to float32 on the wire, as the weights of the first test (the
    layer computes in float32 all the same, so the second test passes: this used to be accepted)."""
    source = CORRECT.replace("return torch.randn(n, n)", f"return torch.randn(n, n).to(torch.{narrow})")
    source = source.replace("return x @ weight.T", "return x @ weight.float().T")
    verdict = grade(checker, WEIGHTS, source)
    assert verdict.status == Status.WRONG_ANSWER
    first = verdict.tests[0]
    assert first.status.value == "failed"
    assert "'weight.dtype == torch.float32' does not hold" in (first.message or ""), first.message


@pytest.mark.parametrize("narrow", ["bfloat16", "float8_e4m3fn"])
def test_a_narrower_answer_is_not_taken_for_the_float32_value_expect_computes(
    checker: ProblemChecker, narrow: str
) -> None:
    """The output in `narrow`, from float32 weights: `expect:` computes float32, and the answer is of
    another dtype (it used to be compared as `narrow`, with `narrow`'s wide default tolerance)."""
    source = CORRECT.replace("return x @ weight.T", f"return (x @ weight.T).to(torch.{narrow})")
    verdict = grade(checker, WEIGHTS, source)
    assert verdict.status == Status.WRONG_ANSWER
    second = verdict.tests[1]
    assert second.status.value == "failed"
    assert f"dtype {narrow} instead of float32" in (second.message or ""), second.message
