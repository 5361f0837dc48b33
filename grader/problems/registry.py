"""Loads problems/*.yaml into memory, each validated on load; a bad file is refused with its name,
line and what is wrong, and the others still load."""

from __future__ import annotations

import hashlib
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from grader.problems.schema import Problem, duplicate_names

log = logging.getLogger(__name__)

MAX_PROBLEM_BYTES = 2 * 1024 * 1024


class ProblemError(Exception):
    """A problem file that cannot be used; the message names the file and the line."""

    def __init__(self, source: str, problems: list[tuple[int | None, str]]) -> None:
        self.source = source
        self.problems = problems
        super().__init__("\n".join(self.lines()))

    def lines(self) -> list[str]:
        return [f"{self.source}:{line}: {text}" if line else f"{self.source}: {text}" for line, text in self.problems]


@dataclass(frozen=True)
class EffectiveLimits:
    time_s: float
    memory_mb: int
    output_kb: int

    def as_dict(self) -> dict[str, Any]:
        return {"time_s": self.time_s, "memory_mb": self.memory_mb, "output_kb": self.output_kb}


@dataclass(frozen=True)
class LoadedProblem:
    problem: Problem
    version: str
    limits: EffectiveLimits
    path: Path | None = None

    @property
    def id(self) -> str:
        return self.problem.id


def _line_of(root: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """The 1-based line of the YAML node at a pydantic error location (the nearest one that exists)."""
    node = root
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                    node = value
                    line = key.start_mark.line + 1
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def problem_version(problem: Problem) -> str:
    return hashlib.sha256(problem.model_dump_json().encode()).hexdigest()[:16]


def parse_problem(text: str, source: str) -> Problem:
    """Parses and validates one problem file's text; raises ProblemError naming lines."""
    if len(text.encode("utf-8", "replace")) > MAX_PROBLEM_BYTES:
        raise ProblemError(source, [(None, f"the file is larger than {MAX_PROBLEM_BYTES} bytes")])
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise ProblemError(source, [(line, f"YAML syntax error: {exc.problem or exc}")]) from None
    except yaml.YAMLError as exc:
        raise ProblemError(source, [(None, f"YAML error: {exc}")]) from None
    if not isinstance(data, dict):
        raise ProblemError(source, [(1, "a problem file must be a mapping of fields (id, title, tests, ...)")])
    try:
        problem = Problem.model_validate(data)
    except ValidationError as exc:
        found = []
        for error in exc.errors():
            loc = tuple(error["loc"])
            field = ".".join(str(part) for part in loc) or "(top level)"
            message = error["msg"].removeprefix("Value error, ")
            found.append((_line_of(root, loc), f"{field}: {message}"))
        raise ProblemError(source, found) from None
    duplicates = duplicate_names(problem)
    if duplicates:
        raise ProblemError(
            source, [(_line_of(root, loc), f"{'.'.join(map(str, loc))}: {message}") for loc, message in duplicates]
        )
    return problem


class Registry:
    """The problems the service knows, by id; replaced whole on reload so readers never see half."""

    def __init__(self, defaults: EffectiveLimits) -> None:
        self.defaults = defaults
        self._problems: dict[str, LoadedProblem] = {}
        self._lock = threading.Lock()
        self.errors: list[ProblemError] = []

    def make(self, problem: Problem, path: Path | None = None) -> LoadedProblem:
        limits = EffectiveLimits(
            time_s=problem.limits.time_s or self.defaults.time_s,
            memory_mb=problem.limits.memory_mb or self.defaults.memory_mb,
            output_kb=problem.limits.output_kb or self.defaults.output_kb,
        )
        return LoadedProblem(problem=problem, version=problem_version(problem), limits=limits, path=path)

    def load_dir(self, directory: Path) -> list[ProblemError]:
        loaded: dict[str, LoadedProblem] = {}
        errors: list[ProblemError] = []
        for path in sorted(directory.glob("*.yaml")) + sorted(directory.glob("*.yml")):
            try:
                text = path.read_text(encoding="utf-8")
                problem = parse_problem(text, path.name)
            except UnicodeDecodeError:
                errors.append(ProblemError(path.name, [(None, "the file is not UTF-8 text")]))
                continue
            except ProblemError as exc:
                errors.append(exc)
                continue
            if problem.id in loaded:
                errors.append(
                    ProblemError(
                        path.name, [(1, f"id: {problem.id!r} is already defined by {loaded[problem.id].path}")]
                    )
                )
                continue
            loaded[problem.id] = self.make(problem, path)
        for error in errors:
            log.error("problem file refused: %s", error)
        with self._lock:
            self._problems = loaded
            self.errors = errors
        return errors

    def get(self, problem_id: str) -> LoadedProblem | None:
        return self._problems.get(problem_id)

    def all(self) -> list[LoadedProblem]:
        return sorted(self._problems.values(), key=lambda p: p.id)
