"""Compares a submission's outputs with the expected ones, as plain data, on the trusted side.

Same type, same shape, same dtype, then values: floating point within the test's tolerance (NaN
matches only NaN, an infinity only the same infinity), everything else exactly. Numbers are numbers:
the sandbox sends NumPy scalars as Python numbers, and an int where a float is expected is compared as
that float. A tolerance left at its default widens with a low-precision dtype (EPS_MULTIPLE * eps).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from grader.containers.values import DTYPES, EPS, FLOAT_DTYPES, Opaque, Tensor

SAMPLE = 8
FIRST_MISMATCHES = 5
KEYS_SHOWN = 10  # of a dict's keys, in a message or a description
KEY_TEXT = 40  # characters of one key, in a message or a path
MAX_PATH = 200


def _key(key: str) -> str:
    return repr(key if len(key) <= KEY_TEXT else key[:KEY_TEXT] + "…")


def _keys(keys: list[str]) -> str:
    shown = ", ".join(_key(key) for key in keys[:KEYS_SHOWN])
    return f"[{shown}{f', … {len(keys) - KEYS_SHOWN} more' if len(keys) > KEYS_SHOWN else ''}]"


def _child_path(path: str, part: str) -> str:
    joined = path + part
    return joined if len(joined) <= MAX_PATH else joined[: MAX_PATH - 1] + "…"


class Tolerance(BaseModel):
    """How close a returned float must be: |got - expected| <= atol + rtol * |expected|, element-wise."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rtol: float = Field(1e-5, ge=0, allow_inf_nan=False, description="relative tolerance")
    atol: float = Field(1e-6, ge=0, allow_inf_nan=False, description="absolute tolerance")
    decimals: int | None = Field(None, ge=0, le=15, description="round both sides to this many decimals first")
    _bits: bool = PrivateAttr(False)  # EXACT's alone (the `exact` checker): no author sets it

    def for_dtype(self, dtype: str) -> Tolerance:
        """This tolerance for a tensor of `dtype`: each of rtol and atol that the test left at its default
        is at least EPS_MULTIPLE times the dtype's epsilon (so that bfloat16 or fp8 results can pass); for a
        dtype in EXACT_BY_DEFAULT, it is 0."""
        defaults = [name for name in ("rtol", "atol") if name not in self.model_fields_set]
        if dtype in EXACT_BY_DEFAULT:
            update = {name: 0.0 for name in defaults}
        else:
            floor = EPS_MULTIPLE * EPS.get(dtype, 0.0)
            update = {name: floor for name in defaults if getattr(self, name) < floor}
        return self.model_copy(update=update) if update else self


EPS_MULTIPLE = 2
# float8_e8m0fnu holds powers of two only, 2**-127 to 2**127 (a scale, in effect an exponent): 2 eps (2) would
# take any smaller scale for a larger one, and the default atol every scale below 1e-6 for any other.
EXACT_BY_DEFAULT = frozenset({"float8_e8m0fnu"})
EXACT = Tolerance(rtol=0.0, atol=0.0)
EXACT._bits = True  # bit for bit: equal floats of zero must have the same sign too (NaN still matches NaN)


@dataclass
class Comparison:
    passed: bool
    details: dict[str, Any] = field(default_factory=dict)


# Scalar types narrower than a float64, of every wire dtype: NumPy's and ml_dtypes' (bfloat16, fp8).
NARROW_FLOATS = tuple(DTYPES[name].type for name in sorted(FLOAT_DTYPES - {"float64", "complex64", "complex128"}))


