"""The tolerance step of a problem check: plain data, no sandbox. An all-zeros answer and the
reference's own answer with 1% relative noise must each fail some test that returns floats, under
that test's own rule; otherwise the tolerances are too loose to tell right from wrong."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from grader.containers.values import EPS, FLOAT_DTYPES, Tensor
from grader.grading.compare import EPS_MULTIPLE
from grader.grading.execution import ModuleRun
from grader.grading.judge import compare
from grader.grading.model import ProblemSpec
from grader.problems.check.locate import Locator
from grader.problems.check.oracle import findings, suggested
from grader.problems.check.report import CheckStep, StepStatus

NOISE = 0.01


def has_floats(value: Any) -> bool:
    if isinstance(value, Tensor):
        return value.dtype in FLOAT_DTYPES and value.array.size > 0
    if isinstance(value, float):
        return True
    if isinstance(value, (list, tuple)):
        return any(has_floats(item) for item in value)
    if isinstance(value, dict):
        return any(has_floats(item) for item in value.values())
    return False


def has_movable_floats(value: Any) -> bool:
    """Whether relative noise changes the value: some float is finite and not zero (a mask of 0 and -inf,
    or a tensor of zeros, is the same with 1% noise on it, whatever the tolerances)."""
    if isinstance(value, Tensor):
        if value.dtype not in FLOAT_DTYPES or value.array.size == 0:
            return False
        array = value.array.astype(np.float64) if value.array.dtype.kind not in "fc" else value.array
        return bool(np.any(np.isfinite(array) & (array != 0)))
    if isinstance(value, float):
        return value != 0.0 and np.isfinite(value)
    if isinstance(value, (list, tuple)):
        return any(has_movable_floats(item) for item in value)
    if isinstance(value, dict):
        return any(has_movable_floats(item) for item in value.values())
    return False


def perturb_floats(value: Any, change: Callable[[np.ndarray, str], np.ndarray]) -> Any:
    """A copy of a decoded value with every float tensor and float changed; everything else as it was."""
    if isinstance(value, Tensor):
        if value.dtype not in FLOAT_DTYPES:
            return value
        return Tensor(value.dtype, change(value.array, value.dtype).astype(value.array.dtype))
    if isinstance(value, float):
        return float(change(np.array([value], dtype=np.float64), "float64")[0])
    if isinstance(value, list):
        return [perturb_floats(item, change) for item in value]
    if isinstance(value, tuple):
        return tuple(perturb_floats(item, change) for item in value)
    if isinstance(value, dict):
        return {key: perturb_floats(item, change) for key, item in value.items()}
    return value


def zeros_like_floats(value: Any) -> Any:
    return perturb_floats(value, lambda array, _dtype: np.zeros_like(array))


def with_relative_noise(value: Any, seed: int, fraction: float = NOISE) -> Any:
    """Every float multiplied by 1 +/- fraction (the sign drawn at random, seeded): each element is off by
    exactly `fraction` relative, so a tolerance that lets this pass is looser than `fraction`."""
    rng = np.random.default_rng(seed)

    def noisy(array: np.ndarray, dtype: str) -> np.ndarray:
        # Relative to the dtype: twice its default tolerance where that is wider than `fraction` (bfloat16, fp8).
        here = max(fraction, 2 * 2 * EPS_MULTIPLE * EPS.get(dtype, 0.0))
        signs = rng.choice(np.array([-1.0, 1.0]), size=array.shape)
        return array * (1.0 + here * signs)

    return perturb_floats(value, noisy)


def tolerance_step(
    problem: ProblemSpec, expected: list[Any], locate: Locator, oracle: ModuleRun | None = None
) -> CheckStep:
    """`oracle`: the reference run again in float64 (oracle.py): a test whose tolerance is tighter than the
    reference's own error is refused."""
    step = CheckStep(name="tolerances", status=StepStatus.OK, summary="")
    float_tests = [index for index, value in enumerate(expected) if has_floats(value)]
    if not float_tests:
        step.status = StepStatus.SKIPPED
        step.summary = "no test returns floats"
        return step
    zeros_fail = [i for i in float_tests if not compare(problem, i, expected[i], zeros_like_floats(expected[i])).passed]
    # Noise can only tell a tolerance where it moves something: not on floats that are all 0, inf or NaN.
    movable = [i for i in float_tests if has_movable_floats(expected[i])]
    noise_fail = [
        i for i in movable if not compare(problem, i, expected[i], with_relative_noise(expected[i], i)).passed
    ]
    tests = problem.tests
    if not zeros_fail:
        step.errors.append(
            locate.error(
                ("tests",),
                "an all-zeros answer passes every test that returns floats: the floats are all zero or the "
                "tolerances are too loose",
            )
        )
    if movable and not noise_fail:
        step.errors.append(
            locate.error(
                ("tests",),
                f"the reference's answer with {NOISE:.0%} relative noise passes every test that returns floats: "
                "the tolerances (check: rtol, atol) are too loose",
            )
        )
    lenient = [i for i in movable if i not in noise_fail]
    if lenient and noise_fail:
        names = ", ".join(f"{i + 1} {tests[i].name!r}" for i in lenient[:5])
        step.warnings.append(f"tests accepting {NOISE:.0%} noise: {names}" + (" ..." if len(lenient) > 5 else ""))
    step.summary = f"all-zeros fails {len(zeros_fail)} of {len(float_tests)} float tests; " + (
        f"{NOISE:.0%} noise fails {len(noise_fail)} of {len(movable)}"
        + (
            f" (the other {len(float_tests) - len(movable)} hold only 0, inf or NaN)"
            if len(movable) < len(float_tests)
            else ""
        )
        if movable
        else "no float test has a value noise could move (all 0, inf or NaN)"
    )
    if oracle is not None:
        step.summary += "; " + _precision(problem, expected, oracle, float_tests, locate, step)
    if step.errors:
        step.status = StepStatus.FAILED
    return step


