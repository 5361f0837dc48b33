"""A problem's `forbid:` and `require:` rules, read from a submission's source on the trusted side.

Every dotted name the source uses is resolved through its imports (`import torch.nn.functional as F`, `from
torch.nn import functional`, `from torch.nn.functional import scaled_dot_product_attention as attend`): a use of a
forbidden name (or of something inside it) is refused with its line, and a required name the source never uses is
refused. What the source reaches without naming it (`getattr(F, "scaled_dot" + "_product_attention")`) is the
sandbox's to catch: there the forbidden function is replaced by one that fails the test (sandbox/runner/forbid.py).
Parsing is bounded by the source's own size (a submission's source is capped before it gets here); a source that
does not parse is the sandbox's compile_error, not a rule's.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Violation:
    message: str
    line: int | None = None


def _dotted(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """The dotted name an expression spells (`F.relu` -> torch.nn.functional.relu), through the imports."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(aliases.get(node.id, node.id))
    return ".".join(reversed(parts))


def _aliases(tree: ast.AST) -> dict[str, str]:
    """What each name an import binds stands for, wherever the import is (a function's own included)."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    first = alias.name.split(".")[0]
                    aliases[first] = first
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def _uses(tree: ast.AST, aliases: dict[str, str]) -> list[tuple[str, int]]:
    """Every dotted name the source uses, with its line: each chain of attributes once (its longest), and each
    import's own names."""
    found: list[tuple[str, int]] = []
    inner: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            inner.add(id(node.value))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Attribute, ast.Name)) and id(node) not in inner:
            name = _dotted(node, aliases)
            if name is not None:
                found.append((name, node.lineno))
        elif isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found += [(f"{node.module}.{alias.name}", node.lineno) for alias in node.names]
    return found


def _within(name: str, rule: str) -> bool:
    return name == rule or name.startswith(rule + ".")


def _spellings(rule: str) -> tuple[str, ...]:
    """A forbidden function and the other names torch gives the same operator (torch.ops.aten's, with its
    overloads, and the C modules behind torch.nn.functional and torch)."""
    last = rule.rpartition(".")[2]
    return (rule, f"torch.ops.aten.{last}", f"torch._C._nn.{last}", f"torch._C._VariableFunctions.{last}")


def violations(source: str, forbid: Sequence[str], require: Sequence[str]) -> list[Violation]:
    """The rules a source breaks, the first use of each forbidden name first; none where it does not parse."""
    if not forbid and not require:
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    aliases = _aliases(tree)
    uses = sorted(_uses(tree, aliases), key=lambda use: use[1])
    out = []
    for rule in forbid:
        spellings = _spellings(rule)
        line = next((line for name, line in uses if any(_within(name, each) for each in spellings)), None)
        if line is not None:
            out.append(Violation(f"line {line}: uses {rule}, which this problem forbids (forbid:)", line))
    for rule in require:
        if not any(_within(name, rule) for name, _ in uses):
            out.append(Violation(f"this problem requires a use of {rule} (require:), and the source never uses it"))
    return out
