"""A benchmark call's value is written straight from its arrays into the module's shared area (sandbox/runner/
values.py `encode_parts`, shared.py `put_value`: one copy), in a real sandbox, through the speed grader as the
service runs it. A value of many arrays in every layout a learner's code returns (transposed, expanded, empty,
bool, half, a big-endian numpy array, more arrays than one writev takes) arrives whole: the same module as the
reference is accepted, every timed value it kept checked; the same module wrong in one array of 1,100, at the
timed calls only, is refused for it."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.containers.pool import SandboxPool
from grader.grading.expected import ExpectedCache
from grader.grading.judge import LOCAL
from grader.grading.speed import SpeedGrader
from grader.grading.verdict import Status, Verdict
from grader.problems.registry import Registry, parse_problem
from sandbox.runner.messages import Limits
from tests.conftest import make_settings

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

MANY = """import numpy as np
import torch


def many(x):
    return {
        "t": x.t(),
        "b": x > 0,
        "h": x.half(),
        "e": x[:1].expand(64, -1),
        "z": x[:0],
        "n": x.numpy().astype(">f4"),
        "s": float(x.sum()),
        "rows": [x[i] for i in range(x.shape[0])],
    }
"""
# Right on the tests (other shapes), then wrong in one row of 1,100 at every timed call.
ONE_ROW_WRONG = MANY.replace(
    '        "rows": [x[i] for i in range(x.shape[0])],',
    '        "rows": [x[i] + (1.0 if x.shape[0] == 1100 and i == 777 else 0.0) for i in range(x.shape[0])],',
)


def _problem_text() -> str:
    reference = "".join(f"  {line}\n" if line else "\n" for line in MANY.splitlines())
    baseline = "".join(f"        {line}\n" if line else "\n" for line in MANY.splitlines())
    return f"""\
id: many-arrays
title: Many arrays
difficulty: easy
statement: Return x in many layouts.
starter_code: |
  def many(x):
      pass
entry_points: [many]
reference: |
{reference}tests:
  - name: many layouts
    visible: true
    code: |
      return many(torch.randn(40, 8))
speed:
  call: many
  inputs: |
    return [torch.randn(size["n"], 8)]
  sizes:
    - {{name: 1100 rows, n: 1100}}
  baseline: same
  baselines:
    - name: same
      code: |
{baseline}  warmup: 1
  repeats: 5
  threshold: 0.01
"""


@pytest.fixture(scope="module")
def grader() -> Iterator[SpeedGrader]:
    settings = make_settings(Path(tempfile.mkdtemp()), load_time_s=30)
    pool = SandboxPool(settings.sandbox, settings.limits, owner="speed-values", size=1, keep_image=False)
    pool.start()
    try:
        assert pool.image_id is not None, pool.last_error
        expected = ExpectedCache(settings.sandbox, pool, load=lambda key: None, save=lambda key, data: None)
        yield SpeedGrader(settings.sandbox, pool, expected, LOCAL)
    finally:
        pool.close()


def _grade(grader: SpeedGrader, source: str) -> Verdict:
    registry = Registry(Limits(time_s=4, memory_mb=1024, output_kb=64))
    problem = registry.make(parse_problem(_problem_text(), "many-arrays"))
    return grader.grade(problem, source, 5, Verdict(status=Status.ACCEPTED, score=1.0))


def test_a_value_of_many_arrays_in_every_layout_arrives_whole(grader: SpeedGrader) -> None:
    verdict = _grade(grader, MANY)
    assert verdict.status == Status.ACCEPTED, (verdict.status, verdict.message)
    assert verdict.speed is not None and verdict.speed.speedup is not None
    assert verdict.speed.sizes[0].repeats == 5, verdict.speed.sizes[0]


def test_one_wrong_array_of_many_in_a_timed_value_is_refused(grader: SpeedGrader) -> None:
    verdict = _grade(grader, ONE_ROW_WRONG)
    assert verdict.status == Status.WRONG_ANSWER, (verdict.status, verdict.message)
    assert "rows" in (verdict.message or ""), verdict.message


def test_a_module_whose_failure_is_named_like_the_judges_is_still_blamed(grader: SpeedGrader) -> None:
    """The runner's own word says the problem's inputs failed (LoadHeader.who), never an error's type name: a
    module that raises an exception named as the judge's failure is its own failure, not an internal error."""
    source = MANY + '\n\nclass BenchInputs(Exception):\n    pass\n\n\nraise BenchInputs("the judge did it")\n'
    verdict = _grade(grader, source)
    assert verdict.status == Status.RUNTIME_ERROR, (verdict.status, verdict.message)
