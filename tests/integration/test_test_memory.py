"""Each test reports its own peak memory, measured by the runner (the child's high-water mark reset before the
test), with its limit: a test that allocates 300 MB shows 300 MB more than the test before it, and the test
after it (the memory freed) less again; per test, not the process's peak since it started. A hidden test's
memory is the admin's to see, like its time. In the real sandbox: runc always, gVisor (runsc) when the engine
has it, where there is no high-water mark and the largest resident size seen during the test stands for it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from grader.config import Settings
from grader.grading.verdict import Status, Verdict
from grader.problems.check import ProblemChecker
from grader.problems.registry import Registry, parse_problem
from grader.submissions.public import public_submission
from sandbox.runner.messages import Limits
from tests.integration.judging import graded

pytestmark = pytest.mark.docker


def registered_runtimes() -> set[str]:
    from grader.containers.container import docker_client

    return set((docker_client().info().get("Runtimes") or {}).keys())


MEMORY_MB = 1024
ALLOCATED_MB = 320  # in test 2 only, freed before it returns

PROBLEM = """\
id: memory-per-test
title: Memory per test
difficulty: easy
statement: Return the sum of `n` ones.
starter_code: |
  def ones(n):
      pass
entry_points: [ones]
reference: |
  def ones(n):
      return float(n)
tests:
  - name: small
    visible: true
    code: |
      return {"y": ones(1000)}
  - name: large
    visible: true
    code: |
      return {"y": ones(ALLOCATED * 1024 * 1024 // 4)}
  - name: small again
    visible: true
    code: |
      return {"y": ones(1000)}
  - name: hidden and large
    code: |
      return {"y": ones(ALLOCATED * 1024 * 1024 // 4)}
""".replace("ALLOCATED", str(ALLOCATED_MB))

# Every element written (so every page is resident), held for a moment (gVisor's resident size is read every
# 50 ms), then freed: torch returns an allocation this large to the kernel at once.
SOURCE = """\
import time
import torch

def ones(n):
    x = torch.ones(n)
    total = float(x.sum())
    time.sleep(0.3)
    del x
    return total
"""


@pytest.fixture(scope="module", params=["runc", "runsc"])
def checker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProblemChecker]:
    runtime = str(request.param)
    if runtime != "runc" and runtime not in registered_runtimes():
        pytest.skip(f"the {runtime} runtime is not registered with the Docker engine")
    load_time_s = 30.0 if runtime != "runc" else 10.0  # gVisor reads the image's files slowly
    settings = Settings(data_dir=tmp_path_factory.mktemp("data"), sandbox_runtime=runtime, load_time_s=load_time_s)
    with ProblemChecker(settings.sandbox, settings.limits) as checker:
        yield checker


@pytest.fixture(scope="module")
def verdict(checker: ProblemChecker) -> Verdict:
    limits = Limits(time_s=10, memory_mb=MEMORY_MB, output_kb=64)
    problem = Registry(limits).make(parse_problem(PROBLEM, "p.yaml"))
    return graded(checker, problem, SOURCE)


def test_each_test_reports_its_own_peak_memory_and_its_limit(verdict: Verdict) -> None:
    assert verdict.status == Status.ACCEPTED, verdict
    small, large, after, hidden = verdict.tests
    memory = [test.memory_mb for test in verdict.tests]
    assert all(type(mb) is int for mb in memory), memory
    assert all(test.memory_limit_mb == MEMORY_MB for test in verdict.tests)
    assert large.memory_mb >= small.memory_mb + 300, memory  # type: ignore[operator]
    # Freed: the test after it is measured from what the process holds then, not from the process's peak.
    assert after.memory_mb < large.memory_mb - 200, memory  # type: ignore[operator]
    assert hidden.memory_mb >= after.memory_mb + 300, memory  # type: ignore[operator]
    assert all(mb < MEMORY_MB + 512 for mb in memory), memory  # type: ignore[operator]


def _row(problem_version: str) -> SimpleNamespace:
    now = datetime.now(UTC)
    return SimpleNamespace(
        id="m" * 32,
        problem_id="memory-per-test",
        problem_version=problem_version,
        status=Status.ACCEPTED.value,
        score=1.0,
        message=None,
        hint=None,
        line=None,
        traceback=None,
        created_at=now,
        started_at=now,
        finished_at=now,
        seed=1,
        callback_url=None,
        webhook_status=None,
        webhook_attempts=0,
        webhook_error=None,
    )


def test_a_hidden_tests_memory_is_shown_to_the_admin_only(verdict: Verdict) -> None:
    problem = Registry(Limits(time_s=10, memory_mb=MEMORY_MB, output_kb=64)).make(parse_problem(PROBLEM, "p.yaml"))
    for admin in (False, True):
        public = public_submission(_row(problem.version), verdict.tests, problem, admin=admin)
        visible, hidden = public.tests[1], public.tests[3]
        assert (visible.memory_mb, visible.memory_limit_mb) == (verdict.tests[1].memory_mb, MEMORY_MB)
        shown = public.model_dump(mode="json")["tests"][3]
        if admin:
            assert (hidden.memory_mb, hidden.memory_limit_mb) == (verdict.tests[3].memory_mb, MEMORY_MB)
        else:
            assert hidden.memory_mb is None and hidden.memory_limit_mb is None
            assert shown["memory_mb"] is None and shown["time_ms"] is None