def _precision(
    problem: ProblemSpec,
    expected: list[Any],
    oracle: ModuleRun,
    float_tests: list[int],
    locate: Locator,
    step: CheckStep,
) -> str:
    """The float64 oracle's findings: an error per test whose tolerance is tighter than the reference's own error,
    a warning naming the tests it could not measure; the summary's clause."""
    found = findings(problem, expected, oracle, float_tests)
    tests = problem.tests
    for finding in found:
        if not finding.passes:
            index = finding.index
            step.errors.append(
                locate.error(
                    ("tests", index),
                    f"the tolerance is tighter than the reference's own float32 error: the reference computed in "
                    f"float64 and rounded fails this test (its error: up to {finding.error_abs:.1e} absolute, "
                    f"{finding.error_rel:.1e} relative), so a submission more accurate than the reference would "
                    f"fail; a tolerance that holds it: rtol {suggested(finding.error_rel)}, "
                    f"atol {suggested(finding.error_abs)}",
                )
            )
    unmeasured = [finding for finding in found if finding.note is not None]
    if unmeasured:
        names = "; ".join(f"{f.index + 1} {tests[f.index].name!r}: {f.note}" for f in unmeasured[:5])
        step.warnings.append(
            "the float64 oracle could not measure the reference's error in tests "
            + names
            + (" ..." if len(unmeasured) > 5 else "")
        )
    measured = [finding for finding in found if finding.note is None]
    if not measured:
        return "the float64 oracle measured no test"
    worst = max(measured, key=lambda finding: finding.error_rel)
    held = sum(finding.passes for finding in measured)
    return (
        f"the reference's own error (against float64) within the tolerance of {held} of {len(measured)} tests "
        f"(at most {worst.error_rel:.1e} relative, test {worst.index + 1})"
    )
