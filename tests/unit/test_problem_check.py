"""grader/problems/check/run.py without Docker: the checker's judgement, driven by scripted sandbox results.

The sandbox is the one edge faked here: a scripted container answers each job with the frames a
real runner would send for that module (values built byte by byte, as in tests/unit/conftest.py).
The same checks run against real sandboxes in tests/integration/test_problem_authoring.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from grader.config import Settings
from grader.containers.container import JobOutcome
from grader.containers.losses import SandboxLost
from grader.containers.protocol import LoadHeader
from grader.containers.protocol import TestHeader as RunnerTestHeader
from grader.containers.values import Opaque, Tensor
from grader.problems.check import CheckReport, CheckStep, ProblemChecker, SandboxUnavailable, StepStatus
from grader.problems.check.impostors import identity_source
from grader.problems.check.oracle import oracle_source
from grader.problems.check.report import numbers
from grader.problems.check.tolerances import has_floats, with_relative_noise, zeros_like_floats
from grader.problems.registry import parse_problem

SOURCE = "tiny.yaml"
STEP_NAMES = ["schema", "reference", "deterministic", "starter", "pitfalls", "alternatives", "tolerances", "impostors"]
Outputs = Callable[[int], list[Any]]  # call number (0-based, per module) -> one value per test
ORACLE_SHIM = "\n\ndef __torchjudge_oracle__"
IDENTITY = identity_source([])
CURRENT_JOB: list[Any] = [None]  # the job being answered: a script can look at its tests' seeds


# -- a scripted sandbox -------------------------------------------------------------------------------
def _encode(value: Any, arrays: list[np.ndarray]) -> dict[str, Any]:
    if isinstance(value, np.ndarray):
        arrays.append(value)
        return {"t": "tensor", "dtype": str(value.dtype), "shape": list(value.shape)}
    if value is None:
        return {"t": "none"}
    if isinstance(value, Opaque):
        return {"t": "opaque", "type": value.type_name}
    if isinstance(value, bool):
        return {"t": "bool", "v": value}
    if isinstance(value, int):
        return {"t": "int", "v": str(value)}
    if isinstance(value, float):
        return {"t": "float", "v": float.hex(value)}
    if isinstance(value, dict):
        return {"t": "dict", "items": [[key, _encode(item, arrays)] for key, item in value.items()]}
    raise TypeError(value)


class ScriptedSandbox:
    """Answers a job with the scripted outputs of its module: a value per test, or an exception to raise."""

    def __init__(self, script: dict[str, Outputs], make_body: Callable[..., bytes], calls: dict[str, int]) -> None:
        self.script = script
        self.make_body = make_body
        self.calls = calls
        self.removed = False
        self.name = "scripted"

    def run_job(self, job: Any, deadline: float, on_tests: Callable[..., None] | None = None) -> JobOutcome:
        source = job.source
        number = self.calls.get(source, 0)
        self.calls[source] = number + 1
        CURRENT_JOB[0] = job
        # The float64 oracle (the reference with a shim after it) answers as the reference's first run: no error;
        # the impostor that returns its input unchanged, unless scripted, as a module that does not load.
        if source not in self.script and source.startswith(IDENTITY):
            return JobOutcome(load=LoadHeader(status="compile_error", message="not scripted"))
        outputs = self.script[source if source in self.script else source.partition(ORACLE_SHIM)[0]](number)
        if isinstance(outputs, LoadHeader):
            return JobOutcome(load=outputs)
        tests = []
        for index, value in enumerate(outputs):
            if isinstance(value, RunnerTestHeader):
                tests.append((value.model_copy(update={"index": index}), b""))
                continue
            if isinstance(value, SandboxLost):
                if on_tests is not None and tests:
                    on_tests(tests)
                value.during_test = index
                raise value
            arrays: list[np.ndarray] = []
            manifest = _encode(value, arrays)
            tests.append((RunnerTestHeader(index=index, status="ok", time_ms=3.0), self.make_body(manifest, *arrays)))
        if on_tests is not None and tests:
            on_tests(tests)
        return JobOutcome(load=LoadHeader(status="ok"), tests=tests)

    def remove(self) -> None:
        self.removed = True


def f32(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def raised(message: str, line: int | None = None, traceback: str | None = None) -> RunnerTestHeader:
    return RunnerTestHeader(
        index=0, status="error", time_ms=1.0, error_type="ValueError", message=message, line=line, traceback=traceback
    )


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(data_dir=tmp_path, max_grading_starts=2)


@pytest.fixture
def tiny(problem_yaml):
    """The fixture problem (tests 'first' and 'second', pitfall 'identity') and its modules' scripts."""
    problem = parse_problem(problem_yaml, SOURCE)
    script: dict[str, Outputs] = {
        problem.reference: lambda n: [{"out": f32(2, 2, 2)}, {"out": f32(0, 0)}],
        problem.starter_code: lambda n: [{"out": None}, {"out": None}],
        problem.pitfalls[0].code: lambda n: [{"out": f32(1, 1, 1)}, {"out": f32(0, 0)}],
    }
    return problem, script


