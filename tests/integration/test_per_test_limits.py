"""A test's own limits (`limits:` on a test): resolved once on the trusted side (the test's, else the
problem's, else the server's defaults, within the server's maxima), carried in the job, and honoured in the
real sandbox: each test runs in a child confined to its own memory and timed by its own clock."""

from __future__ import annotations

import pytest

from grader.config import Settings
from grader.grading.execution import build_job, run_module
from grader.grading.judge import Expected, judge_module
from grader.grading.verdict import Status, TestStatus, Verdict
from grader.problems.check import ProblemChecker
from grader.problems.registry import LoadedProblem, Registry
from sandbox.runner.messages import Limits

pytestmark = pytest.mark.docker

# Each test holds `mb` megabytes at once, then sleeps `sleep` seconds; the reference and the submission alike.
PROBLEM = """\
id: per-test-limits
title: Per-test limits
difficulty: easy
statement: Hold some memory for a while.
starter_code: |
  def hold(mb, sleep):
      pass
entry_points: [hold]
reference: |
  import time
  def hold(mb, sleep):
      block = bytearray(mb << 20)
      for i in range(0, len(block), 4096):
          block[i] = 1
      time.sleep(sleep)
      return len(block) >> 20
limits: {time_s: 1.0, memory_mb: 512}
tests:
  - name: small and quick
    code: |
      return {"mb": hold(64, 0)}
  - name: large, with room of its own
    limits: {memory_mb: 1536}
    code: |
      return {"mb": hold(900, 0)}
  - name: slow, with time of its own
    limits: {time_s: 4.0}
    code: |
      return {"mb": hold(16, 2.0)}
  - name: small again
    code: |
      return {"mb": hold(64, 0)}
"""


@pytest.fixture(scope="module")
def checker(shared_checker_one_seed: ProblemChecker) -> ProblemChecker:
    return shared_checker_one_seed  # on the session's warm sandboxes (tests/conftest.py)


def _problem(text: str = PROBLEM) -> LoadedProblem:
    registry = Registry(Limits(time_s=2, memory_mb=256, output_kb=64), max_memory_mb=4096)
    return registry.make(registry.parse(text, "per-test-limits.yaml"))


def _grade(checker: ProblemChecker, problem: LoadedProblem, source: str) -> Verdict:
    sandboxes = checker.sandboxes()
    reference = run_module(sandboxes, problem, problem.reference, checker.sandbox, rules=False)
    expected = Expected([reference.body(i) for i in range(len(problem.tests))], [])
    return judge_module(problem, expected, run_module(sandboxes, problem, source, checker.sandbox, rules=True))


def test_each_test_gets_its_own_limits_in_the_job() -> None:
    problem = _problem()
    job = build_job(problem, problem.reference, Settings().sandbox)
    assert [(t.limits.time_s, t.limits.memory_mb, t.limits.output_kb) for t in job.tests] == [
        (1.0, 512, 64),
        (1.0, 1536, 64),
        (4.0, 512, 64),
        (1.0, 512, 64),
    ]


def test_a_test_given_more_memory_and_time_passes_where_the_problems_limits_would_fail_it(
    checker: ProblemChecker,
) -> None:
    problem = _problem()
    verdict = _grade(checker, problem, problem.reference)
    assert verdict.status == Status.ACCEPTED, [(t.status, t.message) for t in verdict.tests]
    assert [t.memory_limit_mb for t in verdict.tests] == [512, 1536, 512, 512]
    # The same work under the problem's own limits: out of memory, out of time.
    tight = _problem(PROBLEM.replace("    limits: {memory_mb: 1536}\n", "").replace("    limits: {time_s: 4.0}\n", ""))
    statuses = [t.status for t in _grade(checker, tight, tight.reference).tests]
    assert statuses == [TestStatus.PASSED, TestStatus.MEMORY, TestStatus.TIMEOUT, TestStatus.SKIPPED], statuses


def test_a_submission_over_a_tests_own_limit_fails_that_test_alone(checker: ProblemChecker) -> None:
    """Memory over the large test's own 1536 MB, time over the slow test's own 4 s: each fails by itself."""
    problem = _problem()
    greedy = problem.reference.replace(
        "block = bytearray(mb << 20)", "block = bytearray((mb * 2 if mb > 500 else mb) << 20)"
    ).replace("time.sleep(sleep)", "time.sleep(sleep * 3)")
    verdict = _grade(checker, problem, greedy)
    statuses = [t.status for t in verdict.tests]
    assert statuses == [TestStatus.PASSED, TestStatus.MEMORY, TestStatus.TIMEOUT, TestStatus.SKIPPED], verdict.tests
    assert "1536 MB" in (verdict.tests[1].message or "")


def test_a_tests_limit_past_the_servers_maximum_is_refused_at_load() -> None:
    registry = Registry(Limits(time_s=2, memory_mb=256, output_kb=64), max_memory_mb=1024)
    with pytest.raises(Exception, match="1536 MB is more than this server gives a test"):
        registry.parse(PROBLEM, "per-test-limits.yaml")
