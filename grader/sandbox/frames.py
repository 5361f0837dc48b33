"""Strict decoding of what a sandbox sends: hostile bytes until every count and field is checked.

Frame: b"TJ" | kind (1 byte) | header length (u32, big-endian) | body length (u32) | header | body.
The header is a JSON object validated against a fixed model per kind; the body is only ever a
test's returned value (grader/sandbox/values.py decodes it).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

MAGIC = b"TJ"
PREFIX = struct.Struct(">2scII")
MAX_HEADER = 64 * 1024

JOB = b"J"
HELLO = b"H"
COMPILE = b"C"
TEST = b"T"
DONE = b"D"


class FrameError(Exception):
    """The sandbox sent something that is not a valid frame."""


class _Header(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class HelloHeader(_Header):
    torch: str = Field(max_length=64)
    python: str = Field(max_length=64)


class CompileHeader(_Header):
    status: Literal["ok", "compile_error", "runtime_error", "memory", "timeout", "output", "error"]
    message: str | None = Field(None, max_length=8192)
    error_type: str | None = Field(None, max_length=256)
    traceback: str | None = Field(None, max_length=20000)
    line: int | None = Field(None, ge=0)


class TestHeader(_Header):
    index: int = Field(ge=0)
    status: Literal["ok", "error", "timeout", "memory", "output"]
    time_ms: float = Field(ge=0)
    message: str | None = Field(None, max_length=8192)
    error_type: str | None = Field(None, max_length=256)
    traceback: str | None = Field(None, max_length=20000)
    line: int | None = Field(None, ge=0)


class DoneHeader(_Header):
    clean: bool


HEADERS: dict[bytes, type[_Header]] = {HELLO: HelloHeader, COMPILE: CompileHeader, TEST: TestHeader, DONE: DoneHeader}


@dataclass(frozen=True)
class Frame:
    kind: bytes
    header: _Header
    body: bytes


def encode(kind: bytes, header: dict, body: bytes = b"") -> bytes:
    """Frames sent to the sandbox (jobs); the runner decodes these."""
    head = json.dumps(header, separators=(",", ":")).encode()
    return PREFIX.pack(MAGIC, kind, len(head), len(body)) + head + body


class FrameDecoder:
    """Incremental decoder: feed bytes as they arrive, take whole frames out."""

    def __init__(self, max_body: int) -> None:
        self.max_body = max_body
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[Frame]:
        self._buffer += data
        frames: list[Frame] = []
        while len(self._buffer) >= PREFIX.size:
            magic, kind, head_len, body_len = PREFIX.unpack_from(self._buffer)
            if magic != MAGIC:
                raise FrameError("bad magic")
            if kind not in HEADERS:
                raise FrameError(f"unknown frame kind {kind!r}")
            if head_len > MAX_HEADER:
                raise FrameError(f"header of {head_len} bytes is over the {MAX_HEADER}-byte cap")
            if body_len > self.max_body:
                raise FrameError(f"body of {body_len} bytes is over the {self.max_body}-byte cap")
            if kind != TEST and body_len:
                raise FrameError("only test results carry a body")
            total = PREFIX.size + head_len + body_len
            if len(self._buffer) < total:
                break
            raw_header = bytes(self._buffer[PREFIX.size : PREFIX.size + head_len])
            body = bytes(self._buffer[PREFIX.size + head_len : total])
            del self._buffer[:total]
            frames.append(Frame(kind, _parse_header(kind, raw_header), body))
        return frames

    @property
    def pending(self) -> int:
        return len(self._buffer)


def _parse_header(kind: bytes, raw: bytes) -> _Header:
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise FrameError("header is not JSON") from exc
    if not isinstance(data, dict):
        raise FrameError("header is not an object")
    try:
        return HEADERS[kind].model_validate(data)
    except ValidationError as exc:
        raise FrameError(f"invalid {kind.decode()} header: {exc.errors()[0]['msg']}") from None
