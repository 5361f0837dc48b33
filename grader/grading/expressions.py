"""`expect:` and `holds:` expressions: Python expressions a problem's author writes, evaluated on the
trusted side over the values a submission returned (already decoded and size-bounded), never in the
sandbox and never on a sandbox object.

Compiled once, when the problem loads. An expression may use the top-level keys of the returned dict,
`torch`, `np` and `math` (restricted namespaces, grading/torchlike.py) and a few builtins; no name or
attribute starting with `_`, no lambda, f-string, assignment or nested comprehension. Every node that
could make a small input huge (operators and broadcasting, comparisons, indexing with arrays, calls and
methods) is checked before it runs (grading/guards.py), and the whole runs in a judge process whose memory
and CPU the kernel bounds (grading/isolated.py). Evaluation is total: whatever it raises becomes a wrong
answer's message (but MemoryError, that process's limit: the test's error), never the judge's error.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.containers.values import DTYPES, FLOAT_DTYPES, Tensor, wire_name
from grader.grading import guards
from grader.grading.torchlike import MATH, NP, TORCH, TorchArray

MAX_ELEMENTS, MAX_SEQUENCE, MAX_EXPONENT = guards.MAX_ELEMENTS, guards.MAX_SEQUENCE, guards.MAX_EXPONENT
MAX_TEXT = 2000
MESSAGE = 300  # characters of an error's message in a wrong answer
# Real floating scalars of every wire dtype (NumPy's np.floating does not cover bfloat16 and fp8).
NUMBERS = (np.floating, *(DTYPES[name].type for name in FLOAT_DTYPES if not name.startswith("complex")))

_ALLOWED = (
    ast.Expression, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp, ast.Call, ast.Attribute,
    ast.Subscript, ast.Slice, ast.Name, ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp,
    ast.GeneratorExp, ast.SetComp, ast.comprehension, ast.keyword, ast.Load, ast.Store, ast.operator,
    ast.unaryop, ast.cmpop, ast.boolop, ast.expr_context,
)  # fmt: skip
# Attributes that reach frames and code (generators' gi_frame, ...) or the file system (arrays' tofile, dump).
_FORBIDDEN_PREFIXES = ("gi_", "f_", "cr_", "ag_", "tb_", "co_")
_FORBIDDEN_ATTRIBUTES = {"tofile", "dump", "dumps", "setflags", "resize", "fill", "put", "itemset", "ctypes", "base"}
_FORBIDDEN_ATTRIBUTES |= {"data", "load", "save", "fromfile", "memmap", "newbyteorder", "byteswap"}
# ufuncs' methods that build or write more than their operands (np.maximum.outer(a, b) is a.size * b.size).
_FORBIDDEN_ATTRIBUTES |= {"outer", "at", "reduceat", "accumulate"}
# The guards (grading/guards.py) in an expression's scope, under names bound only there.
_GUARDS = {
    "guard_binop__": guards.binop,
    "guard_compare__": guards.compare,
    "guard_subscript__": guards.subscript,
    "guard_call__": guards.call,
    "guard_iterate__": guards.iterate,
    "guard_slice__": slice,
}


class ExpressionError(ValueError):
    """An expression that is not allowed, or does not compile."""


def _limited_range(*args: int) -> range:
    span = range(*args)
    if len(span) > MAX_SEQUENCE:
        raise ValueError(f"a range of {len(span)} numbers (at most {MAX_SEQUENCE})")
    return span


BUILTINS = {
    name: getattr(builtins, name)
    for name in (
        "abs", "min", "max", "sum", "len", "all", "any", "round", "float", "int", "bool", "list", "tuple",
        "sorted", "set", "zip", "enumerate", "reversed", "str", "dict", "isinstance", "True", "False", "None",
    )
}  # fmt: skip
BUILTINS["range"] = _limited_range


def _guard_call(name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(ast.Name(name, ast.Load()), list(args), [])


def _index(node: ast.expr) -> ast.expr:
    """A subscript's index as an expression of its own: slices become slice(...) calls."""
    if isinstance(node, ast.Slice):
        parts = [part if part is not None else ast.Constant(None) for part in (node.lower, node.upper, node.step)]
        return _guard_call("guard_slice__", *parts)
    if isinstance(node, ast.Tuple):
        return ast.Tuple([_index(element) for element in node.elts], ast.Load())
    return node


class _Guard(ast.NodeTransformer):
    """Every node kind that can allocate, rewritten into its guard (grading/guards.py)."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        kind = ast.Constant(guards.BINARY_KINDS.index(type(node.op)))
        return ast.copy_location(_guard_call("guard_binop__", kind, node.left, node.right), node)

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        operands = [node.left, *node.comparators]
        pairs: list[ast.expr] = [
            _guard_call("guard_compare__", ast.Constant(guards.COMPARISON_KINDS.index(type(op))), left, right)
            for op, left, right in zip(node.ops, operands, operands[1:], strict=False)
        ]  # a chain a < b < c as (a < b) and (b < c): b is pure, evaluated twice
        guarded = pairs[0] if len(pairs) == 1 else ast.BoolOp(ast.And(), pairs)
        return ast.copy_location(guarded, node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        return ast.copy_location(_guard_call("guard_subscript__", node.value, _index(node.slice)), node)

    def visit_comprehension(self, node: ast.comprehension) -> ast.AST:
        self.generic_visit(node)
        node.iter = ast.copy_location(_guard_call("guard_iterate__", node.iter), node.iter)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        arguments = ast.Tuple(list(node.args), ast.Load())
        names = [ast.Constant(keyword.arg) for keyword in node.keywords]
        keywords = ast.Dict(names, [keyword.value for keyword in node.keywords])  # type: ignore[arg-type]
        return ast.copy_location(_guard_call("guard_call__", node.func, arguments, keywords), node)


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
        scope = {"torch": TORCH, "np": NP, "math": MATH, **names, "__builtins__": BUILTINS, **_GUARDS}
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


def as_value(result: Any, like: Any) -> Any:
    """An expression's result as a decoded value to compare with `like` (what the submission returned): arrays
    become tensors of their own dtype (0-d ones numbers, unless a tensor is compared), NumPy scalars Python
    numbers."""
    if isinstance(result, np.ndarray):
        if result.ndim == 0 and not isinstance(like, Tensor):
            return as_value(result.item(), like)
        array = np.ascontiguousarray(result.view(np.ndarray))
        name = wire_name(array.dtype)
        if name is None:
            raise TypeError(f"the expression gives an array of dtype {array.dtype}")
        return Tensor(name, array.astype(DTYPES[name], copy=False))
    if isinstance(result, np.bool_):
        return bool(result)
    if isinstance(result, np.integer):
        return int(result)
    if isinstance(result, NUMBERS):
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
