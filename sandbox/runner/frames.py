"""The wire format between the runner and the trusted grader, and between the runner and its child.

A frame is:  b"TJ" | kind (1 byte) | header length (u32, big-endian) | body length (u32) |
header (UTF-8 JSON object) | body (bytes).

The trusted side has its own strict decoder (grader/sandbox/frames.py); this module only writes
frames and reads the ones the runner itself receives. It imports nothing outside the stdlib.
"""

from __future__ import annotations

import json
import os
import struct

MAGIC = b"TJ"
PREFIX = struct.Struct(">2scII")

# grader -> runner
JOB = b"J"
# runner -> grader
HELLO = b"H"
COMPILE = b"C"
TEST = b"T"
DONE = b"D"
# child -> runner
CHILD_COMPILE = b"c"
CHILD_RESULT = b"r"

MAX_HEADER = 64 * 1024


class FrameError(Exception):
    """A frame that does not follow the format."""


def encode(kind: bytes, header: dict, body: bytes = b"") -> bytes:
    head = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    return PREFIX.pack(MAGIC, kind, len(head), len(body)) + head + body


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def read_exactly(fd: int, count: int) -> bytes:
    chunks = []
    while count:
        chunk = os.read(fd, min(count, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, max_body: int) -> tuple[bytes, dict, bytes]:
    """Reads one frame from a blocking descriptor (the runner's stdin, or the child's command pipe)."""
    magic, kind, head_len, body_len = PREFIX.unpack(read_exactly(fd, PREFIX.size))
    if magic != MAGIC or head_len > MAX_HEADER or body_len > max_body:
        raise FrameError("bad frame prefix")
    header = json.loads(read_exactly(fd, head_len))
    if not isinstance(header, dict):
        raise FrameError("frame header is not an object")
    body = read_exactly(fd, body_len) if body_len else b""
    return kind, header, body


class FrameReader:
    """Incremental parser for frames arriving on a non-blocking pipe (the child's result pipe)."""

    def __init__(self, max_body: int) -> None:
        self.max_body = max_body
        self.buffer = bytearray()

    def feed(self, data: bytes) -> list[tuple[bytes, dict, bytes]]:
        self.buffer += data
        frames = []
        while len(self.buffer) >= PREFIX.size:
            magic, kind, head_len, body_len = PREFIX.unpack_from(self.buffer)
            if magic != MAGIC or head_len > MAX_HEADER:
                raise FrameError("bad frame prefix")
            if body_len > self.max_body:
                raise OverflowError(body_len)
            total = PREFIX.size + head_len + body_len
            if len(self.buffer) < total:
                break
            try:
                header = json.loads(bytes(self.buffer[PREFIX.size : PREFIX.size + head_len]))
            except ValueError as exc:
                raise FrameError("frame header is not JSON") from exc
            if not isinstance(header, dict):
                raise FrameError("frame header is not an object")
            body = bytes(self.buffer[PREFIX.size + head_len : total])
            del self.buffer[:total]
            frames.append((kind, header, body))
        return frames
