"""What the frames carry (protocol.py has the frames): the job the grader sends, a child's share of it,
the command to run one test, and the report of how a load or a test ended. Stdlib only, part of the one
contract: the grader builds its jobs from these classes, the runner and the child read them back.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from itertools import pairwise
from typing import Any

from .protocol import (
    MAX_ENTRY_POINTS,
    MAX_ERROR_TYPE,
    MAX_JOB_BYTES,
    MAX_JOB_DEPTH,
    MAX_LIMIT_MEMORY_MB,
    MAX_LINE,
    MAX_MESSAGE,
    MAX_OUTPUT_KB,
    MAX_RESULT_BYTES,
    MAX_SEED,
    MAX_TEST_TIME_S,
    MAX_TESTS,
    MAX_TRACEBACK,
    MIN_MEMORY_MB,
    MIN_RESULT_BYTES,
    MIN_TEST_TIME_S,
    SETTING_NAMES,
    FrameError,
    Outcome,
    bounded_text,
    loads_bounded,
)


# -- the job (grader -> runner) ----------------------------------------------------------------------
def _number(value: object, low: float, high: float, what: str, integer: bool = False) -> None:
    """An int (or, unless `integer`, a finite float) within [low, high]; compared as it is, never converted
    (a 400-digit integer is out of range, not an OverflowError)."""
    kinds = (int,) if integer else (int, float)
    if type(value) not in kinds or (type(value) is float and not math.isfinite(value)):
        raise FrameError(f"malformed job: {what}")
    if not low <= value <= high:  # type: ignore[operator]
        raise FrameError(f"malformed job: {what}")


def _text(value: object, what: str) -> str:
    if type(value) is not str:
        raise FrameError(f"malformed job: {what}")
    return value


def memory_switches(limits: Sequence[object]) -> int:
    """How many tests have a memory other than the test's before them: each starts a fresh child."""
    return sum(1 for before, after in pairwise(limits) if before.memory_mb != after.memory_mb)  # type: ignore[attr-defined]


def _limit(description: str, low: float, high: float, file: tuple[float, float]) -> Any:
    """A per-test limit: what it bounds, the range the runner takes, and the range a problem file may ask."""
    return field(metadata={"description": description, "range": (low, high), "file": file})


@dataclass(frozen=True)
class Limits:
    """One test's limits, each declared once here: the runner's bounds, and a problem file's (the `limits` of a
    problem or a test, grader/problems/schema.py, are made from these fields). Resolved once on the trusted side
    (`under`: the server's defaults, then the problem's, then the test's own), carried whole to the runner."""

    time_s: float = _limit("wall-clock seconds per test", MIN_TEST_TIME_S, MAX_TEST_TIME_S, file=(0.001, 60))
    memory_mb: int = _limit("memory of the process running the tests", MIN_MEMORY_MB, MAX_LIMIT_MEMORY_MB, (64, 16384))
    output_kb: int = _limit("what a test may print (stdout and stderr)", 1, MAX_OUTPUT_KB, file=(1, 65536))

    def __post_init__(self) -> None:
        for limit in fields(self):
            value, integer = getattr(self, limit.name), limit.type == "int"
            _number(value, *limit.metadata["range"], limit.name, integer=integer)
            if not integer and type(value) is int:
                object.__setattr__(self, limit.name, float(value))

    def under(self, own: object | None) -> Limits:
        """These limits with what `own` sets in their place (its limits that are not None): a problem's
        within the server's defaults, a test's within its problem's."""
        changes = {limit.name: value for limit in fields(self) if (value := getattr(own, limit.name, None)) is not None}
        return replace(self, **changes) if changes else self


@dataclass(frozen=True)
class JobTest:
    code: str
    seed: int
    limits: Limits

    def __post_init__(self) -> None:
        _text(self.code, "a test's code")
        _number(self.seed, 0, MAX_SEED, "seed", integer=True)
        if type(self.limits) is not Limits:
            raise FrameError("malformed job: a test's limits")


