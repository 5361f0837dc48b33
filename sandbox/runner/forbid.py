"""A problem's forbidden names (its `forbid:`), replaced in a submission's child before the module loads.

The trusted side refuses a source that names one (grader/grading/source_rules.py); what the source reaches
without naming it (`getattr(F, "scaled_dot" + "_product_attention")`, another module that holds the same
function) meets the replacement here: every attribute of every module loaded so far that holds the forbidden
object is pointed at a function that raises Forbidden, which fails the test that calls it with the rule's name.
Torch's own code that calls the name through those attributes fails the same way, as the rule means. What is
left is what no Python attribute holds (a compiled path that calls the kernel without looking the name up).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable
from typing import Any


class Forbidden(Exception):
    """A call of a name the problem forbids."""


def _resolve(name: str) -> Any:
    """The object a dotted name stands for: the longest importable module, then attributes; None if none."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # noqa: BLE001 - not a module (or one that fails to import): a shorter prefix then
            continue
        try:
            for part in parts[cut:]:
                found = getattr(found, part)
        except AttributeError:
            return None
        return found
    return None


def _refusal(name: str) -> Callable[..., Any]:
    def forbidden(*_args: Any, **_kwargs: Any) -> Any:
        raise Forbidden(f"{name} is forbidden in this problem (forbid:)")

    forbidden.__name__ = forbidden.__qualname__ = name.rsplit(".", 1)[-1]
    return forbidden


def apply(names: Iterable[str]) -> list[str]:
    """Each name replaced wherever a loaded module holds its object; the names found nowhere (a typo, or a
    torch without them) are returned."""
    missing = []
    for name in names:
        original = _resolve(name)
        if original is None:
            missing.append(name)
            continue
        replacement = _refusal(name)
        owner, _, attribute = name.rpartition(".")
        try:  # where it was named (a class's method too: torch.Tensor.softmax)
            setattr(_resolve(owner), attribute, replacement)
        except Exception:  # noqa: BLE001 - an owner that refuses a new attribute: the modules below, then
            pass
        for module in list(sys.modules.values()):
            try:
                held = [key for key, value in vars(module).items() if value is original]
                for key in held:
                    setattr(module, key, replacement)
            except Exception:  # noqa: BLE001 - a module without a namespace, or one that refuses a new attribute
                continue
    return missing
