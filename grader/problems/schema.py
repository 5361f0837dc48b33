"""The problem file, as pydantic models: validated once, when the file is loaded."""

from __future__ import annotations

import keyword
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

ID_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Tolerance(Strict):
    rtol: float = Field(1e-5, ge=0)
    atol: float = Field(1e-6, ge=0)


class Limits(Strict):
    time_s: float | None = Field(None, gt=0, le=60)
    memory_mb: int | None = Field(None, ge=64, le=16384)
    output_kb: int | None = Field(None, ge=1, le=65536)


class TestCase(Strict):
    name: str = Field(min_length=1, max_length=200)
    visible: bool = False
    weight: float = Field(1.0, gt=0)
    code: str = Field(min_length=1)
    check: dict[str, Tolerance] = Field(default_factory=dict)

    @field_validator("code")
    @classmethod
    def _compiles(cls, code: str) -> str:
        body = "".join("    " + line + "\n" for line in code.splitlines())
        try:
            compile("def __test__():\n" + body, "<test>", "exec", dont_inherit=True)
        except SyntaxError as exc:
            raise ValueError(f"test code does not compile: line {(exc.lineno or 2) - 1}: {exc.msg}") from exc
        return code


class Pitfall(Strict):
    name: str = Field(min_length=1, max_length=200)
    hint: str = Field(min_length=1, max_length=2000)
    code: str = Field(min_length=1)


class Problem(Strict):
    id: str = Field(pattern=ID_PATTERN, max_length=64)
    title: str = Field(min_length=1, max_length=200)
    source: str = ""
    difficulty: Literal["easy", "medium", "hard"]
    tags: list[str] = Field(default_factory=list)
    statement: str = Field(min_length=1)
    starter_code: str = Field(min_length=1)
    entry_points: list[str] = Field(min_length=1)
    reference: str = Field(min_length=1)
    limits: Limits = Field(default_factory=Limits)
    tests: list[TestCase] = Field(min_length=1)
    pitfalls: list[Pitfall] = Field(default_factory=list)

    @field_validator("entry_points")
    @classmethod
    def _identifiers(cls, names: list[str]) -> list[str]:
        for name in names:
            if not name.isidentifier() or keyword.iskeyword(name):
                raise ValueError(f"{name!r} is not a Python function name")
        if len(set(names)) != len(names):
            raise ValueError("entry points must be unique")
        return names

    @field_validator("reference", "starter_code")
    @classmethod
    def _module_compiles(cls, source: str) -> str:
        try:
            compile(source, "<module>", "exec", dont_inherit=True)
        except SyntaxError as exc:
            raise ValueError(f"does not compile: line {exc.lineno}: {exc.msg}") from exc
        return source


def duplicate_names(problem: Problem) -> list[tuple[tuple[str | int, ...], str]]:
    """Each repeated test or pitfall name, with the location of the repeat."""
    found: list[tuple[tuple[str | int, ...], str]] = []
    for field, kind, names in (
        ("tests", "test", [t.name for t in problem.tests]),
        ("pitfalls", "pitfall", [p.name for p in problem.pitfalls]),
    ):
        seen: set[str] = set()
        for index, name in enumerate(names):
            if name in seen:
                found.append(((field, index, "name"), f"two {kind}s are named {name!r}"))
            seen.add(name)
    return found
