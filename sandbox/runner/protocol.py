"""The contract between the trusted grader, the runner and its children: one definition, stdlib only.

Shipped in the sandbox image and imported by the grader (grader/containers/protocol.py wraps the frames
that come out in its strict pydantic decoding): the frame kinds, the outcome words and every bound here;
what the frames carry inside the container (the job, the child's share of it, a test command, a report)
in messages.py. The runner trusts
nothing a child writes either: a child's report is re-read here (Report.from_child) against the same
bounds before it leaves the container.

A frame is:  b"TJ" | kind (1 byte) | header length (u32, big-endian) | body length (u32) |
header (UTF-8 JSON object, flat: no nesting beyond MAX_HEADER_DEPTH) | body (bytes).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
from array import array
from enum import StrEnum
from itertools import accumulate

MAGIC = b"TJ"
PREFIX = struct.Struct(">2scII")

# grader -> runner
JOB = b"J"
# runner -> grader
HELLO = b"H"
LOAD = b"L"  # how loading the submission went
TEST = b"T"  # one test's result; the body is the returned value (values.py)
DONE = b"D"  # the job is over; the container is clean or not
# runner -> child
CHILD_JOB = b"j"
CHILD_TEST = b"t"
# child -> runner
CHILD_READY = b"y"  # prepared and warm: the child can take its job
CHILD_LOAD = b"l"
CHILD_RESULT = b"r"
# A benchmark (bench_job.py): grader -> runner, the job; runner -> grader, after the subject's LOAD, each
# checked call's returned value, each size's raw times, then how the benchmark ended; runner -> child, one call.
BENCH_JOB = b"B"
CALL = b"C"
SIZE = b"S"
BENCH_END = b"E"
CHILD_CALL = b"c"
CHILD_BUILT = b"i"  # child -> runner: a benchmark's inputs are built (or could not be)
CHILD_GO = b"g"  # runner -> child: load the module now (its load is timed from here)


class Outcome(StrEnum):
    """How loading the submission, or one test, ended: the runner's word (a str, so it is its own JSON)."""

    OK = "ok"
    COMPILE_ERROR = "compile_error"  # loading only
    ERROR = "error"
    TIMEOUT = "timeout"
    MEMORY = "memory"
    OUTPUT = "output"
    SKIPPED = "skipped"  # a test only, and the runner's own: not run, the job asked to skip what follows a timeout


LOAD_OUTCOMES = tuple(o for o in Outcome if o is not Outcome.SKIPPED)
CHILD_TEST_OUTCOMES = tuple(o for o in Outcome if o not in (Outcome.COMPILE_ERROR, Outcome.SKIPPED))
TEST_OUTCOMES = (*CHILD_TEST_OUTCOMES, Outcome.SKIPPED)  # what the runner may report for a test

# Torch's and NumPy's process-wide settings the child puts back before every test (torchstate.py): a
# load or test header may name those its code left changed (settings_changed), for the problem check.
SETTING_NAMES = (
    "default dtype",
    "default device",
    "grad mode",
    "deterministic algorithms",
    "anomaly mode",
    "number of threads",
    "float32 matmul precision",
    "print options",
    "autocast",
    "mkldnn",
    "numpy error handling",
)

