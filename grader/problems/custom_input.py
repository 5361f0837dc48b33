"""A learner's values for a problem's custom-input test (custom_test.py): validated here, on the trusted
side, against what the author declared (types, dtypes, shapes, ranges, sizes), then written into the
test's code as literals this module generates from the validated numbers alone (ints, finite floats
through repr, bools, tensors as `torch.tensor([...], dtype=torch.<dtype>).reshape(<shape>)`). No
character the learner sent reaches the code: what the sandbox runs is the author's test body after one
line of assignments made of digits, signs, points, exponents, True/False and names from a fixed list.

Validation is total and bounded: every step walks at most an argument's element cap, never recurses
(a tensor is read level by level, its depth being its declared rank), and stops an argument at its first
error; a message names the argument and the position, and quotes at most a few characters of the value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class ArgumentSpec(Protocol):
    """What this module reads of a custom test's argument (custom_test.py Argument)."""

    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def dtype(self) -> str | None: ...
    @property
    def shape(self) -> list[int | str] | None: ...
    @property
    def min(self) -> Any: ...
    @property
    def max(self) -> Any: ...
    @property
    def finite(self) -> bool: ...
    @property
    def max_elements(self) -> int: ...
    @property
    def default(self) -> Any: ...


class CustomTestSpec(Protocol):
    """What this module reads of a custom test (custom_test.py CustomTest)."""

    @property
    def arguments(self) -> Sequence[ArgumentSpec]: ...
    @property
    def dimensions(self) -> Mapping[str, Any]: ...
    @property
    def code(self) -> str: ...


# The dtypes a tensor argument may have: those of the wire's list (containers/protocol.py WIRE_DTYPES)
# that torch.tensor builds from a list of Python numbers as written. Floats: the largest finite value
# (a larger one would arrive as an infinity); ints: the range.
FLOAT_DTYPES = {
    "float16": 65504.0,
    "bfloat16": 3.3895313892515355e38,
    "float32": 3.4028234663852886e38,
    "float64": 1.7976931348623157e308,
}
INT_DTYPES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint8": (0, 2**8 - 1),
}
INPUT_DTYPES = (*FLOAT_DTYPES, *INT_DTYPES, "bool")
INT_RANGE = INT_DTYPES["int64"]  # of an int argument
NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}  # where `finite: false`
MAX_ERRORS = 5
SHOWN = 40
BOUND = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:([+-])\s*(\d{1,9}))?\s*$")

Scalar = int | float | bool


@dataclass(frozen=True)
class TensorValue:
    dtype: str
    shape: tuple[int, ...]
    flat: list[Scalar]


Value = Scalar | TensorValue


class InputsRefused(ValueError):
    """Values that do not fit the declaration: each error names the argument and where in it."""

    def __init__(self, errors: list[str], total: int | None = None) -> None:
        self.errors = errors[:MAX_ERRORS]
        more = (total if total is not None else len(errors)) - len(self.errors)
        tail = [f"and {more} more error{'s' if more > 1 else ''}"] if more > 0 else []
        super().__init__("; ".join(self.errors + tail))


class _Stop(Exception):
    """The first error in one argument: validating it goes no further."""


def shown(value: Any) -> str:
    """A value as a message quotes it: a few characters, never the work of printing a huge number."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, int):
        return repr(value) if value.bit_length() <= 64 else "an integer of more than 64 bits"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        text = value if len(value) <= SHOWN else value[:SHOWN] + "…"
        return repr(text)
    return {list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def kind(value: Any) -> str:
    """What a JSON value is, in words."""
    if isinstance(value, bool):
        return "true/false"
    return {int: "an integer", float: "a number", str: "a string", list: "a list", dict: "an object"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def got(value: Any) -> str:
    """What a JSON value is, and (for a scalar) what it says."""
    if isinstance(value, (list, dict)) or value is None or isinstance(value, bool):
        return kind(value) if not isinstance(value, bool) else shown(value)
    return f"{kind(value)} {shown(value)}"


def parse_bound(bound: int | float | str | None) -> tuple[str, int] | None:
    """A bound that names an int argument: (its name, the offset); None for a number or no bound."""
    if not isinstance(bound, str):
        return None
    match = BOUND.match(bound)
    if match is None:
        raise ValueError(f"{bound!r} is neither a number nor `name`, `name - k` or `name + k`")
    offset = int(match.group(3) or 0)
    return match.group(1), -offset if match.group(2) == "-" else offset


def _resolved(bound: int | float | str | None, values: Mapping[str, Value]) -> tuple[float | int | None, str]:
    """A bound's value under the values validated so far, and how a message names it."""
    named = parse_bound(bound)
    if named is None:
        return (bound if not isinstance(bound, str) else None), "" if bound is None else shown(bound)
    name, offset = named
    base = values.get(name)
    if not isinstance(base, int) or isinstance(base, bool):
        return None, ""  # that argument is itself refused: its own error says so
    return base + offset, f"{bound.strip()} = {base + offset}"  # type: ignore[union-attr]


