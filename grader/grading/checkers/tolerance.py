"""`tolerance` (the default): same type, shape and dtype, then floats within a tolerance and everything
else exactly. A test's `check:` gives, per top-level key of the dict it returns: `rtol` and `atol`;
`round` (equal after rounding both sides to that many decimals); `expect` (the expected value computed,
on the trusted side, from the submission's own returned values instead of taken from the reference's);
or `holds` (properties of the submission's values that must all be true; the key is not compared with
the reference's). Floats elsewhere get rtol 1e-5 and atol 1e-6, widened for low-precision dtypes. NaN
matches only NaN, an infinity only the same infinity."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from grader.grading.checkers import Checker
from grader.grading.compare import Comparison, Tolerance, compare_outputs, compare_values
from grader.grading.expressions import (
    Expression,
    ExpressionError,
    as_value,
    compile_expression,
    expression_names,
    failure_text,
    truth,
)

DEFAULT_TOLERANCE = Tolerance()
MAX_HOLDS = 20


def _compiles(text: str) -> str:
    try:
        compile_expression(text)
    except ExpressionError as exc:
        raise ValueError(str(exc)) from None
    return text


ExpressionText = Annotated[str, AfterValidator(_compiles)]


class KeyCheck(BaseModel):
    """How one returned key is checked: a tolerance (rtol, atol), a rounding, an expected value computed from
    the submission's own values (expect), or properties that must hold (holds)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rtol: float | None = Field(None, ge=0, allow_inf_nan=False, description="relative tolerance (default 1e-5)")
    atol: float | None = Field(None, ge=0, allow_inf_nan=False, description="absolute tolerance (default 1e-6)")
    round: int | None = Field(
        None, ge=0, le=15, description="equal after rounding both sides to this many decimals (no rtol or atol)"
    )
    expect: ExpressionText | None = Field(
        None,
        description="an expression over the submission's returned keys (torch, np, math in scope), evaluated on the "
        "trusted side, whose value is expected instead of the reference's",
    )
    holds: list[ExpressionText] | None = Field(
        None,
        min_length=1,
        max_length=MAX_HOLDS,
        description="expressions over the submission's returned keys that must all be true; the key is not "
        "compared with the reference's",
    )
    _expect: Expression | None = PrivateAttr(None)
    _holds: list[Expression] = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> KeyCheck:
        tolerance = self.rtol is not None or self.atol is not None
        if self.holds is not None and (self.expect is not None or tolerance or self.round is not None):
            raise ValueError(
                "holds replaces the comparison with the reference: it takes no expect, rtol, atol or round"
            )
        if self.round is not None and tolerance:
            raise ValueError("round compares the rounded values exactly: it takes no rtol or atol")
        self._expect = compile_expression(self.expect) if self.expect is not None else None
        self._holds = [compile_expression(text) for text in self.holds or []]
        return self

    def tolerance(self) -> Tolerance:
        if self.round is not None:
            return Tolerance(rtol=0.0, atol=0.0, decimals=self.round)
        given = {name: value for name, value in (("rtol", self.rtol), ("atol", self.atol)) if value is not None}
        return Tolerance(**given)

    def holds_on(self, key: str, names: dict[str, Any]) -> Comparison | None:
        """The first property that does not hold (or cannot be evaluated), as a failed comparison; else None."""
        for expression in self._holds:
            try:
                if truth(expression.evaluate(names)):
                    continue
                reason = f"{key}: the property {expression.text!r} does not hold"
            except MemoryError:  # the judge process's own limit: the test's error, not a wrong answer
                raise
            except Exception as exc:  # noqa: BLE001 - hostile values may make any expression raise
                reason = f"{key}: the property {expression.text!r} cannot be evaluated: {failure_text(exc)}"
            return Comparison(False, {"path": key, "reason": reason})
        return None

    def expected_from(self, key: str, names: dict[str, Any], got: Any) -> tuple[Any, Comparison | None]:
        """The value `expect` computes from the submission's values, or the failure to compute it."""
        assert self._expect is not None
        try:
            return as_value(self._expect.evaluate(names), got), None
        except MemoryError:  # the judge process's own limit: the test's error, not a wrong answer
            raise
        except Exception as exc:  # noqa: BLE001 - hostile values may make any expression raise
            reason = f"{key}: the expected value {self._expect.text!r} cannot be computed: {failure_text(exc)}"
            return None, Comparison(False, {"path": key, "reason": reason})

    def failing(self, key: str, names: dict[str, Any], got: Any) -> frozenset[str]:
        """The properties of `got` that fail: each `holds` expression that is not true, or `expect` when the
        value is not the one it computes (for a key with neither, nothing)."""
        if self._expect is not None:
            expected, problem = self.expected_from(key, names, got)
            passed = problem is None and compare_values(key, expected, got, self.tolerance()).passed
            return frozenset() if passed else frozenset({self._expect.text})
        return frozenset(expression.text for expression in self._holds if _fails(expression, names))


def _fails(expression: Expression, names: dict[str, Any]) -> bool:
    """True when a `holds` expression is false, or cannot be evaluated."""
    try:
        return not truth(expression.evaluate(names))
    except MemoryError:  # the judge process's own limit: the test's error, not a wrong answer
        raise
    except Exception:  # noqa: BLE001 - hostile values may make any expression raise
        return True


def properties(got: Any, check: Mapping[str, BaseModel]) -> dict[str, frozenset[str]]:
    """Each key checked with `expect` or `holds` that `got` has, and its properties that fail."""
    if not isinstance(got, dict):
        return {}
    options = {
        key: value
        for key, value in check.items()
        if isinstance(value, KeyCheck) and (value.expect is not None or value.holds is not None) and key in got
    }
    names = expression_names(got) if options else {}
    return {key: value.failing(key, names, got[key]) for key, value in options.items()}


def compare(expected: Any, got: Any, check: Mapping[str, BaseModel]) -> Comparison:
    options = {key: value for key, value in check.items() if isinstance(value, KeyCheck)}
    tolerances = {key: value.tolerance() for key, value in options.items()}
    computed = {key: value for key, value in options.items() if value.expect is not None or value.holds is not None}
    if not computed or not isinstance(expected, dict) or not isinstance(got, dict) or set(expected) != set(got):
        return compare_outputs(expected, got, tolerances, DEFAULT_TOLERANCE)
    names = expression_names(got)
    expected = dict(expected)
    failure = None
    for key, value in computed.items():
        if key not in got:
            continue
        if value.holds is not None:
            failure = failure or value.holds_on(key, names)
            expected[key] = got[key]  # not compared with the reference's
        else:
            expected[key], problem = value.expected_from(key, names, got[key])
            if problem is not None:
                failure = failure or problem
                expected[key] = got[key]
    result = compare_outputs(expected, got, tolerances, DEFAULT_TOLERANCE)
    return result if not result.passed or failure is None else failure


CHECKER = Checker(
    name="tolerance",
    description="floats within rtol/atol (per returned key), everything else exactly; round, expect and holds per key",
    options=KeyCheck,
    rule=compare,
    properties=properties,
)