# Bounds on everything that crosses the pipe (the grader refuses more; the runner cuts to these).
MAX_HEADER_BYTES = 64 * 1024
MAX_HEADER_DEPTH = 2
MAX_JOB_BYTES = 16 * 1024 * 1024
MAX_JOB_DEPTH = 4
MAX_TESTS = 1000
MAX_MESSAGE = 4 * 1024
MAX_TRACEBACK = 16 * 1024
MAX_OUTPUT = 4 * 1024
MAX_ERROR_TYPE = 200
MAX_LINE = 10**6
MAX_TIME_MS = 10**7
MAX_MEMORY_MB = 1 << 20  # a test's peak resident memory, as the runner measured it
MAX_SEED = 2**63 - 1
MIN_TEST_TIME_S, MAX_TEST_TIME_S = 0.001, 600
MIN_MEMORY_MB, MAX_LIMIT_MEMORY_MB = 16, 1 << 20
MAX_OUTPUT_KB = 1 << 20
MAX_ENTRY_POINTS = 64
MIN_RESULT_BYTES, MAX_RESULT_BYTES = 1024, 1 << 30
TRUNCATED = " … (truncated)"
# A benchmark's sizes, the times taken at each (the first call, the warm-up calls, the timed regions), the calls
# in one timed region (distinct inputs each: bench_job.py), the number a call may have (each on inputs of its
# own), a size's own parameters (scalars given to the inputs' code), and one time as the runner measured it.
MAX_BENCH_SIZES = 16
MAX_BENCH_WARMUP = 50
MAX_BENCH_REPEATS = 200
MAX_BENCH_CALLS = 1 + MAX_BENCH_WARMUP + MAX_BENCH_REPEATS
MAX_BENCH_BATCH = 32
MAX_BENCH_CALL = 1 + MAX_BENCH_WARMUP + MAX_BENCH_REPEATS * MAX_BENCH_BATCH
MAX_SIZE_PARAMS = 16
MAX_SIZE_NAME = 40
MAX_CALL_NS = 10**15
# A benchmark's inputs, which the runner holds from the inputs' child until each call: per call, and in all.
MAX_CALL_INPUT_BYTES = 16 * 1024 * 1024
MAX_BENCH_INPUT_BYTES = 64 * 1024 * 1024

# Returned values (values.py): the manifest's nesting, nodes, strings, integers and tensors.
MAX_VALUE_DEPTH = 16
MAX_VALUE_NODES = 10_000
MAX_STR = 64 * 1024
MAX_INT_DIGITS = 4000
MAX_RANK = 8
MAX_DIM = 2**31 - 1
MAX_ELEMENTS = 2**31 - 1  # the product of a shape's non-zero dimensions
# Every value level is at most three JSON levels ({"t": "dict", "items": [[key, node]]}).
MAX_MANIFEST_DEPTH = 3 * MAX_VALUE_DEPTH + 4
# The dtypes a tensor may have on the wire, each with the bytes of one element: its own bit pattern,
# little-endian, never widened (a bfloat16 is 2 bytes, not a float32), so that a value arrives as what it
# was and every byte count is exact.
WIRE_DTYPES = {
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
    "float8_e8m0fnu": 1,
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float64": 8,
    "complex64": 8,
    "complex128": 16,
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "uint8": 1,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "bool": 1,
}

# A JSON string, written as "unrolled" (runs of plain bytes between escapes): the same matches as
# '"(?:[^"\\]|\\.)*"', without one alternation per byte.
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # +1 and -1, as signed bytes


# The contract's own files: the runner says in HELLO which version of them it speaks (a digest), and the grader
# refuses a sandbox whose runner speaks another (an image built before the contract last changed).
CONTRACT_FILES = ("protocol.py", "messages.py", "bench_job.py")


def contract_digest() -> str:
    """A digest of the contract's files as this side has them (their bytes, in order)."""
    folder = os.path.dirname(os.path.abspath(__file__))
    digest = hashlib.sha256()
    for name in CONTRACT_FILES:
        with open(os.path.join(folder, name), "rb") as source:
            digest.update(source.read())
    return digest.hexdigest()[:16]


class FrameError(Exception):
    """Bytes that do not follow the format, or that break its bounds."""


def json_depth(raw: bytes, max_brackets: int) -> int:
    """How deeply a JSON text nests, found without recursion (the C parser recurses once per level).
    Raises FrameError when the text has more brackets than max_brackets."""
    brackets = _JSON_STRING.sub(b'""', raw).translate(None, _NOT_BRACKETS)
    if len(brackets) > max_brackets:
        raise FrameError("too many nested values")
    # The running depth after each bracket, summed in C: the deepest is its maximum.
    return max(0, max(accumulate(array("b", brackets.translate(_STEPS))), default=0))


def loads_bounded(raw: bytes, max_depth: int, max_brackets: int = 1 << 16) -> object:
    """json.loads for hostile bytes: the nesting is checked first; every failure is a FrameError."""
    if json_depth(raw, max_brackets) > max_depth:
        raise FrameError(f"JSON nested deeper than {max_depth}")
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError, MemoryError) as exc:
        raise FrameError(f"not JSON: {type(exc).__name__}") from None