def json_number(value: Any) -> Any:
    """A number JSON can carry: NaN and infinities become strings."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (complex, np.complexfloating)):
        return f"{complex(value)}"
    number = float(value)
    if math.isnan(number) or math.isinf(number):
        return str(number)
    if isinstance(value, NARROW_FLOATS):
        return _shortest(number, type(value))
    return number


def _shortest(number: float, kind: type) -> float:
    """The decimal with the fewest digits after the point that reads back as the same value of `kind`, as
    NumPy prints a float32: a bfloat16 0.1 is shown as 0.1, not as its exact 0.10009765625, and a 64 as 64
    (never as a 60 that would round to it). The digits a subnormal float32 needs are at most 45."""
    exact = kind(number)
    for decimals in range(50):
        candidate = round(number, decimals)
        if kind(candidate) == exact:
            return candidate
    return number


def describe(value: Any) -> dict[str, Any]:
    """Type, shape, dtype and a small sample, for the report."""
    if isinstance(value, Tensor):
        flat = value.array.reshape(-1)[:SAMPLE]
        return {
            "type": "tensor",
            "shape": list(value.shape),
            "dtype": value.dtype,
            "sample": [json_number(x) for x in flat],
        }
    if isinstance(value, (list, tuple)):
        return {"type": type(value).__name__, "length": len(value)}
    if isinstance(value, dict):
        return {"type": "dict", "keys": [k if len(k) <= KEY_TEXT else k[:KEY_TEXT] + "…" for k in sorted(value)[:20]]}
    if isinstance(value, str):
        return {"type": "str", "value": value[:200]}
    if isinstance(value, Opaque):
        return {"type": value.type_name}
    if value is None:
        return {"type": "None"}
    return {"type": type(value).__name__, "value": json_number(value)}


def describe_outputs(value: Any) -> dict[str, Any]:
    """What a test returned, for a reader: each top-level key of a dict described, else the whole value."""
    if isinstance(value, dict):
        return {str(key)[:KEY_TEXT]: describe(item) for key, item in list(value.items())[:KEYS_SHOWN]}
    return {"result": describe(value)}


def _type_name(value: Any) -> str:
    if isinstance(value, Tensor):
        return "tensor"
    if isinstance(value, Opaque):
        return f"unsupported {value.type_name}"
    if value is None:
        return "None"
    return type(value).__name__


def _a(name: str) -> str:
    """`name` with its indefinite article: "a tensor", "an unsupported Attention", "an int"."""
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _mismatch(path: str, reason: str, expected: Any, got: Any, **extra: Any) -> Comparison:
    details = {"path": path, "reason": reason, "expected": describe(expected), "got": describe(got)}
    details.update(extra)
    return Comparison(False, details)


def _compare_arrays(path: str, expected: Tensor, got: Tensor, tolerance: Tolerance) -> Comparison:
    exp, act = expected.array, got.array
    if tolerance._bits and expected.dtype in FLOAT_DTYPES:
        signs = _zero_signs_differ(exp, act)
        if signs.any():
            wrong = np.argwhere(signs)
            first = [{"index": [int(i) for i in index], "expected": json_number(exp[tuple(index)]),
                      "got": json_number(act[tuple(index)])} for index in wrong[:FIRST_MISMATCHES]]  # fmt: skip
            return _mismatch(
                path,
                "values differ in the sign of a zero (compared bit for bit)",
                expected,
                got,
                mismatches=int(wrong.shape[0]),
                total=int(exp.size),
                first_mismatches=first,
            )
    if np.array_equal(exp, act):  # the same values (NaN aside): within any tolerance, at once
        return Comparison(True)
    if expected.dtype in FLOAT_DTYPES:
        tolerance = tolerance.for_dtype(expected.dtype)
        if np.iscomplexobj(exp):
            exp64, act64 = exp.astype(np.complex128), act.astype(np.complex128)
        else:
            exp64, act64 = exp.astype(np.float64), act.astype(np.float64)
        if tolerance.decimals is not None:
            exp64, act64 = np.round(exp64, tolerance.decimals), np.round(act64, tolerance.decimals)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            close = np.isclose(act64, exp64, rtol=tolerance.rtol, atol=tolerance.atol, equal_nan=True)
        if bool(close.all()):
            return Comparison(True)
        errors = _errors(exp64, act64, tolerance)
    else:
        close = exp == act
        errors = {}
        if bool(close.all()):
            return Comparison(True)
    wrong = np.argwhere(~close)
    first = []
    for index in wrong[:FIRST_MISMATCHES]:
        position = tuple(int(i) for i in index)
        first.append(
            {"index": list(position), "expected": json_number(exp[position]), "got": json_number(act[position])}
        )
    return _mismatch(
        path,
        "values differ",
        expected,
        got,
        mismatches=int(wrong.shape[0]),
        total=int(exp.size),
        first_mismatches=first,
        **({"error_heatmap": _heatmap(exp, act)} if exp.ndim == 2 and expected.dtype in FLOAT_DTYPES else {}),
        **errors,
    )


def _zero_signs_differ(exp: np.ndarray, act: np.ndarray) -> np.ndarray:
    """Where both sides are a zero of opposite signs (the real and imaginary parts of a complex alike): the
    one way two floats can be equal and differ in their bits, NaN payloads aside."""
    pairs = [(exp.real, act.real), (exp.imag, act.imag)] if np.iscomplexobj(exp) else [(exp, act)]
    differ = np.zeros(np.shape(exp), dtype=bool)
    for one, other in pairs:
        one64, other64 = np.asarray(one, dtype=np.float64), np.asarray(other, dtype=np.float64)
        differ |= (one64 == 0) & (other64 == 0) & (np.signbit(one64) != np.signbit(other64))
    return differ


def _errors(exp64: np.ndarray, act64: np.ndarray, tolerance: Tolerance) -> dict[str, Any]:
    """How far apart two float arrays are (the report of a mismatch), and the tolerance they were held to.

    A NaN or an infinity where the other side has something else is a mismatch whose error has no size:
    it is counted (`nonfinite_mismatches`, and where the first is); the largest errors stay those of the
    finite pairs, unless those all agree: then they are NaN or infinite, never an error of 0."""
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        both_finite = np.isfinite(exp64) & np.isfinite(act64)
        abs_err = np.abs(act64 - exp64)
        # Relative error only where it means something: against a non-zero expected value.
        nonzero = both_finite & (exp64 != 0)
        rel_err = np.where(nonzero, abs_err / np.where(nonzero, np.abs(exp64), 1.0), 0.0)
        same = (exp64 == act64) | (np.isnan(exp64) & np.isnan(act64))
        odd = ~both_finite & ~same  # a NaN or an infinity against anything but itself
    max_abs = float(abs_err[both_finite].max()) if both_finite.any() else 0.0
    max_rel = float(rel_err[nonzero].max()) if nonzero.any() else 0.0
    found: dict[str, Any] = {}
    if odd.any():
        if max_abs == 0.0:
            nan = bool((np.isnan(exp64) | np.isnan(act64))[odd].any())
            max_abs = max_rel = math.nan if nan else math.inf
        first = tuple(int(i) for i in np.argwhere(odd)[0])
        found = {"nonfinite_mismatches": int(np.count_nonzero(odd)), "first_nonfinite": list(first)}
    return {
        "max_abs_error": json_number(max_abs),
        "max_rel_error": json_number(max_rel),
        **found,
        "rtol": tolerance.rtol,
        "atol": tolerance.atol,
        **({"round": tolerance.decimals} if tolerance.decimals is not None else {}),
    }


def _heatmap(expected: np.ndarray, got: np.ndarray, cells: int = 16) -> list[list[float]]:
    """Absolute error of a 2-D output, pooled (max) into at most cells x cells blocks."""
    wide = np.complex128 if np.iscomplexobj(expected) else np.float64
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(got.astype(wide) - expected.astype(wide))
    err = np.where(np.isfinite(err), err, np.inf)
    rows = np.array_split(np.arange(err.shape[0]), min(cells, max(err.shape[0], 1)))
    cols = np.array_split(np.arange(err.shape[1]), min(cells, max(err.shape[1], 1)))
    grid = []
    for r in rows:
        line = []
        for c in cols:
            block = err[np.ix_(r, c)]
            line.append(json_number(block.max()) if block.size else 0.0)
        grid.append(line)
    return grid


def as_float(value: int) -> float:
    """An int where a float is expected, as that float (an int too large for a float is an infinity)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def compare_values(path: str, expected: Any, got: Any, tolerance: Tolerance) -> Comparison:
    if type(expected) is float and type(got) is int:
        got = as_float(got)
    if isinstance(expected, Opaque) or isinstance(got, Opaque) or _type_name(expected) != _type_name(got):
        return _mismatch(path, f"expected {_a(_type_name(expected))}, got {_a(_type_name(got))}", expected, got)
    if isinstance(expected, Tensor):
        return _compare_tensors(path, expected, got, tolerance)
    if isinstance(expected, float):
        return _compare_floats(path, expected, got, tolerance)
    if isinstance(expected, (list, tuple)):
        return _compare_sequences(path, expected, got, tolerance)
    if isinstance(expected, dict):
        return _compare_dicts(path, expected, got, tolerance)
    if expected == got:
        return Comparison(True)
    return _mismatch(path, "values differ", expected, got)


