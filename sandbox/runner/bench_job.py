"""A benchmark job, part of the one contract (stdlib only; protocol.py has the frames and the bounds).

A benchmark times one module, the subject, against another, the baseline, in the same container: both are
loaded in children of their own, pinned to one CPU, and called in turn (A B, then B A, ...) on inputs the
problem's code builds from seeds, each call on inputs of its own. The runner's clock times each call, from
the command sent to the whole returned value received; the child's own word on time decides nothing. The
inputs of every call are built before the module is imported, so that no code of the module's runs while
they are made. With no baseline the subject is only called (the reference, whose returned values the
trusted side keeps to check a submission's calls against).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, replace

from .messages import Limits, _number, _text
from .protocol import (
    MAX_BENCH_REPEATS,
    MAX_BENCH_SIZES,
    MAX_BENCH_WARMUP,
    MAX_JOB_DEPTH,
    MAX_RESULT_BYTES,
    MAX_SEED,
    MAX_SIZE_NAME,
    MAX_SIZE_PARAMS,
    MAX_TEST_TIME_S,
    MIN_RESULT_BYTES,
    FrameError,
    loads_bounded,
)

DEVICES = ("cpu", "cuda")
GIVE_UP_S = 1.0
SIZE_PARAM_TYPES = (bool, int, float, str)


@dataclass(frozen=True)
class BenchSize:
    """One input size: its name (shown) and its parameters, which the inputs' code reads as `size[...]`."""

    name: str
    params: dict

    def __post_init__(self) -> None:
        if type(self.name) is not str or not 0 < len(self.name) <= MAX_SIZE_NAME:
            raise FrameError("malformed benchmark: a size's name")
        if type(self.params) is not dict or len(self.params) > MAX_SIZE_PARAMS:
            raise FrameError("malformed benchmark: a size's parameters")
        for key, value in self.params.items():
            if type(key) is not str or not key.isidentifier() or type(value) not in SIZE_PARAM_TYPES:
                raise FrameError("malformed benchmark: a size's parameter")
            if type(value) is float and not math.isfinite(value) or type(value) is str and len(value) > MAX_SIZE_NAME:
                raise FrameError("malformed benchmark: a size's parameter")
            if type(value) is int and abs(value) > 2**53:
                raise FrameError("malformed benchmark: a size's parameter")

    def scope(self) -> dict:
        """What the inputs' code sees as `size`: the parameters, and the name."""
        return {**self.params, "name": self.name}


@dataclass(frozen=True)
class Bench:
    """What each child of a benchmark needs: the inputs to build (every call's, before the module is imported)
    and the function to call on them."""

    entry_point: str
    inputs: str  # the body of a function: `size` in scope, torch/random/numpy seeded; returns a list or a dict
    sizes: tuple[BenchSize, ...]
    seed: int
    warmup: int
    repeats: int
    fresh_inputs: bool = True  # each call's inputs drawn under a seed of its own; else each size's the same values
    device: str = "cpu"
    helpers: str = ""

    def __post_init__(self) -> None:
        _text(self.entry_point, "the entry point timed")
        if not self.entry_point.isidentifier():
            raise FrameError("malformed benchmark: the entry point timed")
        _text(self.inputs, "inputs")
        _text(self.helpers, "helpers")
        object.__setattr__(self, "sizes", tuple(self.sizes))
        if not 0 < len(self.sizes) <= MAX_BENCH_SIZES or any(type(size) is not BenchSize for size in self.sizes):
            raise FrameError("malformed benchmark: sizes")
        _number(self.seed, 0, MAX_SEED, "seed", integer=True)
        _number(self.warmup, 0, MAX_BENCH_WARMUP, "warmup", integer=True)
        _number(self.repeats, 1, MAX_BENCH_REPEATS, "repeats", integer=True)
        if type(self.fresh_inputs) is not bool or self.device not in DEVICES:
            raise FrameError("malformed benchmark: fresh_inputs or device")

    @property
    def calls(self) -> int:
        """Calls at each size: the first (timed apart), the warm-up (not counted), the timed repetitions."""
        return 1 + self.warmup + self.repeats

    def checked(self, call: int) -> bool:
        """Whether a call's returned value is checked against the reference's: the first, and every timed one."""
        return call == 0 or call > self.warmup

    def call_seed(self, size: int, call: int) -> int:
        """The seed a call's inputs are drawn under: the same on every side, so that the reference's call `call`
        at size `size` gets the values the submission's got; a hash, so that one call's seed tells nothing of
        another's."""
        draw = call if self.fresh_inputs else 0
        digest = hashlib.sha256(f"torchjudge-bench:{self.seed}:{size}:{draw}".encode()).digest()
        return int.from_bytes(digest[:8], "big") & MAX_SEED

    def for_module(self) -> Bench:
        """What a module's child is told: what to call and how many calls, never how the inputs are made nor their
        seed (each call's inputs come with its command: execute_bench.py)."""
        return replace(self, inputs="", seed=0, helpers="")

    @classmethod
    def of(cls, raw: object) -> Bench:
        if type(raw) is not dict:
            raise FrameError("malformed benchmark")
        try:
            sizes = tuple(BenchSize(**size) for size in raw["sizes"])
            return cls(**{**raw, "sizes": sizes})
        except (KeyError, TypeError, ValueError, ArithmeticError) as exc:
            raise FrameError(f"malformed benchmark: {type(exc).__name__}") from None