class ScriptedSandboxes:
    """A pool of scripted containers: an idle one is handed out again, an unclean or lost one removed."""

    def __init__(self, start: Callable[[], Any]) -> None:
        self.start = start
        self.idle: list[Any] = []
        self.image_id = "scripted"

    def acquire(self, timeout: float | None = None, due_in_s: float = 3600.0) -> Any:
        try:
            return self.idle.pop() if self.idle else self.start()
        except SandboxLost:
            raise
        except Exception as exc:  # the engine's failure, as the real pool reports it
            raise SandboxLost(str(exc)) from exc

    def release(self, container: Any, reusable: bool) -> None:
        if reusable:
            self.idle.append(container)
        else:
            container.remove()

    def engine_ok(self) -> bool:
        return True

    def close(self) -> None:
        while self.idle:
            self.idle.pop().remove()


class Harness:
    """A checker over scripted sandboxes, recording every container it started."""

    def __init__(
        self, settings: Settings, script: dict[str, Outputs], make_body: Callable[..., bytes], **checker: Any
    ) -> None:
        self.started: list[ScriptedSandbox] = []
        self.calls: dict[str, int] = {}

        def start() -> ScriptedSandbox:
            sandbox = ScriptedSandbox(script, make_body, self.calls)
            self.started.append(sandbox)
            return sandbox

        self.sandboxes = ScriptedSandboxes(start)
        self.checker = ProblemChecker(settings.sandbox, settings.limits, self.sandboxes, **checker)  # type: ignore[arg-type]

    def check(self, text: str) -> tuple[CheckReport, list[CheckStep]]:
        seen: list[CheckStep] = []
        with self.checker:
            report = self.checker.check_text(text, SOURCE, on_step=seen.append)
        self.sandboxes.close()
        assert all(sandbox.removed for sandbox in self.started), "every container started is removed"
        return report, seen


def step(report: CheckReport, name: str) -> CheckStep:
    return next(s for s in report.steps if s.name == name)


def error_line(error: str) -> int:
    match = re.match(rf"^{re.escape(SOURCE)}:(\d+): ", error)
    assert match, error
    return int(match.group(1))


# -- the whole check ------------------------------------------------------------------------------------
def test_a_good_problem_passes_every_step_in_order(settings, tiny, problem_yaml, make_body) -> None:
    _problem, script = tiny
    harness = Harness(settings, script, make_body)
    report, seen = harness.check(problem_yaml)
    assert report.ok, report.errors
    assert [s.name for s in report.steps] == STEP_NAMES
    assert seen == report.steps, "each step is reported as it finishes, in order"
    assert report.problem_id == "tiny-problem" and report.version and len(report.version) == 16
    assert "2 tests (1 visible), 1 pitfalls" in step(report, "schema").summary
    assert step(report, "reference").summary.startswith("accepted: 2/2")
    assert step(report, "starter").status == StepStatus.OK
    assert step(report, "pitfalls").details == ["identity: fails 1 of 2 tests (1); first: test 1 'first', wrong answer"]
    assert step(report, "tolerances").summary == (
        "all-zeros fails 1 of 2 float tests; 1% noise fails 1 of 1 (the other 1 hold only 0, inf or NaN); "
        "the reference's own error (against float64) within the tolerance of 2 of 2 tests (at most 0.0e+00 "
        "relative, test 1)"
    )
    assert 1 <= len(harness.started) <= 2
    assert harness.calls[_problem.reference] == 2, "the reference runs twice"


