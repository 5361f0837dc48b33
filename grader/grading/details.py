"""A failed comparison's details, typed: what grading/compare.py writes into a test's `details` (every key
it writes is a field here; tests/unit/test_details.py holds compare.py to that), and what every view lays
out (grader/web/report.py, for the report page and for Run alike).

The details are stored as JSON with the verdict and read back with this model. Reading is lenient: a
stored verdict is data of its day (a custom check may add keys, an older judge may have written a field
another way), so a field of the wrong kind reads as absent and never fails the reader; unknown keys are
ignored.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, ValidatorFunctionWrapHandler, field_validator

# A number as JSON carries it from the judge: NaN, the infinities and complex numbers are strings.
Number = bool | int | float | str


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    @field_validator("*", mode="wrap")
    @classmethod
    def _absent_when_malformed(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except ValidationError:
            return None


class ValueDescription(_Lenient):
    """One returned value, as compare.describe writes it (never the value itself, for a tensor)."""

    type: str | None = None
    shape: list[int] | None = None
    dtype: str | None = None
    length: int | None = None
    keys: list[str] | None = None
    value: Any = None  # a scalar's or a string's value; see has_value
    sample: list[Number | None] | None = None  # a tensor's first values, flattened

    @property
    def has_value(self) -> bool:
        return "value" in self.model_fields_set


class Mismatch(_Lenient):
    """One of the first elements that differ."""

    index: list[int] | int | None = None
    expected: Number | None = None
    got: Number | None = None


class ComparisonDetails(_Lenient):
    """Where and why an output differs from the reference's, and by how much."""

    path: str | None = None  # which output: "out", "rates[0]", "stats['mean']"
    reason: str | None = None  # "values differ", "shape differs", ...
    expected: ValueDescription | None = None
    got: ValueDescription | None = None
    mismatches: int | None = None  # how many elements differ
    total: int | None = None  # of how many
    first_mismatches: list[Mismatch] = []
    max_abs_error: Number | None = None
    max_rel_error: Number | None = None
    nonfinite_mismatches: int | None = None  # a NaN or an infinity against anything but itself
    first_nonfinite: list[int] | None = None
    rtol: Number | None = None
    atol: Number | None = None
    round: int | None = None  # the decimals both sides were rounded to first
    error_heatmap: list[list[Any]] | None = None  # |got - expected| of a 2-D output, pooled into blocks

    @field_validator("first_mismatches", mode="before")
    @classmethod
    def _the_readable_ones(cls, value: Any) -> Any:
        return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []

    @classmethod
    def read(cls, details: Any) -> ComparisonDetails | None:
        """The details of a stored test; None where there are none (or they are not an object)."""
        if not isinstance(details, dict) or not details:
            return None
        return cls.model_validate(details)
