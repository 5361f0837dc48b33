"""`tolerance` (the default): same type, shape and dtype, then floats within a tolerance and everything
else exactly. A test's `check:` gives rtol and atol per top-level key of the dict it returns; floats
elsewhere get rtol 1e-5, atol 1e-6. NaN matches only NaN, an infinity only the same infinity."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from grader.grading.checkers import Checker
from grader.grading.compare import Comparison, Tolerance, compare_outputs

DEFAULT_TOLERANCE = Tolerance()


def compare(expected: Any, got: Any, check: Mapping[str, BaseModel]) -> Comparison:
    tolerances = {key: options for key, options in check.items() if isinstance(options, Tolerance)}
    return compare_outputs(expected, got, tolerances, DEFAULT_TOLERANCE)


CHECKER = Checker(
    name="tolerance",
    description="floats within rtol/atol (per returned key), everything else exactly",
    options=Tolerance,
    rule=compare,
)
