"""Comparison rules, one module per rule, chosen by name in a problem file (`checker:` on a test).

Each module here defines CHECKER, a Checker: its name, what it does, the model of the options a test
gives per returned key (`check:`), and compare(expected, got, check); and, for a rule that judges some
keys by properties of the submission's own values rather than by the reference's, properties(got, check):
each such key's failing properties (hints compare mistakes by them, grading/hints.py). The rules are
found by looking at this package, so a new one is its module, its tests and its line in
docs/problems.md; nothing else changes. Checkers run on the trusted side, on decoded values (plain
numbers, strings and numpy arrays): never on anything the sandbox could call.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import BaseModel

from grader.grading.compare import Comparison

DEFAULT = "tolerance"


@dataclass(frozen=True)
class Checker:
    name: str
    description: str
    options: type[BaseModel]  # what a test may say per returned key, under `check:`
    rule: Callable[[Any, Any, Mapping[str, BaseModel]], Comparison]
    # key -> the names of its properties that fail, for each key judged by properties of its own values
    properties: Callable[[Any, Mapping[str, BaseModel]], dict[str, frozenset[str]]] | None = None

    def parse(self, check: Mapping[str, Any]) -> dict[str, BaseModel]:
        """A test's `check:` mapping as validated options (raises pydantic's ValidationError)."""
        return {
            key: value if isinstance(value, self.options) else self.options.model_validate(value)
            for key, value in check.items()
        }

    def compare(self, expected: Any, got: Any, check: Mapping[str, Any]) -> Comparison:
        return self.rule(expected, got, self.parse(check))

    def failing_properties(self, got: Any, check: Mapping[str, Any]) -> dict[str, frozenset[str]]:
        """For each key this rule judges by properties of `got` itself, the properties that fail."""
        return self.properties(got, self.parse(check)) if self.properties is not None else {}


@cache
def all_checkers() -> dict[str, Checker]:
    found: dict[str, Checker] = {}
    for module_info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        checker = getattr(module, "CHECKER", None)
        if isinstance(checker, Checker):
            found[checker.name] = checker
    return found


def names() -> list[str]:
    return sorted(all_checkers())


def get(name: str) -> Checker:
    try:
        return all_checkers()[name]
    except KeyError:
        raise KeyError(f"unknown checker {name!r}; known: {', '.join(names())}") from None
