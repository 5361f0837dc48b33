"""A memory bomb is memory_limit_exceeded every time, with a message that names the limit: never a timeout
that the memory limit caused (allocations that page-fault their way to the limit on a loaded machine once
reached the time limit first), never an allocator's own words. In the real sandbox, two at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from grader.grading.execution import run_module
from grader.grading.judge import Expected, judge_module
from grader.grading.verdict import Status, Verdict
from grader.problems.check import ProblemChecker
from grader.problems.registry import Registry, parse_problem
from sandbox.runner.messages import Limits

pytestmark = pytest.mark.docker

RUNS = 20
MEMORY_MB = 1024
# Room to reach the memory limit first on any machine: a bomb filling 64 MiB tensors reached it within 2 s on a
# quiet one, not on one loaded beside it (a timeout at 600-800 MB is the time's, not the memory's). The bomb that
# sits at the edge of the memory when its time runs out keeps the short limit: that is its point.
TIME_S = 10.0
EDGE_TIME_S = 2.0

PROBLEM = """\
id: bombs
title: Bombs
difficulty: easy
statement: Return x.
starter_code: |
  def same(x):
      pass
entry_points: [same]
reference: |
  def same(x):
      return x
tests:
  - name: a tensor
    visible: true
    code: |
      return {"y": same(torch.ones(3))}
"""

EDGE = "at the edge when the time runs out"
BOMBS = {
    # 64 MiB tensors, written (so every page is touched), until the memory runs out.
    "tensors": "import torch\n\ndef same(x):\n    hoard = []\n    while True:\n"
    "        hoard.append(torch.ones(16 * 1024 * 1024))\n",
    "bytearrays": "def same(x):\n    hoard = []\n    while True:\n        hoard.append(bytearray(64 * 1024 * 1024))\n",
    # At the edge of the limit when the clock runs out (as a bomb is on a loaded machine): the memory's doing.
    EDGE: "import time\nimport torch\n\ndef same(x):\n    hoard = torch.ones(240 * 1024 * 1024)\n    time.sleep(60)\n",
    "one huge tensor": (
        "import torch\n\ndef same(x):\n    return torch.empty(64 * 1024**3, dtype=torch.uint8).fill_(1)\n"
    ),
}


@pytest.fixture(scope="module")
def checker(shared_checker: ProblemChecker) -> ProblemChecker:
    return shared_checker  # on the session's warm sandboxes (tests/conftest.py)


def grade(checker: ProblemChecker, source: str, time_s: float = TIME_S) -> Verdict:
    limits = Limits(time_s=time_s, memory_mb=MEMORY_MB, output_kb=64)
    problem = Registry(limits).make(parse_problem(PROBLEM, "p.yaml"))
    sandboxes = checker.sandboxes()
    reference = run_module(sandboxes, problem, problem.reference, checker.sandbox, rules=False)
    expected = Expected([reference.body(i) for i in range(len(problem.tests))], [])
    return judge_module(problem, expected, run_module(sandboxes, problem, source, checker.sandbox, rules=True))


def test_the_same_memory_bomb_is_memory_limit_exceeded_every_time(checker: ProblemChecker) -> None:
    with ThreadPoolExecutor(2) as pool:  # two at once: the machine loaded, as when the race was lost
        verdicts = list(pool.map(lambda _: grade(checker, BOMBS["tensors"]), range(RUNS)))
    statuses = [verdict.status for verdict in verdicts]
    assert statuses.count(Status.MEMORY_LIMIT_EXCEEDED) == RUNS, statuses
    for verdict in verdicts:
        message = verdict.tests[0].message or ""
        assert f"{MEMORY_MB} MB" in message, message
        assert "alloc_cpu" not in message and "enforce fail" not in message, message


@pytest.mark.parametrize("kind", list(BOMBS))
def test_every_kind_of_bomb_names_the_limit(checker: ProblemChecker, kind: str) -> None:
    verdict = grade(checker, BOMBS[kind], EDGE_TIME_S if kind == EDGE else TIME_S)
    assert verdict.status == Status.MEMORY_LIMIT_EXCEEDED, (verdict.status, verdict.tests[0].message)
    assert f"memory limit of {MEMORY_MB} MB" in (verdict.tests[0].message or "") or "MB of its" in (
        verdict.tests[0].message or ""
    )
