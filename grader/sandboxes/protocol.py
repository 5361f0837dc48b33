"""The protocol between the grader and the runner inside a sandbox: one typed definition of the job
that goes in and of every frame that comes out, each field with its bound.

The runner has a stdlib twin of these constants (sandbox/runner/protocol.py); tests/unit/test_protocol.py
checks that the two agree. What comes out of a sandbox is hostile bytes: a header is parsed only after
its JSON nesting is known to be shallow (no recursion on crafted input), validated strictly against
its model (unknown fields, wrong types, integers out of range are refused), and every string in it is
cut to its cap with the cut shown, with the characters no database or encoder accepts replaced.
"""

from __future__ import annotations

import json
import re
from array import array
from enum import StrEnum
from itertools import accumulate
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

MAGIC = b"TJ"

# Frame kinds. grader -> runner:
JOB = b"J"
# runner -> grader:
HELLO = b"H"
LOAD = b"L"
TEST = b"T"
DONE = b"D"


class Outcome(StrEnum):
    """The runner's word for how loading the submission, or one test, ended."""

    OK = "ok"
    COMPILE_ERROR = "compile_error"  # loading only
    ERROR = "error"
    TIMEOUT = "timeout"
    MEMORY = "memory"
    OUTPUT = "output"
    SKIPPED = "skipped"  # a test only: not run, the job asked to skip what follows a timeout


LOAD_OUTCOMES = tuple(o for o in Outcome if o is not Outcome.SKIPPED)
TEST_OUTCOMES = tuple(o for o in Outcome if o is not Outcome.COMPILE_ERROR)

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
TRUNCATED = " … (truncated)"

MAX_VALUE_DEPTH = 16
MAX_VALUE_NODES = 10_000
MAX_STR = 64 * 1024
MAX_INT_DIGITS = 4000
MAX_RANK = 8
MAX_DIM = 2**31 - 1
MAX_ELEMENTS = 2**31 - 1
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


class ProtocolViolation(Exception):
    """Bytes from a sandbox that break the format or its bounds."""


def json_depth(raw: bytes, max_brackets: int) -> int:
    """How deeply a JSON text nests, found without recursion; ProtocolViolation past max_brackets."""
    brackets = _JSON_STRING.sub(b'""', raw).translate(None, _NOT_BRACKETS)
    if len(brackets) > max_brackets:
        raise ProtocolViolation("too many nested values")
    # The running depth after each bracket, summed in C: the deepest is its maximum.
    return max(0, max(accumulate(array("b", brackets.translate(_STEPS))), default=0))


def loads_bounded(raw: bytes, max_depth: int, max_brackets: int = 1 << 16) -> object:
    """json.loads for hostile bytes: nesting checked first; every failure is a ProtocolViolation."""
    if json_depth(raw, max_brackets) > max_depth:
        raise ProtocolViolation(f"JSON nested deeper than {max_depth}")
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError, MemoryError) as exc:
        raise ProtocolViolation(f"not JSON: {type(exc).__name__}") from None


def bounded_text(text: str, limit: int) -> str:
    """At most `limit` characters, the cut shown; lone surrogates and NULs replaced (no UTF-8 encoder,
    and no PostgreSQL text column, accepts them)."""
    if len(text) > limit:
        text = text[: max(0, limit - len(TRUNCATED))] + TRUNCATED
    if text.isascii():
        return text.replace("\x00", "\ufffd")
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace").replace("\x00", "\ufffd")


def _capped(limit: int) -> AfterValidator:
    return AfterValidator(lambda text: bounded_text(text, limit))


Message = Annotated[str, _capped(MAX_MESSAGE)]
Traceback = Annotated[str, _capped(MAX_TRACEBACK)]
ErrorType = Annotated[str, _capped(MAX_ERROR_TYPE)]
Output = Annotated[str, _capped(MAX_OUTPUT + len(TRUNCATED))]
Line = Annotated[int, Field(ge=0, le=MAX_LINE)]


class _Frame(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


class HelloHeader(_Frame):
    torch: str = Field(max_length=64)
    python: str = Field(max_length=64)
    landlock: int = Field(0, ge=0, le=1000)


# Torch's and NumPy's process-wide settings the child puts back before every test (sandbox/runner/torchstate.py).
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
SettingName = Literal[SETTING_NAMES]  # type: ignore[valid-type]


class _Failure(_Frame):
    # The settings the module's import (a load header) or the test's code (a test header) left changed: the
    # judge puts them back; the problem check names a reference or a test that changes them.
    settings_changed: list[SettingName] | None = Field(None, max_length=len(SETTING_NAMES))
    message: Message | None = None
    error_type: ErrorType | None = None
    traceback: Traceback | None = None
    line: Line | None = None


# An enum from JSON or from Python alike (strict mode would take only members from Python).
Status = Annotated[Outcome, Field(strict=False)]


class LoadHeader(_Failure):
    status: Status
    time_ms: float | None = Field(None, ge=0, le=MAX_TIME_MS)  # the runner's own clock; for the metrics only

    @field_validator("status")
    @classmethod
    def _a_load_outcome(cls, status: Outcome) -> Outcome:
        if status not in LOAD_OUTCOMES:
            raise ValueError("loading cannot be skipped")
        return status


class TestHeader(_Failure):
    index: int = Field(ge=0, lt=MAX_TESTS)
    status: Status
    time_ms: float = Field(ge=0, le=MAX_TIME_MS)
    # The test's peak resident memory in MB, measured by the runner (the child's high-water mark, reset before
    # the test); absent where it could not be measured (the process ended, or no reset: see docs/architecture.md).
    memory_mb: int | None = Field(None, ge=0, le=MAX_MEMORY_MB)
    output: Output | None = None

    @field_validator("status")
    @classmethod
    def _not_compile_error(cls, status: Outcome) -> Outcome:
        if status not in TEST_OUTCOMES:
            raise ValueError("a test cannot end with a compile error")
        return status


class DoneHeader(_Frame):
    clean: bool
    ready: bool = False  # the next job's child is prepared and warm (the runner waited for it)


HEADERS: dict[bytes, type[_Frame]] = {HELLO: HelloHeader, LOAD: LoadHeader, TEST: TestHeader, DONE: DoneHeader}


# -- the job (trusted -> runner) --------------------------------------------------------------------
class JobLimits(_Frame):
    time_s: float = Field(gt=0, le=600)
    memory_mb: int = Field(ge=16, le=1 << 20)
    output_kb: int = Field(ge=1, le=1 << 20)


class JobTest(_Frame):
    code: str
    seed: int = Field(ge=0, le=MAX_SEED)


class JobSpec(_Frame):
    """Everything the runner needs for one module: its source, its entry points, the tests in order."""

    source: str
    entry_points: list[str] = Field(min_length=1, max_length=64)
    limits: JobLimits
    load_time_s: float = Field(gt=0, le=600)
    max_result_bytes: int = Field(ge=1024, le=1 << 30)
    helpers: str = ""  # the problem's helpers, run in each test's namespace before its code
    # skip: a test that runs out of time ends the job, the tests after it reported skipped (not run).
    after_timeout: Literal["skip", "run"] = "run"
    tests: list[JobTest] = Field(min_length=1, max_length=MAX_TESTS)

    def payload(self) -> bytes:
        return self.model_dump_json().encode()
