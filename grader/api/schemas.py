"""Request bodies, and how a malformed one is reported. The public views of problems and submissions
are in grader/problems/public.py and grader/submissions/public.py."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from fastapi import HTTPException, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from grader.submissions.intake import SourceText, SubmitterName
from grader.submissions.metadata import Metadata

# What a 422 shows of a malformed request: the first errors, each location (and each of its parts) and
# message cut to a length; the rest counted.
MAX_ERRORS_SHOWN = 5
MAX_LOC_PART = 64
MAX_LOC_CHARS = 160
MAX_MSG_CHARS = 200
# What an answer repeats of a value from the request (an id in a 404).
SHOWN_CHARS = 100

# Bodies up to this size are validated on the event loop (well under a millisecond); larger ones by one
# thread of their own. pydantic holds the GIL while it validates, so the thread makes no validation
# cheaper, but the loop then waits for at most one validation at a time instead of for every large body
# that arrived together: 30 bodies of 40,000 unknown keys validated on the loop held /healthz for seconds.
INLINE_BODY_BYTES = 16 * 1024
_PARSER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="body-parser")

Body = TypeVar("Body", bound=BaseModel)


class SubmissionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    problem_id: str = Field(min_length=1, max_length=64, examples=["embedding-layer"])
    source: SourceText = Field(
        description="the Python module implementing the problem's entry points (a leading byte-order mark is dropped)"
    )
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
    metadata: Metadata | None = None
    submitter: SubmitterName | None = Field(
        None,
        description="the name a course gives its submitter, shown on a speed-graded problem's leaderboard (vouched "
        "for by the API key; without keys, the submitter's own word, shown as unverified)",
    )


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """A value the client sent, as an answer repeats it: its repr, cut to `limit` characters."""
    if isinstance(value, str) and len(value) > limit:
        value = value[:limit]
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _next_item(text: str, at: int) -> int:
    """Where the next item of a JSON list starts, from `at` (past separators and white space)."""
    while at < len(text) and text[at] in ", \t\r\n":
        at += 1
    return at


def _first_errors(exc: RequestValidationError | ValidationError) -> tuple[list[dict[str, Any]], int]:
    """The first MAX_ERRORS_SHOWN errors and how many there are, in time that does not grow with their
    number where pydantic allows: its errors() builds a dict per error, its json() is written in Rust and
    far cheaper (docs/BENCHMARKS.md, "Costs behind the code"), and only the first entries of that are
    decoded."""
    if isinstance(exc, RequestValidationError):  # FastAPI's: a list already
        errors = exc.errors()
        return [dict(error) for error in errors[:MAX_ERRORS_SHOWN]], len(errors)
    total = exc.error_count()
    try:
        text = exc.json(include_url=False, include_context=False, include_input=False)
        decoder, first, at = json.JSONDecoder(), [], _next_item(text, 1)
        while len(first) < min(total, MAX_ERRORS_SHOWN):
            error, at = decoder.raw_decode(text, at)
            first.append(error)
            at = _next_item(text, at)
    except ValueError:  # not the JSON list expected: the slow way, still bounded by the body's cap
        return [dict(e) for e in exc.errors(include_url=False, include_context=False)[:MAX_ERRORS_SHOWN]], total
    return first, total


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def validation_message(exc: RequestValidationError | ValidationError) -> str:
    """What a malformed request is told: the first few errors, each location and message cut short, and
    how many more there are. At most about 2 KiB, whatever the body."""
    first, total = _first_errors(exc)
    problems = []
    for error in first:
        where = ".".join(_cut(str(part), MAX_LOC_PART) for part in error.get("loc", ()) if part != "body") or "body"
        problems.append(f"{_cut(where, MAX_LOC_CHARS)}: {_cut(str(error.get('msg', 'invalid')), MAX_MSG_CHARS)}")
    if total > len(first):
        problems.append(f"and {total - len(first)} more error{'s' if total - len(first) > 1 else ''}")
    return "; ".join(problems) or "invalid request"


async def read_json_body(request: Request, model: type[Body], body_cap: int) -> Body:
    """A JSON body validated against `model` by hand rather than by FastAPI, so that every malformed one,
    non-UTF-8 bytes included, gets the same clear and bounded 422 (FastAPI's own validation turns every
    error into a dict first). Linear in the body, which BodyLimitMiddleware caps: a few ms on the loop."""
    raw = await request.body()
    if len(raw) > body_cap:
        raise HTTPException(413, f"request body over {body_cap} bytes")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HTTPException(422, f"the request body is not valid UTF-8 (byte {exc.start})") from None
    if len(raw) <= INLINE_BODY_BYTES:
        return _validate(model, raw)
    return await asyncio.get_running_loop().run_in_executor(_PARSER, _validate, model, raw)


def _validate(model: type[Body], raw: bytes) -> Body:
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise HTTPException(422, validation_message(exc)) from None


def inline_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A model's JSON Schema with its `$defs` put in place: a schema given to OpenAPI as it is (a request
    body read by hand) may not refer to `#/$defs/...`, which an OpenAPI document does not have."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, list):
            return [inline(item) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref.removeprefix("#/$defs/") in defs:
            rest = {key: inline(value) for key, value in node.items() if key != "$ref"}
            return {**inline(defs[ref.removeprefix("#/$defs/")]), **rest}
        return {key: inline(value) for key, value in node.items()}

    return inline(schema)  # type: ignore[no-any-return]
