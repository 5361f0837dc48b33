"""A module graded as the Grader grades it, in a problem checker's sandboxes: the reference's outputs first,
then the module run and judged against them (for tests of problems written in the test itself)."""

from __future__ import annotations

from grader.grading.execution import run_module
from grader.grading.judge import Expected, judge_module
from grader.grading.model import ProblemSpec
from grader.grading.verdict import Verdict
from grader.problems.check import ProblemChecker


def graded(checker: ProblemChecker, problem: ProblemSpec, source: str) -> Verdict:
    sandboxes = checker.sandboxes()
    reference = run_module(sandboxes, problem, problem.reference, checker.sandbox, rules=False)  # the problem's own
    expected = Expected([reference.body(i) for i in range(len(problem.tests))], [])
    return judge_module(problem, expected, run_module(sandboxes, problem, source, checker.sandbox, rules=True))