@dataclass(frozen=True)
class Job:
    """Everything the runner needs for one module: its source, its entry points, the tests in order, each
    with its seed and its limits. Checked when made, on either side: a job the grader cannot send is one
    the runner would refuse."""

    source: str
    entry_points: tuple[str, ...]
    tests: tuple[JobTest, ...]
    load_time_s: float
    max_result_bytes: int
    helpers: str = ""  # the problem's helpers, run in each test's namespace before its code
    # A test that runs out of time ends the job, the tests after it reported skipped (not run).
    skip_after_timeout: bool = False
    # Dotted names the module may not use: each replaced in its child by a function that fails (forbid.py).
    forbid: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _text(self.source, "source")
        _text(self.helpers, "helpers")
        object.__setattr__(self, "entry_points", tuple(self.entry_points))
        object.__setattr__(self, "tests", tuple(self.tests))
        if not 0 < len(self.entry_points) <= MAX_ENTRY_POINTS:
            raise FrameError("malformed job: entry points")
        for name in self.entry_points:
            _text(name, "an entry point")
        if not 0 < len(self.tests) <= MAX_TESTS or any(type(test) is not JobTest for test in self.tests):
            raise FrameError("malformed job: tests")
        _number(self.load_time_s, 1e-3, MAX_TEST_TIME_S, "load_time_s")
        _number(self.max_result_bytes, MIN_RESULT_BYTES, MAX_RESULT_BYTES, "max_result_bytes", integer=True)
        if type(self.skip_after_timeout) is not bool:
            raise FrameError("malformed job: skip_after_timeout")
        object.__setattr__(self, "forbid", _names(self.forbid))

    def payload(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":"), allow_nan=False).encode()

    @classmethod
    def parse(cls, body: bytes) -> Job:
        """The job from its payload; FrameError for anything else (the grader's bytes, checked anyway)."""
        raw = loads_bounded(body, MAX_JOB_DEPTH, max_brackets=4 * MAX_TESTS + 64)
        try:
            tests = tuple(
                JobTest(code=test["code"], seed=test["seed"], limits=Limits(**test["limits"])) for test in raw["tests"]
            )
            return cls(**{**raw, "tests": tests})
        except (KeyError, TypeError, ValueError, ArithmeticError) as exc:
            raise FrameError(f"malformed job: {type(exc).__name__}") from None

    def reload_budget_s(self) -> float:
        """How long the fresh children of this job may take to load the module again, in all: one load's time
        for each change of memory between tests (each needs a child of its own), and one more for the reloads
        after tests that end their process. Past it, the tests left are errors (runner.py); the trusted side's
        bound on the whole job counts the same (grader/grading/execution.py job_bound_s)."""
        return (1 + memory_switches([test.limits for test in self.tests])) * self.load_time_s


MAX_FORBIDDEN = 32


def _names(names: Any) -> tuple[str, ...]:
    """Dotted names (a problem's forbid), checked: at most MAX_FORBIDDEN, each identifiers joined by dots."""
    if not isinstance(names, (list, tuple)) or len(names) > MAX_FORBIDDEN:
        raise FrameError("malformed job: forbid")
    for name in names:
        if type(name) is not str or len(name) > 200 or not all(part.isidentifier() for part in name.split(".")):
            raise FrameError("malformed job: forbid")
    return tuple(names)


@dataclass(frozen=True)
class TestCommand:
    """The runner's command to a child to run one test. The frame's body is the test's code (its first
    `code_bytes` bytes, UTF-8), then that code as the runner compiled it (marshal; none where it did not
    compile there: the child compiles it, and reports why it fails)."""

    index: int
    seed: int
    code_bytes: int = 0

    def header(self) -> dict:
        return {"index": self.index, "seed": self.seed, "code_bytes": self.code_bytes}

    @classmethod
    def parse(cls, header: dict) -> TestCommand:
        index, seed, code_bytes = header.get("index"), header.get("seed"), header.get("code_bytes")
        _number(index, 0, MAX_TESTS - 1, "index", integer=True)
        _number(seed, 0, MAX_SEED, "seed", integer=True)
        _number(code_bytes, 0, MAX_JOB_BYTES, "code_bytes", integer=True)
        return cls(index, seed, code_bytes)  # type: ignore[arg-type]


# -- reports (a child's, and the runner's own, inside the container) -------------------------------------
_TEXT_FIELDS = (("message", MAX_MESSAGE), ("error_type", MAX_ERROR_TYPE), ("traceback", MAX_TRACEBACK))


@dataclass
class Report:
    """How a load or a test ended, as the child reports it or as the runner's own accounting tells it."""

    status: Outcome
    message: str | None = None
    error_type: str | None = None
    traceback: str | None = None
    line: int | None = None
    # Torch's settings the code left changed (SETTING_NAMES): the judge puts them back; the check names them.
    settings_changed: list[str] = field(default_factory=list)
    index: int | None = None  # a child's test result: the test it answers

    def header(self) -> dict:
        """The wire header: the fields that are set, each within its bound."""
        header: dict = {"status": self.status.value}
        for key, limit in _TEXT_FIELDS:
            value = getattr(self, key)
            if value is not None:
                header[key] = bounded_text(value, limit)
        if self.line is not None:
            header["line"] = self.line
        if self.settings_changed:
            header["settings_changed"] = list(self.settings_changed)
        if self.index is not None:
            header["index"] = self.index
        return header

    @classmethod
    def from_child(cls, header: dict, allowed: tuple[Outcome, ...], indexed: bool = False) -> Report:
        """A child's header, re-read: only known fields, each of its type and within its bound; a status
        outside `allowed` is an error; `index` only for a test's result (`indexed`), never a load's."""
        status = header.get("status")
        report = cls(Outcome(status) if type(status) is str and status in allowed else Outcome.ERROR)
        for key, limit in _TEXT_FIELDS:
            value = header.get(key)
            if type(value) is str:
                setattr(report, key, bounded_text(value, limit))
        line = header.get("line")
        if type(line) is int and 0 <= line <= MAX_LINE:
            report.line = line
        changed = header.get("settings_changed")
        if type(changed) is list:
            report.settings_changed = [name for name in SETTING_NAMES if name in changed]
        index = header.get("index")
        if indexed and type(index) is int and 0 <= index < MAX_TESTS:
            report.index = index
        return report


def error(message: str, error_type: str) -> Report:
    return Report(Outcome.ERROR, message=message, error_type=error_type)
