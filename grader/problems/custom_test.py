"""A problem's custom-input test (`custom_test:` in a problem file): a test body the author wrote for
learners' own values, and the declaration of its arguments (types, dtypes, shapes, ranges, sizes) those
values are validated against (custom_input.py). On Run, a learner sends values, never code: the body
runs with them bound as names, the reference and the submission in separate containers.

The declaration is checked when the file loads: names that cannot clash with what a test has in scope,
bounds that name earlier int arguments only (no cycles), element caps within the schema's maximum, and
every default valid (the form on the problem page starts from them)."""

from __future__ import annotations

import keyword
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from grader.grading import checkers
from grader.problems.custom_input import (
    FLOAT_DTYPES,
    INPUT_DTYPES,
    INT_DTYPES,
    InputsRefused,
    Value,
    custom_code,
    parse_bound,
    validate_inputs,
)
from grader.problems.rules import NestedError, compiled_body, known_checker, parsed_check

DEFAULT_MAX_ELEMENTS = 10_000
MAX_ELEMENTS = 100_000  # of all tensor arguments together
MAX_ARGUMENTS = 16
MAX_RANK = 8
# Names every test has in scope (sandbox/runner/execute.py), and the test function's own.
RESERVED = frozenset({"torch", "nn", "F", "math", "np", "__test__", "__builtins__", "__name__"})

Bound = int | float | str


@dataclass(frozen=True)
class CustomCase:
    """The custom test on some values, as a test of the problem's (grading/model.py TestSpec)."""

    name: str
    code: str
    checker: str
    check: dict[str, Any] = field(default_factory=dict)
    visible: bool = True
    weight: float = 1.0
    seed: str = "fixed"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _identifier(name: str, what: str) -> str:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"{name!r} is not a Python name ({what})")
    if name in RESERVED or name.startswith("__"):
        raise ValueError(f"{name!r} is a name every test has in scope; choose another ({what})")
    return name


class Dimension(_Strict):
    """The sizes a named dimension may take (in every argument whose shape names it)."""

    min: int = Field(1, ge=0, le=MAX_ELEMENTS, description="the fewest entries along it")
    max: int = Field(ge=0, le=MAX_ELEMENTS, description="the most entries along it")

    @model_validator(mode="after")
    def _ordered(self) -> Dimension:
        if self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        return self


class Argument(_Strict):
    """One argument of the custom test: bound to its name in the test's body."""

    name: str = Field(description="a Python name, bound in the test's body")
    type: Literal["int", "float", "bool", "tensor"]
    dtype: str | None = Field(None, description=f"tensors only: one of {', '.join(INPUT_DTYPES)}")
    shape: list[int | str] | None = Field(
        None,
        max_length=MAX_RANK,
        description="tensors only: each dimension a size, or a name (shared between arguments: the same size "
        "wherever it appears; an int argument's name: that argument's value; else bounded by `dimensions`)",
    )
    min: Bound | None = Field(
        None,
        description="the least value (of every element, for a tensor): a number, or "
        "an int argument declared before this one, as `name`, `name - k` or `name + k`",
    )
    max: Bound | None = Field(None, description="the greatest value, as `min`")
    finite: bool = Field(True, description='floats: false also takes NaN and infinities (JSON "NaN", "Infinity")')
    max_elements: int = Field(
        DEFAULT_MAX_ELEMENTS, ge=1, le=MAX_ELEMENTS, description="tensors only: the most elements a value may have"
    )
    default: Any = Field(description="the value the problem page's form starts from; must itself be valid")
    description: str = Field("", max_length=500, description="shown beside the argument's field")

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        return _identifier(name, "an argument's name")

    @field_validator("shape")
    @classmethod
    def _dimensions(cls, shape: list[int | str] | None) -> list[int | str] | None:
        for size in shape or []:
            if isinstance(size, int) and not 0 <= size <= MAX_ELEMENTS:
                raise ValueError(f"a size must be 0 to {MAX_ELEMENTS}, not {size}")
            if isinstance(size, str):
                _identifier(size, "a dimension's name")
        return shape

    @model_validator(mode="after")
    def _fields_of_its_type(self) -> Argument:
        tensor = self.type == "tensor"
        if tensor and (self.dtype is None or self.shape is None):
            raise ValueError("a tensor argument needs a dtype and a shape")
        if not tensor and (self.dtype is not None or self.shape is not None):
            raise ValueError(f"dtype and shape are for tensors; this argument is a {self.type}")
        if tensor and self.dtype not in INPUT_DTYPES:
            raise ValueError(f"dtype {self.dtype!r} is not one of {', '.join(INPUT_DTYPES)}")
        kind = self.dtype if tensor else self.type
        if kind in ("bool",) and (self.min is not None or self.max is not None):
            raise ValueError("a bool takes no min or max")
        for bound in (self.min, self.max):
            if parse_bound(bound) is None and bound is not None and kind in ("int", *INT_DTYPES):
                if isinstance(bound, bool) or not isinstance(bound, int):
                    raise ValueError(f"the bounds of an integer must be integers, not {bound!r}")
        if not self.finite and kind not in ("float", *FLOAT_DTYPES):
            raise ValueError("finite is for floats")
        numeric = [bound for bound in (self.min, self.max) if bound is not None and parse_bound(bound) is None]
        if len(numeric) == 2 and numeric[0] > numeric[1]:  # type: ignore[operator]
            raise ValueError(f"min {self.min} is above max {self.max}")
        return self


