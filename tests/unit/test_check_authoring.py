"""The author mistakes `grader problems check` names (grader/problems/check/authoring.py), each with its
file:line and field, field paths and test numbers both 1-based; scripted sandboxes as in
test_problem_check.py."""

from __future__ import annotations

import subprocess
import sys

from grader.containers.values import Opaque
from grader.problems.check import StepStatus
from grader.problems.registry import parse_problem
from tests.unit.test_problem_check import SOURCE, Harness, error_line, f32, settings, step

__all__ = ["settings"]  # the fixture, shared


def run(settings, make_body, text: str, reference_outputs: list) -> tuple:
    problem = parse_problem(text, SOURCE)
    script = {
        problem.reference: lambda n: reference_outputs,
        problem.starter_code: lambda n: [{"out": None}] * len(problem.tests),
        **{p.code: (lambda n: [{"out": f32(1, 1, 1)}, {"out": f32(5, 5)}]) for p in problem.pitfalls},
    }
    return Harness(settings, script, make_body).check(text)


GOOD = [{"out": f32(2, 2, 2)}, {"out": f32(0, 0)}]


def test_a_check_key_the_test_never_returns_is_an_error_at_its_line(settings, problem_yaml, mutate, line_of, make_body):
    text = mutate(problem_yaml, "check: {out: {rtol: 1.0e-5, atol: 1.0e-6}}", "check: {outt: {rtol: 1.0e-5}}")
    report, _ = run(settings, make_body, text, GOOD)
    assert not report.ok
    [error] = step(report, "reference").errors
    assert error_line(error) == line_of(text, "outt")
    assert ": tests.1.check.outt: test 1 'first' returns no key 'outt' (it returns 'out')" in error


def test_a_test_returning_none_is_an_error(settings, problem_yaml, make_body, line_of):
    report, _ = run(settings, make_body, problem_yaml, [{"out": f32(2, 2, 2)}, None])
    [error] = step(report, "reference").errors
    assert ": tests.2.code: test 2 'second' returns None: end its code with `return {...}`" in error
    assert error_line(error) == line_of(problem_yaml, "    code: |", 2)


def test_a_type_the_judge_cannot_compare_is_named_at_the_reference_step(settings, problem_yaml, make_body):
    report, _ = run(settings, make_body, problem_yaml, [{"out": f32(2, 2, 2)}, {"out": Opaque("Size")}])
    assert step(report, "reference").status == StepStatus.FAILED
    [error] = step(report, "reference").errors
    assert (
        "tests.2.code: test 2 'second' returns torch.Size (at ['out']), which the judge cannot compare; "
        "return a tuple or a tensor" in error
    )
    assert step(report, "deterministic").status == StepStatus.SKIPPED  # not reported as non-determinism


def test_visible_tests_after_hidden_ones_are_an_error(settings, problem_yaml, mutate, line_of, make_body):
    text = mutate(problem_yaml, "    weight: 2\n", "    weight: 2\n    visible: true\n")
    text = mutate(text, "    visible: true\n    weight: 1\n", "    weight: 1\n")
    report, _ = run(settings, make_body, text, GOOD)
    [error] = step(report, "schema").errors
    assert error_line(error) == line_of(text, "visible: true")
    assert "tests.2.visible: visible test 2 'second' comes after hidden test 1" in error


def test_no_visible_test_is_a_warning(settings, problem_yaml, mutate, make_body):
    text = mutate(problem_yaml, "    visible: true\n", "")
    report, _ = run(settings, make_body, text, GOOD)
    assert report.ok, report.errors
    assert step(report, "schema").warnings == ["no test is visible: a learner sees no example"]


def test_a_reference_failing_its_own_holds_is_an_error(settings, problem_yaml, mutate, make_body):
    text = mutate(
        problem_yaml, "check: {out: {rtol: 1.0e-5, atol: 1.0e-6}}", 'check: {out: {holds: ["out.sum() > 100"]}}'
    )
    report, _ = run(settings, make_body, text, GOOD)
    [error] = step(report, "reference").errors
    assert "tests.1.check: the reference fails test 1 'first' under its own check" in error
    assert "'out.sum() > 100' does not hold" in error


def test_help_prints_one_percent_sign() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "grader.cli", "problems", "check", "--help"], capture_output=True, text=True, timeout=60
    )
    assert "1% noise" in result.stdout and "%%" not in result.stdout


def test_a_yaml_syntax_error_is_reported_at_the_offending_line() -> None:
    import pytest

    from grader.problems.registry import ProblemError

    with pytest.raises(ProblemError) as caught:
        parse_problem("id: x\ntitle Missing colon\nstatement: z\n", "f.yaml")
    assert str(caught.value).startswith("f.yaml:2: YAML syntax error: could not find expected ':'")


def test_the_noise_rule_is_relative_to_the_dtype() -> None:
    import numpy as np

    from grader.containers.values import DTYPES, Tensor
    from grader.grading.checkers import get
    from grader.problems.check.tolerances import with_relative_noise

    bf16 = Tensor("bfloat16", np.linspace(0.5, 4.0, 64).astype(DTYPES["bfloat16"]))
    noisy = with_relative_noise({"out": bf16}, seed=3)["out"]
    # 8 eps, give or take the rounding of the noisy value to bfloat16 (half an eps of it)
    assert np.allclose(np.abs(noisy.array.astype("f8") / bf16.array.astype("f8") - 1), 8 * 2.0**-7, atol=2.0**-7)
    assert get("tolerance").compare({"out": bf16}, {"out": bf16}, {}).passed
    assert not get("tolerance").compare({"out": bf16}, {"out": noisy}, {}).passed  # the default tolerance refuses it
    f32 = Tensor("float32", np.linspace(0.5, 4.0, 64, dtype="f4"))
    assert np.allclose(np.abs(with_relative_noise({"out": f32}, seed=3)["out"].array / f32.array - 1), 0.01)
