"""Verdicts decided inside the sandbox: a test that returns a bool its own code computes about the
submission (`torch.equal(x, before)`, `torch.allclose(...)`, `(a == b).all().item()`, `x.is_contiguous()`,
`isinstance(m, nn.Module)`, `x.shape == (2, 3)`). The test's code runs in the submission's process, where
the submission can replace torch.equal, Tensor.all or Tensor.__eq__ and forge True; the judge then
compares a True with the reference's True. Found statically, from the test's code alone: a value returned
(a dict's value, or the whole value) that is, or is a name assigned from, or holds, such a computation.

A bool the entry point returns (`return {"mask": f(x)}`) is the submission's own answer and not flagged;
neither is an attribute read off what it built (`p.requires_grad`)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

# torch.<name>(...) and the builtins that compute a bool (or a bool tensor) about their arguments.
TORCH_TESTS = {
    "equal", "allclose", "isclose", "is_tensor", "is_floating_point", "is_complex", "is_nonzero", "isfinite",
    "isnan", "isinf", "isneginf", "isposinf", "isreal", "eq", "ne", "lt", "le", "gt", "ge", "greater",
    "less", "greater_equal", "less_equal", "not_equal", "all", "any", "logical_and", "logical_or",
    "logical_not", "logical_xor", "is_grad_enabled", "is_inference_mode_enabled",
}  # fmt: skip
BUILTIN_TESTS = {"bool", "isinstance", "issubclass", "hasattr", "callable", "all", "any"}
# x.<name>(...): the methods of a tensor (or a NumPy array) that compute a bool about it.
METHOD_TESTS = {
    "all", "any", "equal", "allclose", "isclose", "eq", "ne", "lt", "le", "gt", "ge", "isfinite", "isnan",
    "isinf", "is_contiguous", "is_floating_point", "is_complex", "is_nonzero", "is_same_size", "is_set_to",
    "logical_and", "logical_or", "logical_not", "logical_xor", "array_equal",
}  # fmt: skip
# Calls that carry a bool through: int(flag), torch.tensor(flag), np.asarray(flag).
CARRIERS = {"int", "float", "list", "tuple", "sorted", "str", "tensor", "as_tensor", "asarray", "array"}


@dataclass(frozen=True)
class Found:
    """A returned value the test computes: its key (None for the whole value), the line in the code, and
    the computation (its source, shortened)."""

    key: str | None
    line: int
    what: str


def _dotted(node: ast.expr) -> str:
    """`torch.equal` for torch.equal, `equal` for a bare name, '' otherwise."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


class _Scope:
    """The names and functions of one function body (the test's code, or a function defined in it or in
    the helpers) that hold a computed bool."""

    def __init__(self, functions: set[str], names: set[str] | None = None) -> None:
        self.functions = functions
        self.names: set[str] = set(names or ())

    def computed(self, node: ast.expr | None) -> ast.expr | None:  # noqa: C901 (one case per node type)
        """The sub-expression that makes `node` a bool the code computes, or None."""
        if node is None:
            return None
        if isinstance(node, ast.Compare):
            return node
        if isinstance(node, ast.Name):
            return node if node.id in self.names else None
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.BoolOp):
            return next((found for value in node.values if (found := self.computed(value))), None)
        if isinstance(node, ast.UnaryOp):
            return node if isinstance(node.op, ast.Not) else self.computed(node.operand)
        if isinstance(node, ast.BinOp):  # (a == b) & (c == d), (x > 0) * 1; not f(x) & padding
            sides = [side for side in (node.left, node.right) if not isinstance(side, ast.Constant)]
            found = [self.computed(side) for side in sides]
            return found[0] if found and all(found) else None
        if isinstance(node, ast.IfExp):
            return self.computed(node.body) or self.computed(node.orelse)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return next((found for value in node.elts if (found := self.computed(value))), None)
        if isinstance(node, ast.Dict):
            return next((found for value in node.values if (found := self.computed(value))), None)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self.computed(node.elt)
        if isinstance(node, ast.DictComp):
            return self.computed(node.value)
        if isinstance(node, (ast.Subscript, ast.Starred)):
            return self.computed(node.value)
        if isinstance(node, ast.NamedExpr):
            return self.computed(node.value)
        return None

    def _call(self, node: ast.Call) -> ast.expr | None:
        name = _dotted(node.func)
        head, _, last = name.rpartition(".")
        if name in BUILTIN_TESTS or name in self.functions:
            return node
        if head in ("torch", "np", "numpy") and last in TORCH_TESTS:
            return node
        if isinstance(node.func, ast.Attribute):
            if node.func.attr in METHOD_TESTS:
                return node
            if found := self.computed(node.func.value):  # flag.item(), flag.float().mean(), ...
                return found
        if (last or name) in CARRIERS:
            return next((found for arg in node.args if (found := self.computed(arg))), None)
        return None


