"""The check's step for a problem's custom-input test (custom_test.py): on its defaults (valid, or the
file would not have loaded), the reference returns a value, the same on two runs in two sandboxes (Run
shows the learner what the reference returns: it must not depend on the container), and every
alternative is accepted. Judged by the same judge as every submission (grading/judge.py)."""

from __future__ import annotations

import re

from grader.grading.compare import EXACT, compare_outputs
from grader.grading.execution import ModuleRun
from grader.grading.judge import Expected, judge_module
from grader.grading.selection import Selection
from grader.grading.verdict import Status, TestStatus
from grader.problems.check.locate import Locator
from grader.problems.check.report import CheckStep, StepStatus
from grader.problems.check.steps import KIND, load_message, runner_message

CODE = ("custom_test", "code")
TEST_LINE = re.compile(r'File "<test 1>", line (\d+)')


def custom_step(
    selection: Selection,
    first: ModuleRun,
    second: ModuleRun,
    alternatives: list[ModuleRun],
    locate: Locator,
    seconds: float,
) -> CheckStep:
    step = CheckStep(name="custom", status=StepStatus.OK, summary="", seconds=seconds)
    run = first.tests.get(0)
    if not first.loaded or run is None or not run.returned:
        reason = f"does not load {load_message(first)}" if not first.loaded else f"fails: {runner_message(run)}"
        step.errors.append(locate.error(CODE, f"the reference {reason} on the defaults", _line(locate, run)))
    else:
        again = second.tests.get(0)
        if not second.loaded or again is None or not again.returned:
            step.errors.append(locate.error(CODE, f"the reference's second run fails: {runner_message(again)}"))
        else:
            comparison = compare_outputs(run.value, again.value, {}, EXACT)
            if not comparison.passed:
                where = f"{comparison.details.get('path')}: {comparison.details.get('reason')}"
                step.errors.append(locate.error(CODE, f"the reference gives different outputs on two runs: {where}"))
    if step.errors:
        step.status, step.summary = StepStatus.FAILED, "the reference must answer the defaults, the same each time"
        return step
    expected = Expected([first.body(0)], [])
    names = [alternative.name for alternative in getattr(selection.problem, "alternatives", [])]
    for index, (name, alternative) in enumerate(zip(names, alternatives, strict=True)):
        verdict = judge_module(selection, expected, alternative)
        if verdict.status == Status.ACCEPTED:
            continue
        failing = next((test for test in verdict.tests if test.status != TestStatus.PASSED), None)
        why = f"{KIND[failing.status]}: {failing.message}" if failing is not None else verdict.message
        step.errors.append(
            locate.error(("alternatives", index), f"alternative {name!r} is not accepted on the custom test: {why}")
        )
    if step.errors:
        step.status, step.summary = StepStatus.FAILED, "an alternative fails the custom test on its defaults"
        return step
    count = f", {len(names)} alternatives accepted" if names else ""
    step.summary = f"the reference answers the defaults, the same in two sandboxes{count}"
    return step


def _line(locate: Locator, run: object) -> int | None:
    """The file line of the custom test's code where the reference's run raised (line 1 of what runs is
    the arguments' line: the body's line N is line N + 1)."""
    traceback = getattr(getattr(run, "header", None), "traceback", None) or ""
    found = TEST_LINE.findall(traceback)
    return locate.code_line(CODE, int(found[-1]) - 1) if found and int(found[-1]) > 1 else None