def _compare_tensors(path: str, expected: Tensor, got: Tensor, tolerance: Tolerance) -> Comparison:
    if expected.shape != got.shape:
        return _mismatch(path, f"shape {list(got.shape)} instead of {list(expected.shape)}", expected, got)
    if expected.dtype != got.dtype:
        return _mismatch(path, f"dtype {got.dtype} instead of {expected.dtype}", expected, got)
    return _compare_arrays(path, expected, got, tolerance)


def _compare_floats(path: str, expected: float, got: float, tolerance: Tolerance) -> Comparison:
    exp_array = Tensor("float64", np.array(expected))
    result = _compare_arrays(path, exp_array, Tensor("float64", np.array(got)), tolerance)
    if result.passed:
        return result
    errors = {k: v for k, v in result.details.items() if k.startswith("max_")}
    return _mismatch(path, "values differ", expected, got, **errors)


def _compare_sequences(path: str, expected: list | tuple, got: list | tuple, tolerance: Tolerance) -> Comparison:
    if len(expected) != len(got):
        return _mismatch(path, f"length {len(got)} instead of {len(expected)}", expected, got)
    for i, (e, g) in enumerate(zip(expected, got, strict=True)):
        result = compare_values(_child_path(path, f"[{i}]"), e, g, tolerance)
        if not result.passed:
            return result
    return Comparison(True)


def _compare_dicts(path: str, expected: dict, got: dict, tolerance: Tolerance) -> Comparison:
    if set(expected) != set(got):
        missing = sorted(set(expected) - set(got))
        extra = sorted(set(got) - set(expected))
        return _mismatch(path, f"keys differ (missing {_keys(missing)}, unexpected {_keys(extra)})", expected, got)
    for key in expected:
        result = compare_values(_child_path(path, f"[{_key(key)}]"), expected[key], got[key], tolerance)
        if not result.passed:
            return result
    return Comparison(True)


def compare_outputs(expected: Any, got: Any, checks: dict[str, Tolerance], default: Tolerance) -> Comparison:
    """Compares one test's outputs; a top-level dict key picks its tolerance from the test's check."""
    if isinstance(expected, dict) and isinstance(got, dict) and set(expected) == set(got):
        for key in expected:
            result = compare_values(_child_path("", key), expected[key], got[key], checks.get(key, default))
            if not result.passed:
                return result
        return Comparison(True)
    return compare_values("result", expected, got, default)
