"""The steps of a problem check that judge modules: each a judgment on runs already made, through the
same judge as every submission (grader/grading/judge.py). No sandbox here."""

from __future__ import annotations

import re

from grader import vocabulary
from grader.containers.container import LOADING
from grader.containers.protocol import Outcome, TestHeader
from grader.grading.compare import EXACT, compare_outputs
from grader.grading.execution import ModuleRun, TestRun
from grader.grading.hints import matching_pitfall, why_no_hint
from grader.grading.judge import Expected, compare
from grader.grading.model import ProblemSpec
from grader.grading.verdict import Status, TestStatus, Verdict
from grader.problems.check.locate import Locator
from grader.problems.check.report import CheckStep, StepStatus, numbers

SLOW_FRACTION = 0.5  # a reference test using more of its time limit than this is flagged
LARGE_OUTPUT = 1024 * 1024
TEST_FRAME = re.compile(r'File "<test (\d+)>", line (\d+)')
KIND = {status: words.short for status, words in vocabulary.TEST.items()}  # the check's word for each


def runner_message(run: TestRun | None) -> str:
    if run is None:
        return "no result"
    header = run.header
    if run.malformed is not None:
        return f"the sandbox returned a malformed result: {run.malformed}"
    kind = f"{header.error_type}: " if header.error_type and header.status == Outcome.ERROR else ""
    return f"{kind}{header.message or header.status.value}".strip()


def load_message(run: ModuleRun) -> str:
    """'(status): message', as the check's errors quote a module that does not load."""
    if run.load is None:
        return "(crashed): killed the sandbox while loading"
    kind = f"{run.load.error_type}: " if run.load.error_type else ""
    return f"({run.load.status.value}): {kind}{run.load.message or ''}".strip()


def _blame(locate: Locator, index: int, header: TestHeader | None) -> tuple[tuple[str | int, ...], int | None]:
    """Where a failing reference test points: the reference's own line if the failure is in it, else the
    line of the test's code that raised, else the test."""
    if header is not None and header.line:
        return ("reference",), locate.code_line(("reference",), header.line)
    frames = TEST_FRAME.findall(header.traceback or "") if header is not None else []
    if frames:
        return ("tests", index, "code"), locate.code_line(("tests", index, "code"), int(frames[-1][1]))
    return ("tests", index), None


def settings_warnings(problem: ProblemSpec, run: ModuleRun) -> list[str]:
    """The reference's import or a test that leaves torch's process-wide settings changed (the default dtype,
    grad mode, ...): the judge puts them back before each test, so no verdict depends on it, but a learner
    who runs the tests one after another, or the reference's code, would see them carried over."""
    warnings = []
    changed = run.load.settings_changed if run.load is not None else None
    if changed:
        warnings.append(
            f"the reference changes torch's {', '.join(changed)} when it is imported: the judge puts "
            f"{'it' if len(changed) == 1 else 'them'} back before every test, so the tests never see "
            f"{'it' if len(changed) == 1 else 'them'}; change settings inside a function, and set them back"
        )
    for index, test in enumerate(problem.tests):
        test_run = run.tests.get(index)
        changed = test_run.header.settings_changed if test_run is not None else None
        if changed:
            warnings.append(
                f"test {index + 1} {test.name!r} leaves torch's {', '.join(changed)} changed (its code, or the "
                "reference it calls): the judge puts it back before the next test, but the test depends on "
                "an order the tests are not run in elsewhere; set it back in the test (or use a context "
                "manager, torch.no_grad())"
            )
    return warnings