def _own_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of a function body outside the functions and classes defined in it."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _target_names(target: ast.expr) -> list[str]:
    """The names an assignment's target binds, or whose content it changes (`d["k"] = ...`)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Subscript, ast.Attribute, ast.Starred)):
        return _target_names(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _target_names(element)]
    return []


def _stores(body: list[ast.stmt]) -> Iterator[tuple[list[str], ast.expr]]:
    """(names, value) for every value a name of the body is given or is added: assignments, `for` targets,
    `ok.append(flag)`, `ok += [flag]`."""
    for node in _own_nodes(body):
        if isinstance(node, ast.Assign):
            yield [name for target in node.targets for name in _target_names(target)], node.value
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            yield _target_names(node.target), node.value
        elif isinstance(node, ast.NamedExpr):
            yield _target_names(node.target), node.value
        elif isinstance(node, (ast.For, ast.comprehension)):
            yield _target_names(node.target), node.iter
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("append", "extend", "add", "insert", "update", "setdefault"):
                for arg in [*node.args, *(keyword.value for keyword in node.keywords)]:
                    yield _target_names(node.func.value), arg


def _scope(body: list[ast.stmt], functions: set[str]) -> _Scope:
    """The scope of a body, its names followed through assignments until nothing changes."""
    scope = _Scope(functions)
    stores = list(_stores(body))
    changed = True
    while changed:
        changed = False
        for names, value in stores:
            fresh = [name for name in names if name not in scope.names]
            if fresh and scope.computed(value) is not None:
                scope.names.update(fresh)
                changed = True
    return scope


def _returns(body: list[ast.stmt]) -> list[ast.Return]:
    return [node for node in _own_nodes(body) if isinstance(node, ast.Return) and node.value is not None]


def _bool_functions(trees: list[ast.Module]) -> set[str]:
    """The functions (of the helpers or of the test's code, at any depth) that return a computed bool."""
    defined = [
        node for tree in trees for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for function in defined:
            if function.name in found:
                continue
            scope = _scope(function.body, found)
            if any(scope.computed(node.value) is not None for node in _returns(function.body)):
                found.add(function.name)
                changed = True
    return found


def _short(node: ast.expr, code: str) -> str:
    text = " ".join((ast.get_source_segment(code, node) or ast.unparse(node)).split())
    return text if len(text) <= 60 else text[:57] + "..."


def _key(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _dict_items(value: ast.expr, scope: _Scope, body: list[ast.stmt]) -> list[tuple[str | None, ast.expr]]:
    """(key, value) of a returned dict: a literal, `dict(k=...)`, or a name given one, with the keys
    it is given later (`result["k"] = ...`); [(None, value)] for anything else."""
    if isinstance(value, ast.Dict):
        return [(_key(key), item) for key, item in zip(value.keys, value.values, strict=True)]
    if isinstance(value, ast.Call) and _dotted(value.func) == "dict" and not value.args:
        return [(keyword.arg, keyword.value) for keyword in value.keywords]
    if isinstance(value, ast.Name):
        items: list[tuple[str | None, ast.expr]] = []
        for node in _own_nodes(body):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id == value.id:
                        items += _dict_items(node.value, scope, []) if isinstance(node.value, ast.Dict) else []
                    elif isinstance(target, ast.Subscript) and _dotted(target.value) == value.id:
                        items.append((_key(target.slice), node.value))
        if items:
            return items
    return [(None, value)]


def computed_bools(code: str, helpers: str = "") -> list[Found]:
    """The values the test's code returns that are bools it computes; [] for code that does not parse
    (the sandbox reports that)."""
    try:
        tree = ast.parse(code)
        helper_tree = ast.parse(helpers) if helpers else ast.Module(body=[], type_ignores=[])
    except SyntaxError:
        return []
    functions = _bool_functions([tree, helper_tree])
    scope = _scope(tree.body, functions)
    found: list[Found] = []
    for node in _returns(tree.body):
        assert node.value is not None
        for key, value in _dict_items(node.value, scope, tree.body):
            culprit = scope.computed(value)
            if culprit is not None:
                found.append(Found(key, value.lineno, _short(culprit, code)))
    return found