@dataclass(frozen=True)
class BenchJob:
    """A benchmark for the runner: the subject, the baseline ("" for none), what to build and call, and the
    limits of each call (its time, each process's memory, what it may print)."""

    subject: str
    baseline: str
    bench: Bench
    limits: Limits
    load_time_s: float
    max_result_bytes: int
    # The subject is stopped once its calls have taken this many times the baseline's in all, plus GIVE_UP_S: it
    # can no longer reach the threshold, and a slow module would hold the container and the CPU (0: never).
    max_ratio: float = 0.0
    # What the subject's checked calls may return in all, in bytes: past it the benchmark ends (the subject's
    # output limit), so that neither the runner nor the trusted side holds more (0: max_result_bytes per call).
    max_total_bytes: int = 0

    def __post_init__(self) -> None:
        _text(self.subject, "subject")
        _number(self.max_ratio, 0, 1e6, "max_ratio")
        _number(self.max_total_bytes, 0, MAX_RESULT_BYTES, "max_total_bytes", integer=True)
        _text(self.baseline, "baseline")
        if type(self.bench) is not Bench or type(self.limits) is not Limits:
            raise FrameError("malformed benchmark job")
        _number(self.load_time_s, 1e-3, MAX_TEST_TIME_S, "load_time_s")
        _number(self.max_result_bytes, MIN_RESULT_BYTES, MAX_RESULT_BYTES, "max_result_bytes", integer=True)

    def payload(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":"), allow_nan=False).encode()

    @classmethod
    def parse(cls, body: bytes) -> BenchJob:
        raw = loads_bounded(body, MAX_JOB_DEPTH + 1, max_brackets=8 * MAX_BENCH_SIZES + 64)
        try:
            return cls(**{**raw, "bench": Bench.of(raw["bench"]), "limits": Limits(**raw["limits"])})
        except (KeyError, TypeError, ValueError, ArithmeticError) as exc:
            raise FrameError(f"malformed benchmark job: {type(exc).__name__}") from None

    def total_bytes(self) -> int:
        """What the subject's checked calls may return in all."""
        checked = len(self.bench.sizes) * (1 + self.bench.repeats)
        return self.max_total_bytes or min(MAX_RESULT_BYTES, checked * self.max_result_bytes)

    def bound_s(self) -> float:
        """How long the whole benchmark may take, at most: two loads, each call of both modules to its limit."""
        modules = 2 if self.baseline else 1
        calls = len(self.bench.sizes) * self.bench.calls * modules
        return modules * self.load_time_s + calls * (self.limits.time_s + 0.05)


@dataclass(frozen=True)
class CallCommand:
    """The runner's command to a child to make one call: the size, and the call's number at that size."""

    size: int
    call: int

    def header(self) -> dict:
        return {"size": self.size, "call": self.call}

    @classmethod
    def parse(cls, header: dict, bench: Bench) -> CallCommand:
        size, call = header.get("size"), header.get("call")
        _number(size, 0, len(bench.sizes) - 1, "size", integer=True)
        _number(call, 0, bench.calls - 1, "call", integer=True)
        return cls(size, call)  # type: ignore[arg-type]