def test_the_two_reference_runs_use_two_sandboxes(settings, tiny, problem_yaml, make_body) -> None:
    harness = Harness(settings, tiny[1], make_body)
    harness.check(problem_yaml)
    assert len(harness.started) == 2


def test_an_invalid_file_starts_no_sandbox(settings, problem_yaml, mutate, line_of) -> None:
    def start() -> None:
        raise AssertionError("a file that does not validate must not reach a sandbox")

    text = mutate(problem_yaml, "difficulty: easy", "difficulty: trivial")
    with ProblemChecker(settings.sandbox, settings.limits, ScriptedSandboxes(start)) as checker:  # type: ignore[arg-type]
        report = checker.check_text(text, SOURCE)
    assert not report.ok
    schema = step(report, "schema")
    assert schema.status == StepStatus.FAILED
    [error] = schema.errors
    assert error.startswith(f"{SOURCE}:{line_of(text, 'difficulty: trivial')}: difficulty: ")
    assert [s.status for s in report.steps[1:]] == [StepStatus.SKIPPED] * 7


def test_schema_only_stops_after_the_schema(settings, problem_yaml) -> None:
    sandboxes = ScriptedSandboxes(lambda: pytest.fail("no sandbox"))
    with ProblemChecker(settings.sandbox, settings.limits, sandboxes) as checker:  # type: ignore[arg-type]
        report = checker.check_text(problem_yaml, SOURCE, schema_only=True)
    assert [s.name for s in report.steps] == ["schema"] and report.ok


def test_a_reference_that_raises_names_the_reference_line(settings, tiny, problem_yaml, make_body, line_of) -> None:
    problem, script = tiny
    # The runner reports the line inside the submission (here the reference) that raised.
    script[problem.reference] = lambda n: [{"out": f32(2, 2, 2)}, raised("boom", line=2)]
    report, _ = Harness(settings, script, make_body).check(problem_yaml)
    assert not report.ok
    reference = step(report, "reference")
    assert reference.status == StepStatus.FAILED
    [error] = reference.errors
    assert error_line(error) == line_of(problem_yaml, "return 2 * x")
    assert "reference: the reference fails test 2 'second': ValueError: boom" in error
    assert [s.status for s in report.steps[2:]] == [StepStatus.SKIPPED] * 6


def test_a_test_that_raises_in_its_own_code_names_that_line(settings, tiny, problem_yaml, make_body, line_of) -> None:
    problem, script = tiny
    trace = 'Traceback (most recent call last):\n  File "<test 1>", line 1, in __test__\nValueError: bad test\n'
    script[problem.reference] = lambda n: [raised("bad test", traceback=trace), {"out": f32(0, 0)}]
    report, _ = Harness(settings, script, make_body).check(problem_yaml)
    [error] = step(report, "reference").errors
    assert error_line(error) == line_of(problem_yaml, "double(torch.ones(3))")
    assert ": tests.1.code: the reference fails test 1 'first'" in error


def test_a_reference_that_times_out(settings, tiny, problem_yaml, make_body) -> None:
    problem, script = tiny
    timeout = RunnerTestHeader(index=0, status="timeout", time_ms=2000.0, message="time limit exceeded during test 1")
    script[problem.reference] = lambda n: [timeout, {"out": f32(0, 0)}]
    report, _ = Harness(settings, script, make_body).check(problem_yaml)
    [error] = step(report, "reference").errors
    assert "reference" in error and "time limit exceeded" in error and "(limit 2 s)" in error


def test_a_reference_that_does_not_load(settings, tiny, problem_yaml, make_body, line_of) -> None:
    problem, script = tiny
    script[problem.reference] = lambda n: LoadHeader(status="compile_error", message="missing function: double")
    report, _ = Harness(settings, script, make_body).check(problem_yaml)
    [error] = step(report, "reference").errors
    assert (
        error == f"{SOURCE}:{line_of(problem_yaml, 'reference: |')}: reference: the reference does not load "
        "(compile_error): missing function: double"
    )


def test_a_reference_that_differs_between_runs(settings, tiny, problem_yaml, make_body) -> None:
    problem, script = tiny
    script[problem.reference] = lambda n: [{"out": f32(2, 2, 2 + n * 1e-5)}, {"out": f32(0, 0)}]
    report, _ = Harness(settings, script, make_body).check(problem_yaml)
    deterministic = step(report, "deterministic")
    assert deterministic.status == StepStatus.FAILED
    [error] = deterministic.errors
    assert "reference: the reference gives different outputs on two runs: test 1 'first': out: values differ" in error
    # The other steps still run: one check reports everything it can.
    assert step(report, "pitfalls").status == StepStatus.OK


