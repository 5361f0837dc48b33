"""`exact`: every value exactly as the reference's, floats included (bit for bit, NaN matching NaN):
for tests whose answer is a count, an index, a mask, or a float computed the one way the statement
prescribes. `check:` takes no options."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from grader.grading.checkers import Checker
from grader.grading.compare import EXACT, Comparison, compare_outputs


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def compare(expected: Any, got: Any, check: Mapping[str, BaseModel]) -> Comparison:
    return compare_outputs(expected, got, {}, EXACT)


CHECKER = Checker(name="exact", description="every value exactly, floats included", options=NoOptions, rule=compare)