def bounded_text(text: str, limit: int) -> str:
    """At most limit characters, the cut shown; lone surrogates and NULs (which no database or UTF-8
    encoder accepts) replaced."""
    if len(text) > limit:
        text = text[: max(0, limit - len(TRUNCATED))] + TRUNCATED
    if text.isascii():
        return text.replace("\x00", "\ufffd")
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace").replace("\x00", "\ufffd")


# The fields of a report cut first when its header would be over MAX_HEADER_BYTES as encoded: a cap in
# characters is not one in bytes (JSON writes a character outside ASCII as up to 12 bytes).
SHRINKABLE = ("traceback", "output", "message", "error_type")


def fit_header(header: dict) -> dict:
    """The header, its longest texts halved until it encodes within MAX_HEADER_BYTES (with room to spare)."""
    budget = MAX_HEADER_BYTES - 1024
    for key in SHRINKABLE:
        while len(json.dumps(header, separators=(",", ":"))) > budget and isinstance(header.get(key), str):
            text = header[key]
            if len(text) <= len(TRUNCATED):
                header = {name: value for name, value in header.items() if name != key}
                break
            header = {**header, key: bounded_text(text, len(text) // 2)}
    return header


def encode(kind: bytes, header: dict, body: bytes = b"") -> bytes:
    head = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    return PREFIX.pack(MAGIC, kind, len(head), len(body)) + head + body


def encode_fitted(kind: bytes, header: dict, body: bytes = b"") -> bytes:
    """encode() of fit_header(header), the header encoded once where it fits already (nearly always)."""
    head = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    if len(head) > MAX_HEADER_BYTES - 1024:
        return encode(kind, fit_header(header), body)
    return PREFIX.pack(MAGIC, kind, len(head), len(body)) + head + body


# A line the zygote or the runner writes on the container's stderr when it ends the container: the grader
# shows the last of it when the sandbox is lost. Only the judge's own words, each line bounded.
MAX_LOG_LINE = 300


def log_line(fd: int, who: str, text: str) -> None:
    try:
        os.write(fd, f"{who}: {text}"[:MAX_LOG_LINE].encode("ascii", "replace") + b"\n")
    except (OSError, ValueError):
        pass


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


def read_frame_head(fd: int, max_body: int, max_depth: int = MAX_HEADER_DEPTH) -> tuple[bytes, dict, int]:
    """A frame's kind, header and body's length from a blocking descriptor, the body left to read."""
    magic, kind, head_len, body_len = PREFIX.unpack(read_exactly(fd, PREFIX.size))
    if magic != MAGIC or head_len > MAX_HEADER_BYTES or body_len > max_body:
        raise FrameError("bad frame prefix")
    header = loads_bounded(read_exactly(fd, head_len), max_depth)
    if not isinstance(header, dict):
        raise FrameError("frame header is not an object")
    return kind, header, body_len


def read_frame(fd: int, max_body: int, max_depth: int = MAX_HEADER_DEPTH) -> tuple[bytes, dict, bytes]:
    """One frame from a blocking descriptor (the runner's stdin, the child's command pipe)."""
    kind, header, body_len = read_frame_head(fd, max_body, max_depth)
    body = read_exactly(fd, body_len) if body_len else b""
    return kind, header, body


class FrameReader:
    """Frames arriving on a non-blocking pipe (a child's result pipe). Whatever the child writes, feed()
    returns frames or raises FrameError (malformed) or OverflowError (a body over max_body)."""

    def __init__(self, max_body: int) -> None:
        self.max_body = max_body
        self.buffer = bytearray()

    def feed(self, data: bytes) -> list[tuple[bytes, dict, bytes]]:
        self.buffer += data
        frames = []
        while len(self.buffer) >= PREFIX.size:
            magic, kind, head_len, body_len = PREFIX.unpack_from(self.buffer)
            if magic != MAGIC or head_len > MAX_HEADER_BYTES:
                raise FrameError("bad frame prefix")
            if body_len > self.max_body:
                raise OverflowError(body_len)
            total = PREFIX.size + head_len + body_len
            if len(self.buffer) < total:
                break
            header = loads_bounded(bytes(self.buffer[PREFIX.size : PREFIX.size + head_len]), MAX_HEADER_DEPTH)
            if not isinstance(header, dict):
                raise FrameError("frame header is not an object")
            body = bytes(self.buffer[PREFIX.size + head_len : total])
            del self.buffer[:total]
            frames.append((kind, header, body))
        return frames
