"""The problem check (`grader problems check`, and every upload): a problem file that checks itself before
anyone is graded against it. run.py orchestrates the steps (its docstring lists them); steps.py,
tolerances.py, custom.py and authoring.py judge runs already made; report.py is what it answers; locate.py
points each finding at its line of the file. Not to be confused with grading/checkers/, the comparison rules.
"""

from grader.problems.check.report import CheckReport, CheckStep, StepStatus
from grader.problems.check.run import ProblemChecker, SandboxUnavailable

__all__ = ["CheckReport", "CheckStep", "ProblemChecker", "SandboxUnavailable", "StepStatus"]