def reference_step(problem: ProblemSpec, run: ModuleRun, locate: Locator, seconds: float) -> CheckStep:
    step = CheckStep(name="reference", status=StepStatus.OK, summary="", seconds=seconds)
    tests = problem.tests
    if run.crashed and run.crashed_at == LOADING or (run.load is not None and run.load.status != Outcome.OK):
        line = locate.code_line(("reference",), run.load.line if run.load is not None else None)
        step.errors.append(locate.error(("reference",), f"the reference does not load {load_message(run)}", line))
    else:
        for index, test in enumerate(tests):
            test_run = run.tests.get(index)
            if run.crashed and index == run.crashed_at:
                message = "killed the sandbox"
            elif test_run is not None and test_run.returned or run.crashed:
                continue
            else:
                message = runner_message(test_run)
                if test_run is not None and test_run.header.status == Outcome.TIMEOUT:
                    message += f" (limit {problem.test_limits[index].time_s:g} s)"
            loc, line = _blame(locate, index, test_run.header if test_run is not None else None)
            step.errors.append(
                locate.error(loc, f"the reference fails test {index + 1} {test.name!r}: {message}", line)
            )
    if step.errors:
        step.status = StepStatus.FAILED
        step.summary = "not accepted"
        return step
    times = [(run.tests[i].header.time_ms, i) for i in range(len(tests))]
    sizes = [(len(run.tests[i].body), i) for i in range(len(tests))]
    slowest_ms, slowest = max(times)
    largest, biggest = max(sizes)
    step.summary = (
        f"accepted: {len(tests)}/{len(tests)} tests pass; slowest test {slowest + 1} {slowest_ms:.0f} ms, "
        f"largest output test {biggest + 1} {largest / 1024:.1f} KiB"
    )
    step.warnings += settings_warnings(problem, run)
    for time_ms, index in times:
        limit_s = problem.test_limits[index].time_s
        if time_ms > SLOW_FRACTION * limit_s * 1000:
            step.warnings.append(
                f"test {index + 1} {tests[index].name!r} takes {time_ms:.0f} ms of its "
                f"{limit_s:g} s limit with the reference"
            )
    for size, index in sizes:
        if size > LARGE_OUTPUT:
            step.warnings.append(f"test {index + 1} {tests[index].name!r} returns {size / 1024:.0f} KiB")
    return step


def determinism_step(
    problem: ProblemSpec, first: ModuleRun, second: ModuleRun, locate: Locator, seconds: float
) -> CheckStep:
    step = CheckStep(name="deterministic", status=StepStatus.OK, summary="", seconds=seconds)
    differing = []
    for index, test in enumerate(problem.tests):
        test_run = second.tests.get(index)
        if not second.loaded:
            reason = f"the second run does not load {load_message(second)}"
        elif test_run is None or not test_run.returned:
            reason = f"the second run fails: {runner_message(test_run)}"
        else:
            comparison = compare_outputs(first.value(index), test_run.value, {}, EXACT)
            if comparison.passed:
                continue
            reason = f"{comparison.details.get('path')}: {comparison.details.get('reason')}"
        differing.append(index)
        if len(differing) <= 5:
            step.errors.append(
                locate.error(
                    ("reference",),
                    f"the reference gives different outputs on two runs: test {index + 1} {test.name!r}: {reason}",
                )
            )
        if not second.loaded:
            break
    if differing:
        step.status = StepStatus.FAILED
        step.summary = f"the reference differs between two runs on tests {numbers(differing)}"
        if len(differing) > 5:
            step.errors.append(locate.error(("reference",), f"... and {len(differing) - 5} more tests differ"))
    else:
        step.summary = "identical outputs on two runs, in two sandboxes"
    return step


def starter_step(run: ModuleRun, verdict: Verdict, locate: Locator, seconds: float) -> CheckStep:
    step = CheckStep(name="starter", status=StepStatus.OK, summary="", seconds=seconds)
    if not run.loaded:
        line = locate.code_line(("starter_code",), run.load.line if run.load is not None else None)
        step.errors.append(
            locate.error(
                ("starter_code",),
                f"the starter code does not load ({verdict.status.value}: {verdict.message}); it must define "
                "every entry point so that a student's first submission fails tests instead",
                line,
            )
        )
    elif verdict.status == Status.ACCEPTED:
        step.errors.append(locate.error(("starter_code",), "the starter code is accepted; it must fail a test"))
    if step.errors:
        step.status = StepStatus.FAILED
        step.summary = "the starter code must load and fail"
    else:
        failing = sum(1 for test in verdict.tests if test.status != TestStatus.PASSED)
        step.summary = f"not accepted: {verdict.status.value}, {failing} tests fail"
    return step


def _visible_only(step: CheckStep, problem: ProblemSpec, name: str, failing: list) -> None:
    if all(problem.tests[test.index].visible for test in failing):
        step.warnings.append(
            f"pitfall {name!r} fails visible tests only ({numbers([t.index for t in failing])}): no hidden test "
            "catches it on its own, so a solution fitted to what the learner sees can make it"
        )


