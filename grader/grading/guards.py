"""The first line against an `expect:`/`holds:` expression that builds something huge from small values:
every node kind that can allocate is checked, before it runs, against what it would build.

An expression runs in a judge process whose memory the kernel bounds (grading/isolated.py), so a guard
that misses ends that test as an error; a guard that catches ends it as a wrong answer with a reason
the author can read. The expression compiler (expressions.py) rewrites each such node into a call of
one of these functions, bound in the expression's scope under a name no expression can write:

    a <op> b        binop(op, a, b)          arithmetic, bitwise and matrix operators: broadcast size
    a < b < c       compare(op, a, b) and compare(op, b, c): broadcast size
    v[i]            subscript(v, i)          advanced (array or list) indices: the size they select
    f(*a, **k)      call(f, a, k)            broadcast size of array arguments; functions and methods
                                             that multiply sizes (repeat, outer, matmul, tolist, ...),
                                             and builtins that make a Python object of every element
                                             (list, sorted, set, ...), dtypes that are not numbers
                                             (astype(str), dtype=object); the result's size once built
    for x in v      iterate(v)               a comprehension over at most MAX_SEQUENCE items
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from grader.containers.values import wire_name

MAX_ELEMENTS = 10_000_000  # of an array an operation may build
MAX_SEQUENCE = 1_000_000  # of a list or string `*` may build, of a range, of a list made from an array
MAX_EXPONENT = 4096  # of an int ** int, and of a shift

BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Pow: operator.pow,
    ast.Mult: operator.mul,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.MatMult: operator.matmul,
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.BitOr: operator.or_,
    ast.BitAnd: operator.and_,
    ast.BitXor: operator.xor,
}
BINARY_KINDS = list(BINARY)
COMPARISONS: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
COMPARISON_KINDS = list(COMPARISONS)


def _refuse(count: int) -> None:
    if count > MAX_ELEMENTS:
        raise ValueError(f"the result would have {count} elements (at most {MAX_ELEMENTS})")


def _shape(value: Any) -> tuple[int, ...] | None:
    """The shape of an array, or of a list or tuple numpy would make one of; None for anything else."""
    if isinstance(value, np.ndarray):
        return value.shape
    if isinstance(value, (list, tuple)):
        try:
            return np.shape(value)  # type: ignore[no-any-return]
        except ValueError:
            return (len(value),)
    return None


def _broadcast(*values: Any) -> None:
    shapes = [shape for shape in map(_shape, values) if shape is not None]
    if len(shapes) < 2 and not any(isinstance(value, np.ndarray) for value in values):
        return
    try:
        out = math.prod(np.broadcast_shapes(*shapes))
    except ValueError:
        return  # not broadcastable: the operation itself refuses them
    _refuse(out)


def _matmul_size(left: Any, right: Any) -> int:
    left_shape, right_shape = _shape(left) or (), _shape(right) or ()
    if len(left_shape) >= 1 and len(right_shape) >= 1:
        batch = math.prod(np.broadcast_shapes(left_shape[:-2], right_shape[:-2])) if len(left_shape) > 2 else 1
        return batch * math.prod(left_shape[-2:-1]) * math.prod(right_shape[-1:] if len(right_shape) > 1 else ())
    return 0


def binop(kind: int, left: Any, right: Any) -> Any:
    """left <op> right, refused first when it would build something far larger than its operands."""
    op = BINARY_KINDS[kind]
    if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
        if op is ast.MatMult:
            _refuse(_matmul_size(left, right))
        else:
            _broadcast(left, right)
    elif op is ast.Pow and type(left) is int and type(right) is int and abs(left) > 1 and right > MAX_EXPONENT:
        raise ValueError(f"an integer power of {right} (at most {MAX_EXPONENT})")
    elif op is ast.LShift and type(right) is int and right > MAX_EXPONENT:
        raise ValueError(f"a shift by {right} (at most {MAX_EXPONENT})")
    elif op is ast.Mult:
        for seq, count in ((left, right), (right, left)):
            long = isinstance(seq, (str, bytes, list, tuple)) and isinstance(count, int) and len(seq) * count
            if long and long > MAX_SEQUENCE:
                raise ValueError(f"a sequence of {long} items (at most {MAX_SEQUENCE})")
    return BINARY[op](left, right)


def compare(kind: int, left: Any, right: Any) -> Any:
    """left <cmp> right, refused first when broadcasting would make it far larger than its operands."""
    op = COMPARISON_KINDS[kind]
    if op not in (ast.Is, ast.IsNot) and (isinstance(left, np.ndarray) or isinstance(right, np.ndarray)):
        _broadcast(left, right)
    return COMPARISONS[op](left, right)


def _selected(value: np.ndarray, index: Any) -> int | None:
    """How many elements `value[index]` selects at most, when the index holds arrays or lists; None when it
    is only basic indexing (ints, slices: views or elements, never larger than the array)."""
    parts = index if isinstance(index, tuple) else (index,)
    arrays = [part for part in parts if isinstance(part, (np.ndarray, list))]
    if not arrays:
        return None
    advanced, consumed = [], 0
    for part in arrays:
        array = np.asarray(part) if isinstance(part, list) and len(part) <= MAX_SEQUENCE else part
        if not isinstance(array, np.ndarray):
            return MAX_ELEMENTS + 1
        if array.dtype == np.bool_:
            advanced.append((array.size,))
            consumed += array.ndim
        else:
            advanced.append(array.shape)
            consumed += 1
    consumed += sum(1 for part in parts if isinstance(part, (int, np.integer, slice)))
    try:
        selected = math.prod(np.broadcast_shapes(*advanced))
    except ValueError:
        return None  # numpy refuses it itself
    rest = value.shape[min(consumed, value.ndim) :] if not any(part is Ellipsis for part in parts) else value.shape
    sliced = [value.shape[i] for i, part in enumerate(parts) if isinstance(part, slice) and i < value.ndim]
    return selected * math.prod(rest) * math.prod(sliced)


def subscript(value: Any, index: Any) -> Any:
    """value[index], refused first when an array or list index would select far more than the array holds."""
    if isinstance(value, np.ndarray):
        count = _selected(value, index)
        if count is not None:
            _refuse(count)
    return value[index]


def _sizes_of(args: Sequence[Any]) -> list[int]:
    return [math.prod(shape) for shape in map(_shape, args) if shape is not None]


def _call_size(function: Any, target: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> int:
    """What a function or method known to build more than it is given would build (0: not one of them)."""
    name = getattr(function, "__name__", "")
    sizes = _sizes_of([target, *args] if target is not None else args)
    if name == "repeat":
        counts = np.asarray(args[0] if args else kwargs.get("repeats", 1))
        if counts.size == 1:
            return int(counts.reshape(-1)[0]) * (sizes[0] if sizes else 1)
        return int(counts.sum()) if counts.dtype.kind in "iub" else 0
    if name in ("outer", "kron"):
        return math.prod(sizes[-2:]) if len(sizes) >= 2 else 0
    if name in ("matmul", "dot"):
        operands = [target, *args] if target is not None else list(args)
        return _matmul_size(operands[0], operands[1]) if len(operands) >= 2 else 0
    if name in ("corrcoef", "cov"):
        first = _shape(target if target is not None else args[0] if args else None) or ()
        return (first[0] if first else 1) ** 2
    if name == "tolist":
        count = sizes[0] if sizes else 0
        if count > MAX_SEQUENCE:
            raise ValueError(f"a list of {count} items (at most {MAX_SEQUENCE})")
        return count
    return 0


# Builtins that hold a Python object for every element of what they are given (some 30 bytes each).
MATERIALISING = frozenset({list, tuple, set, frozenset, sorted, dict, enumerate, zip, reversed})


def _materialised(function: Any, args: Sequence[Any]) -> None:
    try:
        materialises = function in MATERIALISING
    except TypeError:  # unhashable: not one of them
        materialises = False
    if materialises:
        for size in _sizes_of(args):
            if size > MAX_SEQUENCE:
                raise ValueError(f"a Python object for each of {size} elements (at most {MAX_SEQUENCE})")


def iterate(value: Any) -> Any:
    """What a comprehension iterates over, refused when it has more than MAX_SEQUENCE items."""
    shape = _shape(value) if isinstance(value, np.ndarray) else None
    if shape is not None and shape and shape[0] > MAX_SEQUENCE:
        raise ValueError(f"a comprehension over {shape[0]} items (at most {MAX_SEQUENCE})")
    if isinstance(value, (list, tuple, str, range)) and len(value) > MAX_SEQUENCE:
        raise ValueError(f"a comprehension over {len(value)} items (at most {MAX_SEQUENCE})")
    return value


def _numeric_dtype(function: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
    """A dtype asked of a call (astype(d), dtype=d) is one of the wire's: never text or Python objects, whose
    arrays hold far more than their elements' bytes."""
    requested = kwargs.get("dtype")
    if requested is None and getattr(function, "__name__", "") == "astype" and args:
        requested = args[0]
    if requested is None:
        return
    try:
        known = wire_name(np.dtype(requested)) is not None
    except TypeError:
        known = False
    if not known:
        raise TypeError(f"an array of dtype {str(requested)[:40]!r} (at most the wire's numeric dtypes)")


def call(function: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
    """function(*args, **kwargs), refused first when its array arguments broadcast, or the function is known
    to multiply sizes, past the bound; and refused after when what it built is past it."""
    target = getattr(function, "__self__", None)
    target = target if isinstance(target, np.ndarray) else None
    arrays = [arg for arg in (*args, *kwargs.values()) if isinstance(arg, np.ndarray)]
    if len(arrays) > 1:
        _broadcast(*arrays)
    _refuse(_call_size(function, target, args, kwargs))
    _materialised(function, args)
    _numeric_dtype(function, args, kwargs)
    result = function(*args, **kwargs)
    if isinstance(result, np.ndarray):
        _refuse(result.size)
    return result
