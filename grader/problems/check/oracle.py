"""The float64 oracle of a problem check: the reference computed again in float64, to measure its own error.

A float32 reference is itself off from the exact answer by its rounding. A test whose tolerance is tighter than
that refuses a submission more accurate than the reference: the worst verdict a judge can give. So the check runs
the reference once more, as a module of its own in the sandbox, with every floating tensor its entry points are
given widened to float64 (a module's parameters too, in place; what it changes in place copied back) and float64 as
its default dtype while they run; a module they make (or a class of theirs that the test makes) is made as the
reference makes it, its draws the same, then widened, and its forward given float64 inputs in turn. The test's own
code, and so its inputs, are unchanged. Its values, rounded to each of the reference's dtypes, stand for
the most accurate answer a float32 submission can give: a test they fail has a tolerance tighter than the
reference's own error, which the check refuses, with the error measured and a tolerance that holds it.

The oracle is the reference's own code on other dtypes, not a second reference: where its values are far from the
reference's (more than DIFFERENT relative to the value's scale: a branch on the dtype, an integer index that moved),
they say nothing of precision and the test is only noted; so where a call of the reference draws from torch's
generator (in float64 it draws other numbers: the shim says so and the test is noted), and where it fails to run
in float64. All its values are decoded and compared here, on the trusted side.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.containers.protocol import Outcome
from grader.containers.values import FLOAT_DTYPES, Tensor
from grader.grading.execution import ModuleRun
from grader.grading.judge import compare
from grader.grading.model import ProblemSpec

DIFFERENT = 1e-3  # an oracle this far off (relative to the value's largest magnitude) computed something else
MARGIN = 4  # the suggested tolerance: the error measured, this many times over, one significant digit up

SHIM = """

def __torchjudge_oracle__(names):
    import torch as _torch

    narrow = (_torch.float16, _torch.bfloat16, _torch.float32)

    def widen(value, moved):
        if isinstance(value, _torch.Tensor) and value.dtype in narrow:
            wide = value.to(_torch.float64)
            moved.append((value, wide, wide._version))
            return wide
        if isinstance(value, _torch.nn.Module):
            return watched(value)
        if type(value) is list:
            return [widen(item, moved) for item in value]
        if type(value) is tuple:
            return tuple(widen(item, moved) for item in value)
        if type(value) is dict:
            return {key: widen(item, moved) for key, item in value.items()}
        return value

    def watched(module):
        module.to(_torch.float64)
        if "forward" not in vars(module):
            module.forward = wrap(module.forward)
        return module

    def under(dtype, function, args, kwargs):
        before = _torch.get_default_dtype()
        _torch.set_default_dtype(dtype)
        try:
            return function(*args, **kwargs)
        finally:
            _torch.set_default_dtype(before)

    def wrap(function, made=False):
        def call(*args, **kwargs):
            state = _torch.default_generator.get_state()
            if made:  # a class's __init__: its draws as the reference's, then its parameters widened
                result = function(*args, **kwargs)
                if isinstance(args[0], _torch.nn.Module):
                    watched(args[0])
                return result
            moved = []
            wide = [widen(item, moved) for item in args]
            result = under(_torch.float64, function, wide, {key: widen(item, moved) for key, item in kwargs.items()})
            if not _torch.equal(state, _torch.default_generator.get_state()):
                if not isinstance(result, _torch.nn.Module):
                    raise RuntimeError(DRAWS)
                _torch.default_generator.set_state(state)  # a module made: made again as the reference made it
                return watched(function(*args, **kwargs))
            with _torch.no_grad():
                for original, changed, version in moved:
                    if changed._version != version:
                        original.copy_(changed)
            return watched(result) if isinstance(result, _torch.nn.Module) else result

        return call

    space = globals()
    for name in names:
        found = space.get(name)
        if isinstance(found, type):
            for attribute, member in list(vars(found).items()):
                if callable(member) and not isinstance(member, (type, staticmethod, classmethod)):
                    setattr(found, attribute, wrap(member, made=attribute == "__init__"))
        elif callable(found):
            space[name] = wrap(found)


__torchjudge_oracle__(NAMES)
del __torchjudge_oracle__
"""


# Said by the shim when a call of the reference draws from torch's generator: in float64 it draws other numbers.
DRAWS_SAID = "torchjudge's float64 oracle: the reference draws random numbers"


def oracle_source(reference: str, entry_points: list[str] | tuple[str, ...] | Sequence[str]) -> str:
    """The reference with the oracle's shim after it: its entry points take every float argument in float64."""
    return reference + SHIM.replace("NAMES", repr(list(entry_points))).replace("DRAWS", repr(DRAWS_SAID))


class Unlike(Exception):
    """The oracle's value is not the reference's in another precision (another shape, type or draw)."""