def validate_inputs(test: CustomTestSpec, given: Any, where: str = "inputs") -> dict[str, Value]:
    """Every argument's value: as given, or its default when left out. InputsRefused otherwise."""
    if not isinstance(given, dict):
        raise InputsRefused([f"{where}: expected an object of argument values, got {kind(given)}"])
    names = [argument.name for argument in test.arguments]
    errors: list[str] = []
    unknown = [key for key in given if key not in names]
    if unknown:
        listed = ", ".join(shown(key) for key in unknown[:3]) + (f" and {len(unknown) - 3} more" if unknown[3:] else "")
        errors.append(f"{where}: no argument named {listed} (this test takes {', '.join(names)})")
    values: dict[str, Value] = {}
    sizes: dict[str, tuple[int, str]] = {}  # a dimension's size, and the argument that set it
    for argument in test.arguments:
        raw = given[argument.name] if argument.name in given else argument.default
        path = f"{where}.{argument.name}"
        try:
            values[argument.name] = _value(test, argument, raw, path, values, sizes)
        except _Stop as stop:
            errors.append(str(stop))
    if errors:
        raise InputsRefused(errors)
    return values


def _value(
    test: CustomTestSpec, argument: ArgumentSpec, raw: Any, path: str, values: Mapping[str, Value], sizes: dict
) -> Value:
    lo, lo_text = _resolved(argument.min, values)
    hi, hi_text = _resolved(argument.max, values)
    if argument.type == "bool":
        if type(raw) is not bool:
            raise _Stop(f"{path}: expected true or false, got {got(raw)}")
        return raw
    if argument.type == "int":
        return _number(raw, path, "int64", lo, lo_text, hi, hi_text, finite=True)
    if argument.type == "float":
        return _number(raw, path, "float64", lo, lo_text, hi, hi_text, finite=argument.finite)
    return _tensor(test, argument, raw, path, (lo, lo_text, hi, hi_text), values, sizes)


def _number(raw: Any, path: str, dtype: str, lo: Any, lo_text: str, hi: Any, hi_text: str, *, finite: bool) -> Scalar:
    """One number of the given dtype (an int argument is an int64), within its bounds."""
    if dtype == "bool":
        if type(raw) is not bool:
            raise _Stop(f"{path}: expected true or false (bool), got {got(raw)}")
        return raw
    if dtype in INT_DTYPES:
        if type(raw) is not int:
            raise _Stop(f"{path}: expected an integer ({dtype}), got {got(raw)}")
        low, high = INT_DTYPES[dtype]
        if not low <= raw <= high:
            raise _Stop(f"{path}: {shown(raw)} does not fit in {dtype} ({low} to {high})")
        value: int | float = raw
    else:
        if not finite and isinstance(raw, str) and raw in NON_FINITE:
            raw = NON_FINITE[raw]
        if type(raw) not in (int, float):
            raise _Stop(f"{path}: expected a number ({dtype}), got {got(raw)}")
        if type(raw) is int and abs(raw) >= 2**1023:
            raise _Stop(f"{path}: {shown(raw)} is beyond the largest {dtype} ({FLOAT_DTYPES[dtype]:g})")
        value = float(raw)
        if math.isnan(value) or math.isinf(value):
            if finite:
                raise _Stop(f"{path}: {shown(raw)} is not a finite number (NaN and infinities are not taken here)")
            return value
        if abs(value) > FLOAT_DTYPES[dtype]:
            raise _Stop(f"{path}: {shown(raw)} is beyond the largest {dtype} ({FLOAT_DTYPES[dtype]:g})")
    if lo is not None and value < lo:
        raise _Stop(f"{path}: {shown(raw)} is below the minimum, {lo_text}")
    if hi is not None and value > hi:
        raise _Stop(f"{path}: {shown(raw)} is above the maximum, {hi_text}")
    return value


