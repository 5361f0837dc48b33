"""A problem's forbidden names (its `forbid:`), replaced in a submission's child before the module loads.

The trusted side refuses a source that names one (grader/grading/source_rules.py); what the source reaches
without naming it (`getattr(F, "scaled_dot" + "_product_attention")`, another module that holds the same
function) meets the replacement here: every attribute of every module loaded so far that holds the forbidden
object is pointed at a function that raises Forbidden, which fails the test that calls it with the rule's name.
Torch's own code that calls the name through those attributes fails the same way, as the rule means, and so
does torch.ops.aten's operator of the same name. The runner's own modules keep theirs, and a class or a class's
method is never replaced (the problem file may not name one: grader/problems/schema.py). What is left is what no
Python attribute holds as the same object: another operator that computes the same (a backend's own variant),
or the original found through the garbage collector.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable
from typing import Any

OWN = __name__.rpartition(".")[0]  # the runner's package: "runner" in the image, "sandbox.runner" on a host


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
        owner, _, attribute = name.rpartition(".")
        if isinstance(original, type) or isinstance(_resolve(owner), type):
            missing.append(name)  # a class, or a class's method: never replaced (the judge's own code uses them)
            continue
        replacement = _refusal(name)
        try:  # torch.ops.aten's operator of the same name, which no module attribute holds
            import torch

            if hasattr(torch.ops.aten, attribute):
                setattr(torch.ops.aten, attribute, replacement)
        except Exception:  # noqa: BLE001 - no such operator namespace in this torch
            pass
        for module_name, module in list(sys.modules.items()):
            if module_name == OWN or module_name.startswith(OWN + "."):
                continue  # the judge's own code keeps what it calls
            try:
                held = [key for key, value in vars(module).items() if value is original]
                for key in held:
                    setattr(module, key, replacement)
            except Exception:  # noqa: BLE001 - a module without a namespace, or one that refuses a new attribute
                continue
    return missing