@dataclass
class Finding:
    """One float test's comparison with the oracle."""

    index: int
    error_abs: float = 0.0  # the reference's largest error, absolute
    error_rel: float = 0.0  # and relative to the oracle's value, where that is not tiny
    passes: bool = True  # the oracle's values, narrowed, pass the test's own rule
    note: str | None = None  # why the test says nothing of precision


CHUNK = 1 << 18  # elements measured at a time: a result's float64 copies never exceed a few MB at once


def narrowed(reference: Any, oracle: Any, finding: Finding) -> Any:
    """The reference's value with each float in it replaced by the oracle's, in the reference's dtype; the errors
    measured on the way. Unlike where the two do not match up."""
    if isinstance(reference, Tensor):
        if not isinstance(oracle, Tensor) or oracle.shape != reference.shape:
            raise Unlike("another type or shape")
        if reference.dtype not in FLOAT_DTYPES or reference.dtype.startswith("complex"):
            return reference
        if oracle.dtype not in FLOAT_DTYPES or oracle.dtype.startswith("complex"):
            raise Unlike(f"{oracle.dtype} where the reference gives {reference.dtype}")
        return Tensor(reference.dtype, _measured(reference.array, oracle.array, finding))
    if isinstance(reference, float):
        if type(oracle) is not float:
            raise Unlike("another type")
        _measured(np.array([reference]), np.array([oracle]), finding)
        return oracle
    if isinstance(reference, (list, tuple)):
        if type(oracle) is not type(reference) or len(oracle) != len(reference):
            raise Unlike("another structure")
        items = [narrowed(r, o, finding) for r, o in zip(reference, oracle, strict=True)]
        return items if isinstance(reference, list) else tuple(items)
    if isinstance(reference, dict):
        if type(oracle) is not dict or list(oracle) != list(reference):
            raise Unlike("other keys")
        return {key: narrowed(item, oracle[key], finding) for key, item in reference.items()}
    return reference


def _chunks(got: np.ndarray, exact: np.ndarray):  # type: ignore[no-untyped-def]
    flat_got, flat_exact = got.reshape(-1), exact.reshape(-1)
    for start in range(0, flat_got.size, CHUNK):
        yield (
            start,
            flat_got[start : start + CHUNK].astype(np.float64),
            flat_exact[start : start + CHUNK].astype(np.float64),
        )


def _measured(got: np.ndarray, exact: np.ndarray, finding: Finding) -> np.ndarray:
    """The oracle's values in the reference's dtype, measured a chunk at a time: where the two are finite, the
    largest error (absolute, and relative where the value is not tiny beside the largest); elsewhere they must be
    the same infinities or NaNs. Unlike where they are far apart (not a rounding)."""
    scale = 0.0
    for _, g, e in _chunks(got, exact):
        if not np.array_equal(np.isfinite(g), np.isfinite(e)) or not np.array_equal(
            g[~np.isfinite(g)], e[~np.isfinite(e)], equal_nan=True
        ):
            raise Unlike("other infinities or NaNs")
        finite = e[np.isfinite(e)]
        if finite.size:
            scale = max(scale, float(np.max(np.abs(finite))))
    out = np.empty(got.size, dtype=got.dtype)
    for start, g, e in _chunks(got, exact):
        with np.errstate(all="ignore"):
            out[start : start + g.size] = e.astype(got.dtype)
        both = np.isfinite(g)
        if not both.any():
            continue
        error = np.abs(g[both] - e[both])
        worst = float(np.max(error))
        if scale > 0 and worst > DIFFERENT * scale:
            raise Unlike(f"off by {worst / scale:.1e} of its scale: not a rounding")
        finding.error_abs = max(finding.error_abs, worst)
        large = np.abs(e[both]) > 1e-3 * scale
        if large.any():
            finding.error_rel = max(finding.error_rel, float(np.max(error[large] / np.abs(e[both][large]))))
    return out.reshape(got.shape)


def findings(problem: ProblemSpec, reference: list[Any], oracle: ModuleRun, float_tests: list[int]) -> list[Finding]:
    """Each float test's finding: how far the reference is from the oracle, and whether its tolerance holds that."""
    out = []
    for index in float_tests:
        finding = Finding(index)
        run = oracle.tests.get(index)
        if not oracle.loaded or run is None or run.header.status != Outcome.OK:
            said = (run.header.message or "") if run is not None else ""
            drew = DRAWS_SAID in said
            finding.note = "it draws random numbers" if drew else "the reference does not run in float64"
        else:
            try:
                accurate = narrowed(reference[index], oracle.value(index), finding)
            except Unlike as exc:
                finding.note = f"in float64 the reference computes something else ({exc})"
            else:
                finding.passes = compare(problem, index, reference[index], accurate).passed
        out.append(finding)
    return out


def suggested(error: float) -> str:
    """A tolerance that holds `error` MARGIN times over: one significant digit, rounded up."""
    if error <= 0:
        return "0"
    wanted = error * MARGIN
    exponent = math.floor(math.log10(wanted))
    return f"{math.ceil(wanted / 10**exponent)}e{exponent}"
