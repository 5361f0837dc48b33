"""`expect:` and `holds:` expressions: Python expressions a problem's author writes, evaluated on the
trusted side over the values a submission returned (already decoded and size-bounded), never in the
sandbox and never on a sandbox object.

Compiled once, when the problem loads. An expression may use the top-level keys of the returned dict,
`torch`, `np` and `math` (restricted namespaces, grading/torchlike.py) and a few builtins; no name or
attribute starting with `_`, no lambda, f-string, assignment or nested comprehension. Operators that
could make a small input huge (`**`, `*`, `<<`, `@` and broadcasting) are checked before they run.
Evaluation is total: whatever it raises becomes a wrong answer's message, never the judge's error.
"""

from __future__ import annotations

import ast
import builtins
import math
import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.grading.torchlike import MATH, NP, TORCH, TorchArray
from grader.sandboxes.values import DTYPES, Tensor

MAX_ELEMENTS = 10_000_000  # of an array an operator may build
MAX_SEQUENCE = 1_000_000  # of a list or string `*` may build, and of a range
MAX_EXPONENT = 4096  # of an int ** int
MAX_TEXT = 2000
MESSAGE = 300  # characters of an error's message in a wrong answer

_ALLOWED = (
    ast.Expression, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp, ast.Call, ast.Attribute,
    ast.Subscript, ast.Slice, ast.Name, ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp,
    ast.GeneratorExp, ast.SetComp, ast.comprehension, ast.keyword, ast.Load, ast.Store, ast.operator,
    ast.unaryop, ast.cmpop, ast.boolop, ast.expr_context,
)  # fmt: skip
_GUARDED = (ast.Pow, ast.Mult, ast.LShift, ast.MatMult, ast.Add, ast.Sub, ast.Div, ast.FloorDiv, ast.Mod)
_OPERATORS = {
    ast.Pow: operator.pow,
    ast.Mult: operator.mul,
    ast.LShift: operator.lshift,
    ast.MatMult: operator.matmul,
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
# Attributes that reach frames and code (generators' gi_frame, ...) or the file system (arrays' tofile, dump).
_FORBIDDEN_PREFIXES = ("gi_", "f_", "cr_", "ag_", "tb_", "co_")
_FORBIDDEN_ATTRIBUTES = {"tofile", "dump", "dumps", "setflags", "resize", "fill", "put", "itemset", "ctypes", "base"}
_FORBIDDEN_ATTRIBUTES |= {"data", "load", "save", "fromfile", "memmap", "newbyteorder", "byteswap"}
_GUARD = "guarded_binop__"  # a name no expression can write (it ends in '__' and is bound only here)


class ExpressionError(ValueError):
    """An expression that is not allowed, or does not compile."""


def _limited_range(*args: int) -> range:
    span = range(*args)
    if len(span) > MAX_SEQUENCE:
        raise ValueError(f"range of more than {MAX_SEQUENCE} numbers")
    return span


BUILTINS = {
    name: getattr(builtins, name)
    for name in (
        "abs", "min", "max", "sum", "len", "all", "any", "round", "float", "int", "bool", "list", "tuple",
        "sorted", "set", "zip", "enumerate", "reversed", "str", "dict", "isinstance", "True", "False", "None",
    )
}  # fmt: skip
BUILTINS["range"] = _limited_range


def _guarded(op: int, left: Any, right: Any) -> Any:
    """left <op> right, refused first when it would build something far larger than its operands."""
    kind = list(_OPERATORS)[op]
    if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
        left_shape, right_shape = np.shape(left), np.shape(right)
        if kind is ast.MatMult and len(left_shape) >= 1 and len(right_shape) >= 1:
            out = math.prod(left_shape[:-1]) * math.prod(right_shape[1:] if len(right_shape) > 1 else ())
        else:
            out = math.prod(np.broadcast_shapes(left_shape, right_shape))
        if out > MAX_ELEMENTS:
            raise ValueError(f"the result would have {out} elements (at most {MAX_ELEMENTS})")
    elif kind is ast.Pow and type(left) is int and type(right) is int and abs(left) > 1 and right > MAX_EXPONENT:
        raise ValueError(f"an integer power above {MAX_EXPONENT}")
    elif kind is ast.LShift and type(right) is int and right > MAX_EXPONENT:
        raise ValueError(f"a shift above {MAX_EXPONENT}")
    elif kind is ast.Mult:
        for seq, count in ((left, right), (right, left)):
            if (
                isinstance(seq, (str, bytes, list, tuple))
                and isinstance(count, int)
                and len(seq) * count > MAX_SEQUENCE
            ):
                raise ValueError(f"a sequence longer than {MAX_SEQUENCE}")
    return _OPERATORS[kind](left, right)


class _Guard(ast.NodeTransformer):
    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.op, _GUARDED):
            return node
        index = list(_OPERATORS).index(type(node.op))
        call = ast.Call(ast.Name(_GUARD, ast.Load()), [ast.Constant(index), node.left, node.right], [])
        return ast.copy_location(call, node)