def _tensor(
    test: CustomTestSpec,
    argument: ArgumentSpec,
    raw: Any,
    path: str,
    bounds: tuple[Any, str, Any, str],
    values: Mapping[str, Value],
    sizes: dict[str, tuple[int, str]],
) -> TensorValue:
    """Nested lists of the declared rank, read level by level (never deeper than the rank), at most
    max_elements numbers; then each dimension against its declaration and the other arguments."""
    shape = list(argument.shape or [])
    cap = argument.max_elements
    found: list[int] = []
    level: list[Any] = [raw]
    for depth in range(len(shape)):
        following: list[Any] = []
        for position, node in enumerate(level):
            if type(node) is not list:
                at = _index(position, found[:depth])
                raise _Stop(f"{path}{at}: expected a list (a tensor of shape {_shape(shape)}), got {got(node)}")
            if len(found) == depth:
                found.append(len(node))
                if math.prod(found) > cap:
                    raise _Stop(f"{path}: more than {cap} elements (the most this argument takes)")
            elif len(node) != found[depth]:
                at = _index(position, found[:depth])
                count = f"{len(node)} item{'s' if len(node) != 1 else ''}"
                raise _Stop(f"{path}{at}: {count} where the others have {found[depth]}: rows must be equal")
            following.extend(node)
        level = following
        if len(found) == depth:  # an empty level: the data does not say the remaining dimensions
            break
    lo, lo_text, hi, hi_text = bounds
    flat: list[Scalar] = []
    if len(found) == len(shape):
        for position, element in enumerate(level):
            at = f"{path}{_index(position, found)}"
            flat.append(_number(element, at, argument.dtype or "", lo, lo_text, hi, hi_text, finite=argument.finite))
    sized = _dimensions(test, argument, shape, found, path, values, sizes)
    return TensorValue(argument.dtype or "", sized, flat)


def _dimensions(
    test: CustomTestSpec,
    argument: ArgumentSpec,
    shape: Sequence[int | str],
    found: Sequence[int],
    path: str,
    values: Mapping[str, Value],
    sizes: dict[str, tuple[int, str]],
) -> tuple[int, ...]:
    """Each dimension's size, checked; one the data leaves unsaid (after an empty one) is what the
    declaration makes it, else 0."""
    sized = []
    for axis, declared in enumerate(shape):
        size = found[axis] if axis < len(found) else _implied(declared, values, sizes)
        sized.append(size)
        where = f"{path}: dimension {axis + 1} of {_shape(shape)}"
        if isinstance(declared, int):
            if size != declared:
                raise _Stop(f"{where} has {size} entries; it must have {declared}")
            continue
        fixed = values.get(declared)
        if isinstance(fixed, int) and not isinstance(fixed, bool):
            if size != fixed:
                raise _Stop(f"{where} ({declared}) has {size} entries, but {declared} = {fixed}")
            continue
        if declared in sizes and sizes[declared][0] != size:
            other, by = sizes[declared]
            raise _Stop(f"{where} ({declared}) has {size} entries, but in {by} {declared} is {other}")
        limits = test.dimensions.get(declared)
        low, high = (limits.min, limits.max) if limits is not None else (1, argument.max_elements)
        if not low <= size <= high:
            raise _Stop(f"{where} ({declared}) has {size} entries; it takes {low} to {high}")
        sizes.setdefault(declared, (size, argument.name))
    return tuple(sized)


def _implied(declared: int | str, values: Mapping[str, Value], sizes: Mapping[str, tuple[int, str]]) -> int:
    if isinstance(declared, int):
        return declared
    fixed = values.get(declared)
    if isinstance(fixed, int) and not isinstance(fixed, bool):
        return fixed
    return sizes[declared][0] if declared in sizes else 0


def _shape(shape: Sequence[int | str]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def _index(position: int, sizes: Sequence[int]) -> str:
    """The `[i][j]` of the position-th node of a level whose dimensions above are `sizes`."""
    parts = []
    for size in reversed(sizes):
        position, index = divmod(position, size) if size else (position, 0)
        parts.append(f"[{index}]")
    return "".join(reversed(parts))


# -- the values, written as code ---------------------------------------------------------------------------
def _scalar(value: Scalar, dtype: str) -> str:
    if dtype == "bool" or isinstance(value, bool):
        return "True" if value else "False"
    if dtype in INT_DTYPES:
        return str(int(value))
    number = float(value)
    if math.isnan(number):
        return "float('nan')"
    if math.isinf(number):
        return "float('inf')" if number > 0 else "-float('inf')"
    return repr(number)


def literal(value: Value, argument_type: str) -> str:
    """Python source that evaluates to the value; made only from the validated numbers and fixed names."""
    if isinstance(value, TensorValue):
        if value.dtype not in INPUT_DTYPES:
            raise ValueError(f"dtype {value.dtype!r} is not an input dtype")
        items = ", ".join(_scalar(item, value.dtype) for item in value.flat)
        shape = "(" + "".join(f"{int(size)}, " for size in value.shape) + ")"
        return f"torch.tensor([{items}], dtype=torch.{value.dtype}).reshape({shape})"
    return _scalar(value, {"int": "int64", "float": "float64"}.get(argument_type, "bool"))


def custom_code(test: CustomTestSpec, values: Mapping[str, Value]) -> str:
    """The custom test's code on these values: one line that binds every argument, then the author's
    body (so its line N is line N + 1 of what runs)."""
    bindings = "; ".join(
        f"{argument.name} = {literal(values[argument.name], argument.type)}" for argument in test.arguments
    )
    return f"{bindings}\n{test.code}"