def test_a_pitfall_that_passes_every_test_is_named(settings, tiny, problem_yaml, make_body, line_of) -> None:
    problem, script = tiny
    script[problem.pitfalls[0].code] = script[problem.reference]
    report, _ = Harness(settings, script, make_body).check(problem_yaml)
    pitfalls = step(report, "pitfalls")
    assert pitfalls.status == StepStatus.FAILED
    assert pitfalls.errors == [
        f"{SOURCE}:{line_of(problem_yaml, '- name: identity')}: pitfalls.1: pitfall 'identity' passes every test"
    ]
    assert pitfalls.summary == "0/1 fail at least one test"


def test_a_pitfall_that_fails_with_an_error_first_is_a_warning(settings, tiny, problem_yaml, make_body) -> None:
    problem, script = tiny
    script[problem.pitfalls[0].code] = lambda n: [raised("oops"), {"out": f32(0, 0)}]
    report, _ = Harness(settings, script, make_body).check(problem_yaml)
    pitfalls = step(report, "pitfalls")
    assert pitfalls.status == StepStatus.OK
    assert "first: test 1 'first', error" in pitfalls.details[0]
    warnings = [w for w in pitfalls.warnings if "visible tests only" not in w]  # the tiny problem's: its own test
    assert "first fails test 1 with error" in warnings[0]
    assert warnings[1] == (
        "a submission that makes pitfall 'identity' gets no hint: its verdict is runtime_error, and hints come "
        "with wrong answers only (it must answer every test, wrongly on some, to get its hint)"
    )


def test_a_pitfall_the_distance_cannot_tell_from_the_reference_gets_no_hint_and_the_check_says_why(
    settings, tiny, problem_yaml, make_body
) -> None:
    """inf where the reference has -inf fails the test, yet is no nearer the pitfall than the reference (the
    distance takes every non-finite value as one kind): the check names the test and the cause."""
    problem, script = tiny
    script[problem.reference] = lambda n: [{"out": np.array([2.0, -np.inf], dtype=np.float32)}, {"out": f32(0, 0)}]
    script[problem.pitfalls[0].code] = lambda n: [
        {"out": np.array([2.0, np.inf], dtype=np.float32)},
        {"out": f32(0, 0)},
    ]
    report, _ = Harness(settings, script, make_body).check(problem_yaml)
    pitfalls = step(report, "pitfalls")
    assert pitfalls.status == StepStatus.OK, pitfalls.errors
    [warning] = [w for w in pitfalls.warnings if "gets no hint" in w]
    assert warning.startswith("a submission that makes pitfall 'identity' gets no hint: on test 1 its result is ")
    assert "no closer to its own than to the reference's (0 against 0)" in warning


def test_a_pitfall_only_visible_tests_catch_is_named(settings, tiny, problem_yaml, make_body) -> None:
    """The tiny problem's pitfall fails its visible test only (the hidden one doubles zeros)."""
    problem, script = tiny
    report, _ = Harness(settings, script, make_body).check(problem_yaml)
    assert any(
        w.startswith("pitfall 'identity' fails visible tests only (1): no hidden test catches it")
        for w in step(report, "pitfalls").warnings
    )
    hidden_catches = problem_yaml.replace("double(torch.zeros(2))", "double(torch.ones(2))")
    script[problem.reference] = lambda n: [{"out": f32(2, 2, 2)}, {"out": f32(2, 2)}]
    script[problem.pitfalls[0].code] = lambda n: [{"out": f32(1, 1, 1)}, {"out": f32(1, 1)}]
    report, _ = Harness(settings, script, make_body).check(hidden_catches)
    assert not any("visible tests only" in w for w in step(report, "pitfalls").warnings)


