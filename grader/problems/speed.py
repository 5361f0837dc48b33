"""A problem's `speed:` section: a speed-graded problem is accepted when it is correct on every test and,
timed against a named baseline on inputs the problem builds, at least `threshold` times as fast.

Validated when the file loads (schema.py Problem.speed). What it means at grading time is in
grader/grading/speed.py; docs/problems.md documents every field.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from grader.problems.rules import NestedError, compiled_body
from sandbox.runner.protocol import MAX_BENCH_REPEATS, MAX_BENCH_SIZES, MAX_BENCH_WARMUP, MAX_SIZE_NAME, MAX_SIZE_PARAMS

SCALARS = (bool, int, float, str)


class SpeedSize(BaseModel):
    """One input size: a name shown on the report, and its parameters (numbers, booleans, short strings),
    which the inputs' code reads as `size["..."]`."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str = Field(min_length=1, max_length=MAX_SIZE_NAME, description="shown on the report and the chart")

    @model_validator(mode="after")
    def _scalar_params(self) -> SpeedSize:
        params = self.model_extra or {}
        if len(params) > MAX_SIZE_PARAMS:
            raise ValueError(f"at most {MAX_SIZE_PARAMS} parameters")
        for key, value in params.items():
            if not key.isidentifier():
                raise ValueError(f"{key!r} is not a parameter name (letters, digits and _)")
            if type(value) not in SCALARS or (type(value) is float and not math.isfinite(value)):
                raise ValueError(f"{key}: a parameter is a number, a boolean or a short string")
            if type(value) is str and len(value) > MAX_SIZE_NAME or type(value) is int and abs(value) > 2**53:
                raise ValueError(f"{key}: too long or too large")
        return self

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class Baseline(BaseModel):
    """An implementation a submission is timed against: public (the problem page shows it), slow on purpose."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=64, pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$", description="its name")
    code: str = Field(min_length=1, description="a whole module that defines the function timed; shown")

    @field_validator("code")
    @classmethod
    def _compiles(cls, code: str) -> str:
        try:
            compile(code, "<baseline>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as exc:
            raise ValueError(f"does not compile: {exc}") from None
        return code


class SpeedCheck(BaseModel):
    """How each timed call's returned value is compared with the reference's on the same inputs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rtol: float = Field(1e-5, ge=0, allow_inf_nan=False)
    atol: float = Field(1e-6, ge=0, allow_inf_nan=False)


class Speed(BaseModel):
    """The `speed:` section of a problem file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    call: str | None = Field(None, description="the entry point timed (default: the first)")
    inputs: str = Field(
        min_length=1,
        description="the body of a function that builds one call's arguments: `size` (the size's parameters, "
        "and its name) in scope, with torch, nn, F, math, np and the problem's helpers; torch, random and numpy are "
        "seeded for each call; returns a list (positional arguments) or a dict (keyword arguments)",
    )
    sizes: list[SpeedSize] = Field(min_length=1, max_length=MAX_BENCH_SIZES)
    baseline: str = Field(description="the name of the baseline (in `baselines`) a submission is timed against")
    baselines: list[Baseline] = Field(min_length=1, max_length=4)
    warmup: int = Field(2, ge=0, le=MAX_BENCH_WARMUP, description="calls at each size before the timed ones")
    repeats: int = Field(15, ge=5, le=MAX_BENCH_REPEATS, description="timed calls at each size, of each module")
    fresh_inputs: bool = Field(
        True,
        description="true: every call gets inputs drawn anew (a result kept from an earlier call is wrong, and so "
        "refused); false: every call at a size gets a copy of the same values",
    )
    check: SpeedCheck = Field(default_factory=SpeedCheck, description="rtol and atol for each call's returned value")
    threshold: float = Field(
        1.0, gt=0, le=10_000, allow_inf_nan=False, description="the least speed-up (score) accepted, e.g. 3 for 3x"
    )
    score: Literal["geomean", "min"] = Field(
        "geomean", description="the score: the geometric mean of the sizes' speed-ups, or the smallest of them"
    )
    device: Literal["cpu", "cuda"] = Field("cpu", description="where the inputs are put and the calls run")
    time_s: float | None = Field(
        None, ge=0.001, le=60, description="the limit of each call (default: the problem's time limit)"
    )

    @field_validator("inputs")
    @classmethod
    def _inputs_compile(cls, code: str) -> str:
        return compiled_body(code)

    @field_validator("device")
    @classmethod
    def _served_here(cls, device: str, info: ValidationInfo) -> str:
        """A device the server does not have is refused at load (GRADER_DEVICES says which it has)."""
        devices = (info.context or {}).get("devices")
        if devices is not None and device not in devices:
            raise ValueError(
                f"this problem is timed on {device!r}, which this server does not have "
                f"(it has: {', '.join(devices)}; GRADER_DEVICES)"
            )
        return device

    @model_validator(mode="after")
    def _baseline_named(self) -> Speed:
        names = [baseline.name for baseline in self.baselines]
        if len(set(names)) != len(names):
            raise NestedError(("baselines",), "two baselines have the same name")
        if self.baseline == "reference":
            raise NestedError(
                ("baseline",),
                "the reference never runs beside a submission (DESIGN.md, the one rule of trust): time against a "
                "named baseline in `baselines` (the check reports how fast the reference is against it)",
            )
        if self.baseline not in names:
            raise NestedError(("baseline",), f"{self.baseline!r} is not in baselines ({', '.join(names)})")
        sizes = [size.name for size in self.sizes]
        if len(set(sizes)) != len(sizes):
            raise NestedError(("sizes",), "two sizes have the same name")
        return self

    def baseline_code(self) -> str:
        return next(baseline.code for baseline in self.baselines if baseline.name == self.baseline)