class CustomTest(_Strict):
    """The problem's custom-input test (see the module's docstring and docs/problems.md)."""

    name: str = Field("your input", min_length=1, max_length=200, description="shown with the run's result")
    description: str = Field("", max_length=2000, description="shown above the form (Markdown not rendered)")
    arguments: list[Argument] = Field(min_length=1, max_length=MAX_ARGUMENTS)
    dimensions: dict[str, Dimension] = Field(default_factory=dict, description="sizes of named dimensions")
    code: str = Field(min_length=1, description="a test's body (as a test's `code`) with the arguments in scope")
    checker: str = Field(checkers.DEFAULT, description="as a test's")
    check: dict[str, Any] = Field(default_factory=dict, description="as a test's")
    _check: dict[str, Any] = PrivateAttr(default_factory=dict)  # parsed

    @field_validator("checker")
    @classmethod
    def _known_checker(cls, name: str) -> str:
        return known_checker(name)

    @field_validator("check")
    @classmethod
    def _checker_options(cls, check: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        name = info.data.get("checker")
        if name is not None:
            parsed_check(name, check)  # refused here, with the option's place; kept as written (the file's)
        return check

    @field_validator("code")
    @classmethod
    def _compiles(cls, code: str) -> str:
        return compiled_body(code)

    @model_validator(mode="after")
    def _declaration(self) -> CustomTest:
        names = [argument.name for argument in self.arguments]
        ints: set[str] = set()
        for index, argument in enumerate(self.arguments):
            if argument.name in names[:index]:
                raise NestedError(("arguments", index, "name"), f"two arguments are named {argument.name!r}")
            for side in ("min", "max"):
                named = parse_bound(getattr(argument, side))
                if named is not None and named[0] not in ints:
                    message = f"{named[0]!r} is not an int argument declared before {argument.name!r}"
                    raise NestedError(("arguments", index, side), message)
            for size in argument.shape or []:
                if isinstance(size, str) and size in names and size not in ints:
                    message = f"dimension {size!r} is an argument that is not an int declared before this one"
                    raise NestedError(("arguments", index, "shape"), message)
            if argument.type == "int":
                ints.add(argument.name)
        self._dimensions_used()
        total = sum(argument.max_elements for argument in self.arguments if argument.type == "tensor")
        if total > MAX_ELEMENTS:
            message = f"the tensors take up to {total} elements together; at most {MAX_ELEMENTS}"
            raise NestedError(("arguments",), message)
        self._check = parsed_check(self.checker, self.check)
        try:
            self.values({}, where="defaults")
        except InputsRefused as exc:
            raise NestedError(("arguments",), f"the defaults are not valid: {exc}") from None
        return self

    def _dimensions_used(self) -> None:
        used = {size for argument in self.arguments for size in argument.shape or [] if isinstance(size, str)}
        names = {argument.name for argument in self.arguments}
        for name in self.dimensions:
            if name not in used:
                raise NestedError(("dimensions", name), f"no argument's shape names dimension {name!r}")
            if name in names:
                raise NestedError(("dimensions", name), f"{name!r} is an argument: its value is the size")

    def values(self, given: Any, where: str = "inputs") -> dict[str, Value]:
        """Validated values for every argument (custom_input.py); InputsRefused otherwise."""
        return validate_inputs(self, given, where)

    def case(self, values: dict[str, Value]) -> CustomCase:
        """The test to run on validated values: the author's checker and options, the values bound as
        literals (custom_input.py). Not compiled here: the body was when the file loaded, and what is added
        is literals only, which the sandbox compiles."""
        return CustomCase(self.name, custom_code(self, values), self.checker, self._check)


def clashes(test: CustomTest, entry_points: list[str]) -> str | None:
    """Why the test's arguments cannot live beside the problem's entry points, if they cannot."""
    for argument in test.arguments:
        if argument.name in entry_points:
            return f"argument {argument.name!r} has the name of an entry point, which the test would not see"
    return None