def test_a_pitfall_whose_hint_is_shadowed_by_an_earlier_one(settings, problem_yaml, make_body) -> None:
    text = (
        problem_yaml + "  - name: also identity\n    hint: Again.\n    code: |\n      def double(x):\n"
        "          return x * 1\n"
    )
    problem = parse_problem(text, SOURCE)
    script: dict[str, Outputs] = {
        problem.reference: lambda n: [{"out": f32(2, 2, 2)}, {"out": f32(0, 0)}],
        problem.starter_code: lambda n: [{"out": None}, {"out": None}],
        problem.pitfalls[0].code: lambda n: [{"out": f32(1, 1, 1)}, {"out": f32(0, 0)}],
        problem.pitfalls[1].code: lambda n: [{"out": f32(1, 1, 1)}, {"out": f32(0, 0)}],
    }
    report, _ = Harness(Settings(max_grading_starts=1), script, make_body).check(text)
    pitfalls = step(report, "pitfalls")
    assert pitfalls.status == StepStatus.OK
    assert [w for w in pitfalls.warnings if "visible tests only" not in w] == [
        "a submission that makes pitfall 'also identity' gets the hint of 'identity' instead"
    ]


def test_a_pitfall_that_does_not_load_is_an_error(settings, tiny, problem_yaml, make_body) -> None:
    problem, script = tiny
    script[problem.pitfalls[0].code] = lambda n: LoadHeader(status="compile_error", message="missing function: x")
    report, _ = Harness(settings, script, make_body).check(problem_yaml)
    [error] = step(report, "pitfalls").errors
    assert "pitfalls.1.code: pitfall 'identity' does not load" in error and "never be shown" in error


def test_an_accepted_starter_code_is_an_error(settings, tiny, problem_yaml, make_body, line_of) -> None:
    problem, script = tiny
    script[problem.starter_code] = script[problem.reference]
    report, _ = Harness(settings, script, make_body).check(problem_yaml)
    assert step(report, "starter").errors == [
        f"{SOURCE}:{line_of(problem_yaml, 'starter_code: |')}: starter_code: the starter code is accepted; "
        "it must fail a test"
    ]


def test_a_starter_code_that_does_not_load_is_an_error(settings, tiny, problem_yaml, make_body) -> None:
    problem, script = tiny
    script[problem.starter_code] = lambda n: LoadHeader(status="error", error_type="ImportError")
    report, _ = Harness(settings, script, make_body).check(problem_yaml)
    [error] = step(report, "starter").errors
    assert "starter_code: the starter code does not load (runtime_error" in error


# -- tolerances ------------------------------------------------------------------------------------------
def test_tolerances_looser_than_one_percent_fail(settings, tiny, problem_yaml, mutate, make_body, line_of) -> None:
    text = mutate(problem_yaml, "rtol: 1.0e-5", "rtol: 0.05")
    report, _ = Harness(settings, tiny[1], make_body).check(text)
    tolerances = step(report, "tolerances")
    assert tolerances.status == StepStatus.FAILED
    [error] = tolerances.errors
    assert error.startswith(f"{SOURCE}:{line_of(text, 'tests:')}: tests: the reference's answer with 1% relative noise")


def test_all_zero_floats_fail_the_zeros_check(settings, tiny, problem_yaml, make_body) -> None:
    problem, script = tiny
    script[problem.reference] = lambda n: [{"out": f32(0, 0, 0)}, {"out": f32(0, 0)}]
    report, _ = Harness(settings, script, make_body).check(problem_yaml)
    errors = step(report, "tolerances").errors
    assert any("an all-zeros answer passes every test that returns floats" in e for e in errors)


def test_no_float_outputs_skip_the_tolerance_check(settings, tiny, problem_yaml, make_body) -> None:
    problem, script = tiny
    script[problem.reference] = lambda n: [{"out": 2}, {"out": 0}]
    script[problem.pitfalls[0].code] = lambda n: [{"out": 1}, {"out": 0}]
    report, _ = Harness(settings, script, make_body).check(problem_yaml)
    assert step(report, "tolerances").status == StepStatus.SKIPPED
    assert report.ok


def test_has_floats() -> None:
    assert has_floats(Tensor("float32", f32(1)))
    assert has_floats({"a": [1, (2, 0.5)]})
    assert not has_floats({"a": [1, True, "x", None, Tensor("int64", np.array([1]))]})
    assert not has_floats(Tensor("float32", np.zeros((0, 3), dtype=np.float32)))


