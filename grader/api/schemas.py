"""Request bodies, and how a malformed one is reported. The public views of problems and submissions
are in grader/problems/public.py and grader/submissions/public.py."""

from __future__ import annotations

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict, Field, ValidationError


class SubmissionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    problem_id: str = Field(min_length=1, max_length=64, examples=["embedding-layer"])
    source: str = Field(description="the Python module implementing the problem's entry points")
    callback_url: str | None = Field(
        None,
        max_length=2048,
        description="where the final verdict is POSTed, signed `X-Torchjudge-Signature: sha256=<HMAC-SHA256>`",
    )
    seed: int | None = Field(
        None,
        ge=0,
        le=2**63 - 1,
        description="admin only: grade under this seed (a verdict's `seed`), to reproduce its hidden inputs",
    )


def validation_message(exc: RequestValidationError | ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error.get("loc", ()) if part != "body") or "body"
        problems.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(problems) or "invalid request"
