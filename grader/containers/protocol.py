"""The trusted side of the one contract (sandbox/runner/protocol.py and messages.py, shipped in the
sandbox image and imported here): every frame that comes out of a sandbox, typed, each field with its bound.

What comes out of a sandbox is hostile bytes: a header is parsed only after
its JSON nesting is known to be shallow (no recursion on crafted input), validated strictly against
its model (unknown fields, wrong types, integers out of range are refused), and every string in it is
cut to its cap with the cut shown, with the characters no database or encoder accepts replaced.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

# The contract itself, shipped in the sandbox image: kinds, outcome words, bounds, bounded JSON and text, the job.
from sandbox.runner.bench_job import KEPT, Bench, BenchJob, BenchSize
from sandbox.runner.messages import Job, JobTest, Limits
from sandbox.runner.protocol import (
    BENCH_END,
    BENCH_JOB,
    CALL,
    DONE,
    HELLO,
    JOB,
    LOAD,
    LOAD_OUTCOMES,
    MAGIC,
    MAX_BENCH_BATCH,
    MAX_BENCH_CALL,
    MAX_BENCH_CALLS,
    MAX_BENCH_SIZES,
    MAX_CALL_NS,
    MAX_DIM,
    MAX_ELEMENTS,
    MAX_ERROR_TYPE,
    MAX_HEADER_BYTES,
    MAX_HEADER_DEPTH,
    MAX_INT_DIGITS,
    MAX_JOB_BYTES,
    MAX_LINE,
    MAX_MANIFEST_DEPTH,
    MAX_MEMORY_MB,
    MAX_MESSAGE,
    MAX_OUTPUT,
    MAX_RANK,
    MAX_SEED,
    MAX_STR,
    MAX_TESTS,
    MAX_TIME_MS,
    MAX_TRACEBACK,
    MAX_VALUE_DEPTH,
    MAX_VALUE_NODES,
    PREFIX,
    SETTING_NAMES,
    SIZE,
    TEST,
    TEST_OUTCOMES,
    TRUNCATED,
    WIRE_DTYPES,
    FrameError,
    Outcome,
    bounded_text,
    contract_digest,
    json_depth,
    loads_bounded,
)

__all__ = [
    "BENCH_END",
    "BENCH_JOB",
    "CALL",
    "MAX_BENCH_BATCH",
    "MAX_BENCH_CALL",
    "MAX_BENCH_CALLS",
    "MAX_BENCH_SIZES",
    "MAX_CALL_NS",
    "SIZE",
    "KEPT",
    "Bench",
    "BenchJob",
    "BenchSize",
    "DONE",
    "HELLO",
    "JOB",
    "LOAD",
    "LOAD_OUTCOMES",
    "MAGIC",
    "MAX_DIM",
    "MAX_ELEMENTS",
    "MAX_ERROR_TYPE",
    "MAX_HEADER_BYTES",
    "MAX_HEADER_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_JOB_BYTES",
    "MAX_LINE",
    "MAX_MANIFEST_DEPTH",
    "MAX_MEMORY_MB",
    "MAX_MESSAGE",
    "MAX_OUTPUT",
    "MAX_RANK",
    "MAX_SEED",
    "MAX_STR",
    "MAX_TESTS",
    "MAX_TIME_MS",
    "MAX_TRACEBACK",
    "MAX_VALUE_DEPTH",
    "MAX_VALUE_NODES",
    "PREFIX",
    "SETTING_NAMES",
    "TEST",
    "TEST_OUTCOMES",
    "TRUNCATED",
    "WIRE_DTYPES",
    "FrameError",
    "Outcome",
    "bounded_text",
    "contract_digest",
    "json_depth",
    "loads_bounded",
    "Job",
    "JobTest",
    "Limits",
]


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
    contract: str = Field("", max_length=64)  # the contract's digest as the runner has it (CONTRACT_FILES)


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
    # A benchmark's: "judge" when the problem's inputs' code failed before any module was loaded (the runner's
    # word, never a module's: a module's failure can carry any error_type, "BenchInputs" included).
    who: Literal["", "judge"] = ""

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


# -- a benchmark's frames (sandbox/runner/timing.py) ---------------------------------------------------------
SizeIndex = Annotated[int, Field(ge=0, lt=MAX_BENCH_SIZES)]
CallIndex = Annotated[int, Field(ge=0, lt=MAX_BENCH_CALL)]
Batch = Annotated[int, Field(ge=1, le=MAX_BENCH_BATCH)]
Nanoseconds = Annotated[int, Field(ge=0, le=MAX_CALL_NS)]


class CallHeader(_Frame):
    """A kept call of the subject's (to be checked): its size and number; the body is the value it returned."""

    size: SizeIndex
    call: CallIndex


class SizeHeader(_Frame):
    """One size's times, in order, as the benchmark's clock measured them net of the harness (the first call, the
    warm-up calls, then each timed region's per call), from a command to its whole value; the baseline's empty
    when there is none. The calls in each module's timed regions, and the harness's time per call taken off."""

    size: SizeIndex
    subject_ns: list[Nanoseconds] = Field(max_length=MAX_BENCH_CALLS)
    baseline_ns: list[Nanoseconds] = Field(max_length=MAX_BENCH_CALLS)
    subject_batch: Batch = 1
    baseline_batch: Batch = 1
    harness_ns: Nanoseconds = 0


class BenchEndHeader(_Failure):
    """How a benchmark ended: ok, or the first call (or load of the baseline) that did not, and whose it was."""

    status: Status
    who: Literal["", "subject", "baseline", "judge"]  # judge: the inputs' code, the null module
    cpu: int = Field(ge=-1, le=4095)
    size: SizeIndex | None = None
    call: CallIndex | None = None
    output: Output | None = None
    baseline_load_ms: float | None = Field(None, ge=0, le=MAX_TIME_MS)
    clock: Literal["cpu", "wall"] = "wall"  # each child's own CPU time, or the runner's wall clock (gVisor)

    @field_validator("status")
    @classmethod
    def _not_skipped(cls, status: Outcome) -> Outcome:
        if status == Outcome.SKIPPED:
            raise ValueError("a benchmark is not skipped")
        return status


HEADERS: dict[bytes, type[_Frame]] = {
    HELLO: HelloHeader,
    LOAD: LoadHeader,
    TEST: TestHeader,
    DONE: DoneHeader,
    CALL: CallHeader,
    SIZE: SizeHeader,
    BENCH_END: BenchEndHeader,
}
BODIES = (TEST, CALL)  # the frames that may carry a returned value