def test_zeros_replace_floats_only() -> None:
    value = {
        "t": Tensor("float32", f32(1, -2)),
        "n": 3,
        "x": 1.5,
        "flags": [True],
        "ids": Tensor("int64", np.array([4])),
    }
    zeroed = zeros_like_floats(value)
    assert zeroed["t"].dtype == "float32" and zeroed["t"].array.tolist() == [0, 0]
    assert zeroed["x"] == 0.0 and zeroed["n"] == 3 and zeroed["flags"] == [True]
    assert zeroed["ids"] is value["ids"]


def test_a_mask_of_zeros_and_minus_infinity_is_not_taken_for_a_lenient_tolerance(
    settings, tiny, problem_yaml, make_body
) -> None:
    """Noise cannot move 0 or -inf: a test returning only those passes with noise whatever its tolerance."""
    problem, script = tiny
    mask = np.array([0.0, -np.inf, -np.inf], dtype=np.float32)
    script[problem.reference] = lambda n: [{"out": f32(2, 2, 2)}, {"out": mask}]
    script[problem.pitfalls[0].code] = lambda n: [{"out": f32(1, 1, 1)}, {"out": mask}]
    report, _ = Harness(settings, script, make_body).check(problem_yaml)
    tolerances = step(report, "tolerances")
    assert tolerances.status == StepStatus.OK and tolerances.warnings == [], tolerances
    assert "1% noise fails 1 of 1 (the other 1 hold only 0, inf or NaN);" in tolerances.summary


def test_only_masks_and_zeros_skip_the_noise_judgement_but_not_the_zeros_one(
    settings, tiny, problem_yaml, make_body
) -> None:
    problem, script = tiny
    mask = np.array([0.0, -np.inf], dtype=np.float32)
    script[problem.reference] = lambda n: [{"out": mask}, {"out": f32(0, 0)}]
    script[problem.pitfalls[0].code] = lambda n: [{"out": np.array([0.0, 0.0], dtype=np.float32)}, {"out": f32(0, 0)}]
    report, _ = Harness(settings, script, make_body).check(problem_yaml)
    tolerances = step(report, "tolerances")
    assert tolerances.status == StepStatus.OK, tolerances.errors
    assert tolerances.warnings == []
    assert "no float test has a value noise could move (all 0, inf or NaN);" in tolerances.summary


def test_noise_is_exactly_one_percent_relative_and_keeps_types() -> None:
    array = np.linspace(-3, 3, 101)
    value = (Tensor("float64", array), 2.0, [Tensor("float16", np.ones(4, dtype=np.float16))])
    noisy = with_relative_noise(value, seed=7)
    assert isinstance(noisy, tuple) and isinstance(noisy[2], list)
    ratio = noisy[0].array[array != 0] / array[array != 0]
    assert np.allclose(np.abs(ratio - 1), 0.01)
    assert {round(float(r), 6) for r in ratio} == {0.99, 1.01}, "both signs occur"
    assert noisy[1] in (2.0 * 0.99, 2.0 * 1.01)
    assert noisy[2][0].array.dtype == np.float16
    assert with_relative_noise(value, seed=7)[0].array.tolist() == noisy[0].array.tolist(), "seeded"


@pytest.mark.parametrize(
    ("indices", "text"), [([0], "1"), ([0, 1, 2], "1-3"), ([0, 2, 3, 4, 9], "1, 3-5, 10"), ([5, 1], "2, 6")]
)
def test_test_numbers_fold_runs(indices: list[int], text: str) -> None:
    assert numbers(indices) == text


# -- sandboxes -------------------------------------------------------------------------------------------
def test_no_sandbox_is_unavailable_not_the_problems_fault(settings, problem_yaml) -> None:
    def start() -> None:
        raise SandboxLost("no engine")

    checker = ProblemChecker(settings.sandbox, settings.limits, ScriptedSandboxes(start))  # type: ignore[arg-type]
    with checker, pytest.raises(SandboxUnavailable, match="no engine"):
        checker.check_text(problem_yaml, SOURCE)


def test_a_module_that_kills_the_sandbox_every_time_is_blamed(settings, tiny, problem_yaml, make_body) -> None:
    problem, script = tiny
    script[problem.pitfalls[0].code] = lambda n: [SandboxLost("the sandbox container stopped")]
    harness = Harness(settings, script, make_body)
    report, _ = harness.check(problem_yaml)
    assert step(report, "pitfalls").details == ["identity: fails 2 of 2 tests (1-2); first: test 1 'first', error"]
    assert all(sandbox.removed for sandbox in harness.started), "a lost container is never handed out again"


