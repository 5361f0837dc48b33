"""A looping solution costs one time limit, not one per test: once a test runs out of time, the tests
after it are not run (`skipped`, counted as failed) unless the problem asks for every test to run
(`after_timeout: run`). In the real sandbox."""

from __future__ import annotations

import time

import pytest

from grader.grading.execution import run_module
from grader.grading.judge import Expected, judge_module
from grader.grading.verdict import Status, TestStatus, Verdict
from grader.problems.check import ProblemChecker
from grader.problems.registry import Registry
from sandbox.runner.messages import Limits

pytestmark = pytest.mark.docker

TESTS = 12  # so many that running the tests after a timeout costs 11 time limits: plain on any machine
TIME_S = 1.0


def problem_text(after_timeout: str | None) -> str:
    tests = "".join(
        f"  - name: case {n}\n    visible: {'true' if n < 2 else 'false'}\n"
        f"    code: |\n      return {{'y': twice({n})}}\n"
        for n in range(TESTS)
    )
    setting = f"after_timeout: {after_timeout}\n" if after_timeout else ""
    return f"""\
id: loops
title: Loops
difficulty: easy
statement: Twice a number.
starter_code: |
  def twice(n):
      pass
entry_points: [twice]
reference: |
  def twice(n):
      return 2 * n
limits: {{time_s: {TIME_S}}}
{setting}tests:
{tests}"""


# Right on the first test, then loops forever from the second on.
LOOPER = "def twice(n):\n    while n >= 1:\n        pass\n    return 2 * n\n"


@pytest.fixture(scope="module")
def checker(shared_checker_one_seed: ProblemChecker) -> ProblemChecker:
    return shared_checker_one_seed  # on the session's warm sandboxes (tests/conftest.py)


def grade(checker: ProblemChecker, text: str, source: str) -> tuple[Verdict, float]:
    registry = Registry(Limits(time_s=2, memory_mb=1024, output_kb=64))
    problem = registry.make(registry.parse(text, "loops.yaml"))
    sandboxes = checker.sandboxes()
    reference = run_module(sandboxes, problem, problem.reference, checker.sandbox, rules=False)
    expected = Expected([reference.body(i) for i in range(len(problem.tests))], [])
    started = time.monotonic()  # the submission's own run only
    run = run_module(sandboxes, problem, source, checker.sandbox, rules=True)
    return judge_module(problem, expected, run), time.monotonic() - started


@pytest.mark.parametrize("setting", [None, "skip"], ids=["by default", "skip"])
def test_the_tests_after_a_timeout_are_skipped(checker: ProblemChecker, setting: str | None) -> None:
    verdict, elapsed = grade(checker, problem_text(setting), LOOPER)
    statuses = [test.status for test in verdict.tests]
    assert statuses == [TestStatus.PASSED, TestStatus.TIMEOUT, *[TestStatus.SKIPPED] * (TESTS - 2)], statuses
    assert verdict.status == Status.TIME_LIMIT_EXCEEDED
    assert verdict.score == pytest.approx(1 / TESTS, abs=1e-6), "a skipped test counts as failed"
    assert verdict.tests[2].message == "not run: test 2 ran out of time, and the tests after a timeout are skipped"
    # One time limit and a fresh child's start, on any machine far from the 11 time limits of
    # running them all (the test below)
    assert elapsed < (TESTS - 1) * TIME_S - 1, f"one time limit, not {TESTS - 1}: {elapsed:.1f}s"


def test_a_problem_may_run_every_test_after_a_timeout(checker: ProblemChecker) -> None:
    verdict, elapsed = grade(checker, problem_text("run"), LOOPER)
    statuses = [test.status for test in verdict.tests]
    assert statuses == [TestStatus.PASSED, *[TestStatus.TIMEOUT] * (TESTS - 1)], statuses
    assert elapsed >= (TESTS - 1) * TIME_S


def test_a_correct_solution_after_nothing_timed_out_runs_every_test(checker: ProblemChecker) -> None:
    verdict, _ = grade(checker, problem_text(None), "def twice(n):\n    return n + n\n")
    assert verdict.status == Status.ACCEPTED and len(verdict.tests) == TESTS
