"""The impostors step of a problem check: answers that ignore the question, run against every test.

A test that an answer of all zeros, all ones, one constant, random numbers of the right shape, the first tensor
argument handed back unchanged, or the reference's answer on other inputs passes cannot tell a solution from a
guess (KernelBench found problems its zeros passed). Each test such an impostor passes is named, with the
impostor, and refused unless the test says why that is intended (`trivial:` in the problem file).

Four impostors are the reference's values changed on the trusted side (every number in them: tensors, floats,
ints and bools; text and None as they are; a test that returns no number is not judged by them). Two run in the
sandbox as modules of their own: the first tensor argument returned unchanged (IDENTITY), and the reference
under another seed, for the tests that draw fresh inputs (under a fixed seed it is the reference itself).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from grader.containers.protocol import Outcome
from grader.containers.values import FLOAT_DTYPES, Tensor
from grader.grading.execution import ModuleRun
from grader.grading.judge import compare
from grader.grading.model import ProblemSpec
from grader.problems.check.locate import Locator
from grader.problems.check.report import CheckStep, StepStatus

RANDOM_MIN_ELEMENTS = 16  # fewer, and random values (bools, small ints) may match by chance


def identity_source(entry_points: list[str] | tuple[str, ...] | Any) -> str:
    """A module whose every entry point returns its first tensor argument (else its first argument) unchanged."""
    lines = [
        "import torch",
        "",
        "",
        "def _unchanged(*args, **kwargs):",
        "    for value in (*args, *kwargs.values()):",
        "        if isinstance(value, torch.Tensor):",
        "            return value",
        "    return args[0] if args else None",
        "",
        "",
    ]
    lines += [f"{name} = _unchanged" for name in entry_points]
    return "\n".join(lines) + "\n"


def _changed(value: Any, array_change: Callable[[np.ndarray, str], np.ndarray | None], scalar: Callable) -> Any:
    """A copy of a decoded value with each number changed: `array_change` for a tensor's array (None: kept),
    `scalar` for a Python bool, int or float (None: kept)."""
    if isinstance(value, Tensor):
        changed = array_change(value.array, value.dtype) if value.array.size else None
        return value if changed is None else Tensor(value.dtype, changed.astype(value.array.dtype))
    if isinstance(value, (bool, int, float)):
        out = scalar(value)
        return value if out is None else out
    if isinstance(value, list):
        return [_changed(item, array_change, scalar) for item in value]
    if isinstance(value, tuple):
        return tuple(_changed(item, array_change, scalar) for item in value)
    if isinstance(value, dict):
        return {key: _changed(item, array_change, scalar) for key, item in value.items()}
    return value


def _fill(number: float) -> Callable[[np.ndarray, str], np.ndarray]:
    return lambda array, _dtype: np.full(array.shape, number).astype(array.dtype)


def _constant(array: np.ndarray, dtype: str) -> np.ndarray | None:
    """One value everywhere: the tensor's own mean (its most likely constant), where it has two elements or more
    (any one number is a constant)."""
    if array.size < 2 or dtype.startswith("complex"):
        return None
    finite = array.astype(np.float64)
    finite = finite[np.isfinite(finite)]
    mean = float(finite.mean()) if finite.size else 0.0
    if array.dtype == np.bool_:
        return None  # zeros and ones are a bool's constants
    if dtype not in FLOAT_DTYPES:
        mean = round(mean)
    return np.full(array.shape, mean).astype(array.dtype)


def _random(seed: int) -> Callable[[np.ndarray, str], np.ndarray | None]:
    rng = np.random.default_rng(seed)

    def draw(array: np.ndarray, dtype: str) -> np.ndarray | None:
        if array.size < RANDOM_MIN_ELEMENTS or dtype.startswith("complex"):
            return None
        if array.dtype == np.bool_:
            return rng.random(array.shape) < 0.5
        if dtype in FLOAT_DTYPES:
            return rng.standard_normal(array.shape)
        low, high = int(array.min()), int(array.max())
        return rng.integers(low, high + 1, size=array.shape) if high > low else None

    return draw


def _number(number: int) -> Callable[[Any], Any]:
    def scalar(value: Any) -> Any:
        return bool(number) if isinstance(value, bool) else type(value)(number)

    return scalar


def _applied(value: Any, array_change: Callable, scalar: Callable) -> tuple[Any, bool]:
    """The value changed, and whether anything in it was."""
    count = [0]

    def counted_array(array: np.ndarray, dtype: str) -> np.ndarray | None:
        out = array_change(array, dtype)
        count[0] += out is not None
        return out

    def counted_scalar(number: Any) -> Any:
        out = scalar(number)
        count[0] += out is not None
        return out

    return _changed(value, counted_array, counted_scalar), count[0] > 0


def trusted_impostors(value: Any, seed: int) -> dict[str, Any]:
    """The impostors made here from the reference's value of one test: those that put a value of their own in
    it somewhere (random values leave a tensor too small to judge by chance as it is: one that changes nothing
    is no impostor)."""
    made = {}
    makers = {
        "all zeros": (_fill(0), _number(0)),
        "all ones": (_fill(1), _number(1)),
        "one constant (each tensor's mean)": (_constant, lambda _: None),
        "random values of the right shape": (_random(seed), lambda _: None),
    }
    for name, (array_change, scalar) in makers.items():
        impostor, applied = _applied(value, array_change, scalar)
        if applied:
            made[name] = impostor
    return made


def _passes(problem: ProblemSpec, index: int, expected: Any, got: Any) -> bool:
    try:
        return compare(problem, index, expected, got).passed
    except Exception:  # noqa: BLE001 - a value a rule cannot take is a failure, as for a submission
        return False


def passed_by(
    problem: ProblemSpec, expected: list[Any], identity: ModuleRun | None, other_seed: ModuleRun | None
) -> dict[int, list[str]]:
    """Each test's impostors that pass it."""
    found: dict[int, list[str]] = {}
    for index, value in enumerate(expected):
        names = []
        for name, impostor in trusted_impostors(value, index).items():
            if _passes(problem, index, value, impostor):
                names.append(name)
        if _ran(identity, index) and _passes(problem, index, value, identity.value(index)):  # type: ignore[union-attr]
            names.append("the first tensor argument returned unchanged")
        # Under another seed: where the reference's answer is not the same (a test that draws nothing, or whose
        # value does not depend on what it draws, is not judged by it).
        other = other_seed.value(index) if other_seed is not None and _ran(other_seed, index) else None
        fresh = problem.tests[index].seed == "fresh" and other is not None
        if fresh and not _same(other, value) and _passes(problem, index, value, other):
            names.append("the reference's answer on other inputs (another seed)")
        if names:
            found[index] = names
    return found