# -- seeds -------------------------------------------------------------------------------------------------
def fresh_problem(problem_yaml: str, mutate) -> str:  # type: ignore[no-untyped-def]
    """The tiny problem with its hidden test on fresh inputs."""
    return mutate(problem_yaml, "    seed: fixed\n", "")


def second_seed() -> int:
    return int(CURRENT_JOB[0].tests[1].seed)


@pytest.mark.parametrize("count", [None, 3, 32])
def test_a_problem_with_fresh_inputs_is_checked_under_eight_seeds_or_as_many_as_asked(
    settings, tiny, problem_yaml, make_body, mutate, count: int | None
) -> None:
    problem, script = tiny
    seeds: set[int] = set()
    reference = script[problem.reference]
    script[problem.reference] = lambda n: (seeds.add(second_seed()), reference(n))[1]
    harness = Harness(settings, script, make_body, **({} if count is None else {"seeds": count}))
    report, _ = harness.check(fresh_problem(problem_yaml, mutate))
    assert report.ok, report.errors
    want = count or 8
    # One seed more: the impostors step's reference on other inputs, run once beside the first round.
    assert len(seeds) == want + 1, "the hidden test's seed differs from one round to the next"
    assert harness.calls[problem.reference] == 2 * want + 1, "twice under each seed"
    assert step(report, "pitfalls").summary.endswith(f"(under {want} seeds)")
    assert not any("time budget" in warning for s in report.steps for warning in s.warnings)


def test_rounds_that_would_pass_the_time_budget_are_not_started(
    settings, tiny, problem_yaml, make_body, mutate, monkeypatch
) -> None:
    """A round takes 10 s on a clock that only the check reads (the first 15 s: its run of the reference under
    another seed): with 45 s, three rounds fit, not a fourth."""
    import grader.problems.check.run as check_module

    problem, script = tiny
    now = [1000.0]
    reference = script[problem.reference]

    def slow_reference(n: int) -> list[Any]:
        now[0] += 5.0  # two runs per round
        return reference(n)

    script[problem.reference] = slow_reference
    script[oracle_source(problem.reference, problem.entry_points)] = reference  # the oracle's run takes no time here
    monkeypatch.setattr(check_module.time, "monotonic", lambda: now[0])
    harness = Harness(settings, script, make_body, seeds=8, budget_s=45.0)
    report, _ = harness.check(fresh_problem(problem_yaml, mutate))
    assert report.ok, report.errors
    assert harness.calls[problem.reference] == 7, "three rounds of two runs, and the first round's other seed"
    reference_step = step(report, "reference")
    assert reference_step.summary.endswith("(under 3 seeds)")
    assert any("checked under 3 of 8 seeds" in w and "--seeds 8" in w for w in reference_step.warnings)


def test_a_pitfall_that_passes_under_some_seed_fails_the_check(settings, tiny, problem_yaml, make_body, mutate) -> None:
    """A test that does not catch its mistake on every draw: under one seed the pitfall is right."""
    problem, script = tiny
    unlucky = {"seed": None}

    def pitfall(n: int) -> list[Any]:
        if unlucky["seed"] is None and n == 1:  # the second round's draw is the one where it passes
            unlucky["seed"] = second_seed()
        if second_seed() == unlucky["seed"]:
            return [{"out": f32(2, 2, 2)}, {"out": f32(0, 0)}]
        return [{"out": f32(1, 1, 1)}, {"out": f32(0, 0)}]

    script[problem.pitfalls[0].code] = pitfall
    harness = Harness(settings, script, make_body)
    report, _ = harness.check(fresh_problem(problem_yaml, mutate))
    pitfalls = step(report, "pitfalls")
    assert pitfalls.status == StepStatus.FAILED
    assert any("passes every test" in error and "(seed " in error for error in pitfalls.errors), pitfalls.errors


def test_a_reference_that_is_not_deterministic_for_a_seed_fails(
    settings, tiny, problem_yaml, make_body, mutate
) -> None:
    problem, script = tiny
    script[problem.reference] = lambda n: [{"out": f32(2, 2, 2)}, {"out": f32(0, n)}]
    harness = Harness(settings, script, make_body)
    report, _ = harness.check(fresh_problem(problem_yaml, mutate))
    assert step(report, "deterministic").status == StepStatus.FAILED
