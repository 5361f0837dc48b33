"""Issue 41, point 4 (the judge's faults are the judge's), with the real engine: the pool's idle containers are
paused (`docker pause`: the engine freezes them, nothing in them runs), and a correct submission is handed
them. Before, it got `runtime_error` ("the submission crashed the sandbox while it was loaded") after 40 s: both
containers lost, the engine answering, so the module was blamed. Now a container that does not answer while
the engine holds it paused is the judge's loss (SandboxLost.judges), and the verdict is `internal_error`."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import docker
import pytest

from grader.containers.container import LABEL
from grader.containers.pool import SandboxPool
from grader.grading.execution import run_module
from grader.grading.expected import Expected
from grader.grading.judge import judge_module
from grader.grading.verdict import Status
from grader.problems.registry import Registry, parse_problem
from sandbox.runner.messages import Limits
from tests.conftest import make_settings

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

PROBLEM = """\
id: double
title: Double
difficulty: easy
statement: Return 2 x.
starter_code: |
  def double(x):
      pass
entry_points: [double]
reference: |
  def double(x):
      return 2 * x
tests:
  - name: one tensor
    visible: true
    code: |
      return double(torch.ones(3))
"""
CORRECT = "def double(x):\n    return x + x\n"


def test_a_submission_handed_paused_containers_is_not_blamed() -> None:
    settings = make_settings(Path(tempfile.mkdtemp()), load_time_s=3)
    pool = SandboxPool(settings.sandbox, settings.limits, owner="paused-sandboxes", size=2, keep_image=False)
    pool.start()
    engine = docker.from_env()
    try:
        assert pool.image_id is not None, pool.last_error
        problem = Registry(Limits(time_s=2, memory_mb=512, output_kb=64)).make(parse_problem(PROBLEM, "p"))
        reference = run_module(pool, problem, problem.reference, settings.sandbox, rules=False)
        expected = Expected([reference.body(i) for i in range(len(problem.tests))], [])
        assert judge_module(
            problem, expected, run_module(pool, problem, CORRECT, settings.sandbox, rules=True)
        ).status == (Status.ACCEPTED)
        deadline = time.monotonic() + 60
        while pool.status()["idle"] < 2 and time.monotonic() < deadline:  # both back, settled and idle
            time.sleep(0.2)
        time.sleep(1.0)
        paused = engine.containers.list(filters={"label": f"{LABEL}=paused-sandboxes", "status": "running"})
        assert len(paused) == 2, paused
        for container in paused:
            container.pause()
        run = run_module(pool, problem, CORRECT, settings.sandbox, rules=True)
        verdict = judge_module(problem, expected, run, engine_ok=pool.engine_ok)
        assert verdict.status == Status.INTERNAL_ERROR, (verdict.status, verdict.message)
        assert "paused" in (verdict.message or ""), verdict.message
        assert len(run.lost) == 2 and all(lost.judges for lost in run.lost), run.lost
    finally:
        for container in engine.containers.list(all=True, filters={"label": f"{LABEL}=paused-sandboxes"}):
            try:
                container.unpause()
            except docker.errors.APIError:
                pass
        pool.close()
        engine.close()