def _ran(run: ModuleRun | None, index: int) -> bool:
    test = run.tests.get(index) if run is not None and run.loaded else None
    return test is not None and test.header.status == Outcome.OK


def _same(a: Any, b: Any) -> bool:
    """Whether two decoded values are the same, exactly (NaN where NaN)."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return (
            a.dtype == b.dtype
            and a.shape == b.shape
            and np.array_equal(a.array, b.array, equal_nan=a.dtype in FLOAT_DTYPES)
        )
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return type(a) is type(b) and bool(a == b)


def impostor_step(
    problem: ProblemSpec,
    expected: list[Any],
    identity: ModuleRun | None,
    other_seed: ModuleRun | None,
    locate: Locator,
) -> CheckStep:
    step = CheckStep(name="impostors", status=StepStatus.OK, summary="")
    found = passed_by(problem, expected, identity, other_seed)
    tests = problem.tests
    excused = []
    for index, names in found.items():
        test = tests[index]
        said = ", ".join(names)
        if getattr(test, "trivial", None):
            excused.append(index)
            step.details.append(f"test {index + 1} {test.name!r}: passed by {said}; trivial: {test.trivial}")  # type: ignore[attr-defined]
            continue
        step.errors.append(
            locate.error(
                ("tests", index),
                f"test {index + 1} {test.name!r} is passed by an answer that ignores the question: {said}; "
                "make the test tell it from a solution (other inputs, a value that is not all one number), or say "
                "why that is intended in `trivial:`",
            )
        )
    refused = len(found) - len(excused)
    step.summary = (
        f"no impostor passes any of the {len(tests)} tests"
        if not found
        else f"impostors pass {len(found)} of {len(tests)} tests ({len(excused)} say why in `trivial:`)"
    )
    if refused:
        step.status = StepStatus.FAILED
    return step