def pitfalls_step(
    problem: ProblemSpec,
    expected: Expected,
    runs: list[ModuleRun],
    verdicts: list[Verdict],
    locate: Locator,
    seconds: float,
) -> CheckStep:
    step, pitfalls = CheckStep(name="pitfalls", status=StepStatus.OK, summary="", seconds=seconds), problem.pitfalls
    if not pitfalls:
        step.status = StepStatus.SKIPPED
        step.summary = "the problem lists no pitfalls"
        return step
    count = len(problem.tests)
    for index, (pitfall, run, verdict) in enumerate(zip(pitfalls, runs, verdicts, strict=True)):
        loc: tuple[str | int, ...] = ("pitfalls", index)
        if not run.loaded:
            line = locate.code_line((*loc, "code"), _own_line(pitfall, run.load.line if run.load is not None else None))
            step.errors.append(
                locate.error(
                    (*loc, "code"),
                    f"pitfall {pitfall.name!r} does not load ({verdict.status.value}: {verdict.message}); "
                    "its hint could never be shown",
                    line,
                )
            )
            continue
        failing = [test for test in verdict.tests if test.status != TestStatus.PASSED]
        if pitfall.slow:  # correct, and refused for its speed (the speed step times it)
            _slow_pitfall(step, pitfall.name, failing, count, loc, locate)
            continue
        if not failing:
            step.errors.append(locate.error(loc, f"pitfall {pitfall.name!r} passes every test"))
            continue
        first = failing[0]
        step.details.append(
            f"{pitfall.name}: fails {len(failing)} of {count} tests ({numbers([t.index for t in failing])}); "
            f"first: test {first.index + 1} {first.name!r}, {KIND[first.status]}"
        )
        _visible_only(step, problem, pitfall.name, failing)
        if first.status != TestStatus.FAILED:
            step.warnings.append(
                f"pitfall {pitfall.name!r} first fails test {first.index + 1} with {KIND[first.status]} "
                f"({first.message}); a test it answers wrongly first gives a clearer report"
            )
        rule = lambda i, a, b: compare(problem, i, a, b)  # noqa: E731
        shown = matching_pitfall(problem, expected.reference, expected.pitfalls, run, verdict.tests, rule)
        if verdict.status != Status.WRONG_ANSWER:
            step.warnings.append(
                f"a submission that makes pitfall {pitfall.name!r} gets no hint: its verdict is "
                f"{verdict.status.value}, and hints come with wrong answers only (it must answer every test, "
                "wrongly on some, to get its hint)"
            )
        elif shown is None:
            reason = why_no_hint(problem, expected.reference, expected.pitfalls, run, verdict.tests, rule, index)
            step.warnings.append(f"a submission that makes pitfall {pitfall.name!r} gets no hint: {reason}")
        elif shown != index:
            step.warnings.append(
                f"a submission that makes pitfall {pitfall.name!r} gets the hint of {pitfalls[shown].name!r} instead"
            )
    slow, passed = sum(1 for pitfall in pitfalls if pitfall.slow), len(pitfalls) - len(step.errors)
    step.summary = f"{passed}/{len(pitfalls)} fail at least one test" + (
        f" (or, {slow} slow, pass all)" if slow else ""
    )
    if step.errors:
        step.status = StepStatus.FAILED
    return step


def _slow_pitfall(
    step: CheckStep, name: str, failing: list, count: int, loc: tuple[str | int, ...], locate: Locator
) -> None:
    """A slow pitfall must be correct: it passes every test (the speed step then requires it refused as slow)."""
    if not failing:
        step.details.append(f"{name}: correct on all {count} tests; timed in the speed step")
        return
    first = failing[0]
    message = (
        f"slow pitfall {name!r} must be correct, but fails test {first.index + 1} {first.name!r} ({KIND[first.status]})"
    )
    step.errors.append(locate.error(loc, message))


def _own_line(pitfall: object, line: int | None) -> int | None:
    """A line of the module run for a pitfall as a line of the pitfall's own code (None: in the reference)."""
    offset = getattr(pitfall, "line_offset", 0)
    if line is None or line <= offset:
        return None
    return line - offset


def alternatives_step(problem: ProblemSpec, verdicts: list[Verdict], locate: Locator, seconds: float) -> CheckStep:
    """Every alternative (another correct solution) must be accepted: a test that refuses one checks more
    than the statement asks, or how a solution is written rather than what it does."""
    step = CheckStep(name="alternatives", status=StepStatus.OK, summary="", seconds=seconds)
    alternatives = getattr(problem, "alternatives", [])
    if not alternatives:
        step.status = StepStatus.SKIPPED
        step.summary = "the problem lists no alternatives"
        return step
    for index, (alternative, verdict) in enumerate(zip(alternatives, verdicts, strict=True)):
        if verdict.status == Status.ACCEPTED:
            continue
        failing = next((test for test in verdict.tests if test.status != TestStatus.PASSED), None)
        where = (
            f"fails test {failing.index + 1} {failing.name!r}: {KIND[failing.status]}: {failing.message}"
            if failing is not None
            else f"{verdict.status.value}: {verdict.message}"
        )
        step.errors.append(
            locate.error(("alternatives", index), f"alternative {alternative.name!r} is not accepted: {where}")
        )
    step.summary = f"{len(alternatives) - len(step.errors)}/{len(alternatives)} accepted"
    if step.errors:
        step.status = StepStatus.FAILED
    return step
