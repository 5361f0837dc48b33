"""Request bodies, and how a malformed one is reported. The public views of problems and submissions
are in grader/problems/public.py and grader/submissions/public.py."""

from __future__ import annotations

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict, Field, ValidationError


class SubmissionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    problem_id: str = Field(min_length=1, max_length=64, examples=["embedding-layer"])
    source: str = Field(description="the Python module implementing the problem's entry points")


def validation_message(exc: RequestValidationError | ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error.get("loc", ()) if part != "body") or "body"
        problems.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(problems) or "invalid request"
