"""A submission's `metadata`: the client's own object (an evaluation harness's ids, a course's student
number), stored as sent and echoed in the verdict, the event stream, webhooks, lists and exports.

Flat and bounded, so that it costs every view the same small amount whatever a client sends: at most
MAX_KEYS keys of at most MAX_KEY_CHARS printable characters, each value a string of at most
MAX_VALUE_CHARS, a finite number, an integer that JSON readers keep exact (|n| < 2**53), a boolean or
null, and at most MAX_BYTES as JSON. Anything else is refused (422) naming the key."""

from __future__ import annotations

import json
import math
from typing import Annotated, Any

from pydantic import AfterValidator, Field

MAX_KEYS = 32
MAX_KEY_CHARS = 64
MAX_VALUE_CHARS = 1024
MAX_BYTES = 4096
MAX_SAFE_INTEGER = 2**53 - 1


def _check_value(key: str, value: Any) -> None:
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise ValueError(f"metadata[{key!r}]: integers are at most 2**53 - 1 in size (JSON readers round more)")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"metadata[{key!r}]: numbers must be finite")
        return
    if isinstance(value, str):
        if len(value) > MAX_VALUE_CHARS:
            raise ValueError(f"metadata[{key!r}]: a text value is at most {MAX_VALUE_CHARS} characters")
        return
    raise ValueError(f"metadata[{key!r}]: values are strings, numbers, booleans or null (no objects or lists)")


def check_metadata(value: dict[str, Any]) -> dict[str, Any]:
    if len(value) > MAX_KEYS:
        raise ValueError(f"metadata has at most {MAX_KEYS} keys, not {len(value)}")
    for key, item in value.items():
        if not key or len(key) > MAX_KEY_CHARS or not key.isprintable():
            raise ValueError(f"metadata keys are 1 to {MAX_KEY_CHARS} printable characters: {key[:MAX_KEY_CHARS]!r}")
        _check_value(key, item)
    try:
        size = len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError("metadata holds text that is not valid UTF-8 (a lone surrogate)") from None
    if size > MAX_BYTES:
        raise ValueError(f"metadata is {size} bytes as JSON; at most {MAX_BYTES}")
    return value


# The values are checked by check_metadata rather than typed as a union, so that a refusal names its key
# and reason once (a union reports every member it did not match).
Metadata = Annotated[
    dict[str, Any],
    AfterValidator(check_metadata),
    Field(
        json_schema_extra={"additionalProperties": {"type": ["string", "number", "integer", "boolean", "null"]}},
        description=f"your own object, echoed in the verdict, events, webhooks, lists and exports: at most {MAX_KEYS}"
        f" keys, values strings (at most {MAX_VALUE_CHARS} characters), numbers, booleans or null; at most"
        f" {MAX_BYTES} bytes as JSON",
        examples=[{"run": "eval-2026-12-02", "sample": 17}],
    ),
]


def stored_metadata(value: Any) -> dict[str, Any] | None:
    """The metadata of a stored row as every view shows it: what intake stored, or None for anything else
    (a row written by another program)."""
    if not isinstance(value, dict) or len(value) > MAX_KEYS:
        return None
    try:
        return check_metadata({str(key): item for key, item in value.items()})
    except ValueError:
        return None