def _validate(tree: ast.AST) -> None:
    comprehensions = 0
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise ExpressionError(f"{type(node).__name__} is not allowed in an expression")
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name is not None and name.startswith("_"):
            raise ExpressionError(f"names starting with '_' are not allowed ({name})")
        if isinstance(node, ast.Attribute) and (
            node.attr in _FORBIDDEN_ATTRIBUTES or node.attr.startswith(_FORBIDDEN_PREFIXES)
        ):
            raise ExpressionError(f"the attribute {node.attr!r} is not allowed")
        if isinstance(node, ast.keyword) and node.arg is None:
            raise ExpressionError("**keyword arguments are not allowed")
        comprehensions += isinstance(node, ast.comprehension)
    if comprehensions > 1:
        raise ExpressionError("at most one `for` in an expression")


@dataclass(frozen=True)
class Expression:
    text: str
    code: Any  # a code object

    def evaluate(self, names: dict[str, Any]) -> Any:
        scope = {"torch": TORCH, "np": NP, "math": MATH, **names, "__builtins__": BUILTINS, _GUARD: _guarded}
        return eval(self.code, scope)  # noqa: S307 - a validated expression over a restricted namespace


def compile_expression(text: str) -> Expression:
    """The expression, checked and compiled; ExpressionError saying what is wrong (with its column)."""
    if len(text) > MAX_TEXT:
        raise ExpressionError(f"an expression is at most {MAX_TEXT} characters")
    try:
        tree = ast.parse(text.strip(), "<expression>", mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"does not parse: {exc.msg} (column {exc.offset})") from None
    _validate(tree)
    guarded = ast.fix_missing_locations(_Guard().visit(tree))
    return Expression(text, compile(guarded, "<expression>", "eval", dont_inherit=True))


# -- decoded values in, decoded values out ------------------------------------------------------------------
def expression_names(got: Any) -> dict[str, Any]:
    """The names an expression sees: each top-level key of the returned dict that is an identifier, tensors
    as TorchArrays (read-only views of the decoded bytes)."""
    if not isinstance(got, dict):
        return {}
    return {key: as_input(value) for key, value in got.items() if key.isidentifier() and not key.startswith("_")}


def as_input(value: Any) -> Any:
    if isinstance(value, Tensor):
        return value.array.view(TorchArray)
    if isinstance(value, list):
        return [as_input(item) for item in value]
    if isinstance(value, tuple):
        return tuple(as_input(item) for item in value)
    if isinstance(value, dict):
        return {key: as_input(item) for key, item in value.items()}
    return value


_WIRE = {np.dtype(dtype): name for name, dtype in DTYPES.items() if name not in ("bfloat16",) and "8_" not in name}


def as_value(result: Any, like: Any) -> Any:
    """An expression's result as a decoded value to compare with `like` (what the submission returned): arrays
    become tensors (0-d ones numbers, unless a tensor is compared), NumPy scalars Python numbers."""
    if isinstance(result, np.ndarray):
        if result.ndim == 0 and not isinstance(like, Tensor):
            return as_value(result.item(), like)
        array = np.ascontiguousarray(result.view(np.ndarray))
        if isinstance(like, Tensor) and DTYPES[like.dtype] == array.dtype:
            return Tensor(like.dtype, array)  # bfloat16 and fp8 travel as float32
        if array.dtype not in _WIRE:
            raise TypeError(f"the expression gives an array of dtype {array.dtype}")
        return Tensor(_WIRE[array.dtype], array)
    if isinstance(result, np.bool_):
        return bool(result)
    if isinstance(result, np.integer):
        return int(result)
    if isinstance(result, np.floating):
        return float(result)
    if isinstance(result, (list, tuple)):
        items = [as_value(item, like[i] if isinstance(like, (list, tuple)) and i < len(like) else None)
                 for i, item in enumerate(result)]  # fmt: skip
        return items if isinstance(result, list) else tuple(items)
    if isinstance(result, dict):
        return {key: as_value(item, like.get(key) if isinstance(like, dict) else None) for key, item in result.items()}
    if result is None or isinstance(result, (bool, int, float, str)):
        return result
    raise TypeError(f"the expression gives a {type(result).__name__}, which cannot be compared")


def truth(result: Any) -> bool:
    """A `holds:` expression's result as a truth value: a bool, or an array of one element."""
    if isinstance(result, (bool, np.bool_)):
        return bool(result)
    if isinstance(result, np.ndarray) and result.size == 1 and result.dtype == np.bool_:
        return bool(result.reshape(-1)[0])
    raise TypeError(f"the expression gives a {type(result).__name__}, not True or False")


def failure_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= MESSAGE else text[: MESSAGE - 1] + "…"
