"""The wire format: frames to a sandbox, and the strict decoder of what comes back.

Frame: b"TJ" | kind (1 byte) | header length (u32, big-endian) | body length (u32) | header | body.
The header is a JSON object validated against its kind's model (grader/containers/protocol.py); the body
is only ever a test's returned value (grader/containers/values.py decodes it).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

from grader.containers import protocol
from grader.containers.protocol import HEADERS, MAGIC, PREFIX, FrameError
from sandbox.runner.protocol import encode

__all__ = ["PREFIX", "Frame", "FrameDecoder", "FrameError", "encode", "encode_job", "parse_header"]


@dataclass(frozen=True)
class Frame:
    kind: bytes
    header: protocol._Frame
    body: bytes


def encode_job(job: protocol.Job) -> bytes:
    return encode(protocol.JOB, {}, job.payload())


class FrameDecoder:
    """Incremental decoder: feed bytes as they arrive, take whole frames out. Raises FrameError, and
    nothing else, for any bytes at all."""

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
            if head_len > protocol.MAX_HEADER_BYTES:
                raise FrameError(f"header of {head_len} bytes is over the {protocol.MAX_HEADER_BYTES}-byte cap")
            if body_len > self.max_body:
                raise FrameError(f"body of {body_len} bytes is over the {self.max_body}-byte cap")
            if kind not in protocol.BODIES and body_len:
                raise FrameError("only a test's or a call's result carries a body")
            total = PREFIX.size + head_len + body_len
            if len(self._buffer) < total:
                break
            raw_header = bytes(self._buffer[PREFIX.size : PREFIX.size + head_len])
            body = bytes(self._buffer[PREFIX.size + head_len : total])
            del self._buffer[:total]
            frames.append(Frame(kind, parse_header(kind, raw_header), body))
        return frames

    @property
    def pending(self) -> int:
        return len(self._buffer)


def parse_header(kind: bytes, raw: bytes) -> protocol._Frame:
    try:
        if protocol.json_depth(raw, max_brackets=64) > protocol.MAX_HEADER_DEPTH:
            raise FrameError("header nested too deeply")
        return HEADERS[kind].model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0] if exc.errors() else {}
        # A key's name is the sandbox's to choose (up to the header's cap): cut like the message.
        where = ".".join(str(part) for part in first.get("loc", ()))[:200]
        message = str(first.get("msg", "invalid"))[:200]
        raise FrameError(f"invalid {kind.decode()} header: {where}: {message}") from None
    except FrameError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the bytes provoke is the sandbox's fault
        raise FrameError(f"invalid {kind.decode()} header: {type(exc).__name__}") from None
