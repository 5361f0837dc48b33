"""The Grader: one submission, from source to verdict, through a warm sandbox.

Total: whatever the sandbox sends and whatever fails on this side while it is handled, the result is
a verdict (bounded: bounds.py) and the container goes back to the pool or is replaced (execution.py).
Blame goes where it belongs: a submission whose sandbox is lost twice, at any tests, crashed it
itself (runtime_error); internal_error is for the judge's own failures (no container can be had, the
engine does not answer, the problem's reference fails).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from grader import phases
from grader.config_grading import SandboxSettings
from grader.containers.losses import SandboxLost
from grader.grading.bounds import bound_verdict
from grader.grading.execution import NoSandbox, TestRun, run_module
from grader.grading.expected import ExpectedCache, ProblemBroken
from grader.grading.isolated import JudgeUnavailable
from grader.grading.judge import LOCAL, Judge, judge_module
from grader.grading.model import ProblemSpec, Sandboxes
from grader.grading.speed import SpeedGrader
from grader.grading.verdict import Status, TestResult, Verdict

log = logging.getLogger(__name__)


class Grader:
    def __init__(
        self, sandbox: SandboxSettings, sandboxes: Sandboxes, expected: ExpectedCache, judge: Judge = LOCAL
    ) -> None:
        self.sandbox = sandbox  # what a job may take to load and send back
        self.sandboxes = sandboxes
        self.expected = expected
        self.judge = judge  # where returned values are judged: in bounded processes (grading/isolated.py)
        self.speed = SpeedGrader(sandbox, sandboxes, expected, judge)  # a speed-graded problem's timing

    def grade_submission(
        self,
        problem: ProblemSpec,
        source: str,
        on_test: Callable[[TestResult], None] | None = None,
        seed: int | None = None,
    ) -> Verdict:
        """Grades one submission under its seed (grading/seeds.py); on_test hears each test's result as it
        lands. Never raises."""
        try:
            verdict = self._grade(problem, source, on_test, seed)
        except JudgeUnavailable as exc:
            log.error("grading stopped: %s", exc)
            verdict = Verdict(status=Status.INTERNAL_ERROR, message=f"the judge failed: {exc}")
        except Exception as exc:  # the judge's own bug: reported, never blamed on the submission
            log.exception("grading crashed")
            verdict = Verdict(status=Status.INTERNAL_ERROR, message=f"the judge failed: {type(exc).__name__}")
        return bound_verdict(verdict)

    def _grade(
        self, problem: ProblemSpec, source: str, on_test: Callable[[TestResult], None] | None, seed: int | None
    ) -> Verdict:
        try:
            with phases.timed("expected"):
                expected = self.expected.get(problem, self.sandboxes.image_id or "unknown", seed)
        except ProblemBroken as exc:
            return Verdict(status=Status.INTERNAL_ERROR, message=str(exc))
        except (SandboxLost, NoSandbox) as exc:
            return Verdict(
                status=Status.INTERNAL_ERROR, message=f"the judge could not run the problem's reference: {exc}"
            )
        results: dict[int, TestResult] = {}
        current = [0]  # the container whose results these are: a second container starts the tests again

        def landed(container_no: int, runs: list[tuple[int, TestRun]]) -> None:
            if container_no != current[0]:
                current[0] = container_no
                results.clear()
            with phases.timed("compare"):
                judged = self.judge.tests(problem, expected, runs)
            for result in judged:
                results[result.index] = result
                if on_test is not None:
                    try:
                        on_test(result)
                    except Exception:  # progress is a courtesy to readers: its failure must not stop grading
                        log.exception("publishing a test's progress failed")

        try:
            run = run_module(self.sandboxes, problem, source, self.sandbox, landed, seed=seed, rules=True)
        except NoSandbox as exc:
            return Verdict(status=Status.INTERNAL_ERROR, message=f"the judge has no sandbox: {exc}")
        verdict = judge_module(problem, expected, run, results, engine_ok=self.sandboxes.engine_ok, judge=self.judge)
        if problem.speed is not None and verdict.status == Status.ACCEPTED:
            verdict = self.speed.grade(problem, source, seed, verdict)  # correct: now, how fast
        return verdict
