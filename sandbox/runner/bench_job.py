"""A benchmark job, part of the one contract (stdlib only; protocol.py has the frames and the bounds).

A benchmark times one module, the subject, against another, the baseline, in the same container: both are
loaded in children of their own, pinned to one CPU, and called in turn (A B, then B A, ...) on inputs the
problem's code builds from seeds, each call on inputs of its own, drawn by a child that runs only the judge's
and the problem's code. At each size, the first call and each warm-up call are timed alone; then each timed
region is as many calls in a row, on distinct inputs, as make about REGION_NS of the module's work (autorange,
as `timeit` does), so that neither the clock's grain nor the harness's fixed costs show. The runner's clock
times each region from its first command to its last whole value; the child's own word on time decides
nothing. A third child, the judge's null module, makes the same calls on the same inputs, returning values of
the same sizes: its time, the harness's own (frames, decoding, encoding), is taken off each module's.

Every value a module returns is sent whole (its work is done inside the clock); of each size's timed calls
the runner keeps KEPT values, drawn as they come (any call as likely as another: a module cannot know which),
and the first call's, which the trusted side checks against the reference's on the same inputs. A reference
job (`only`: the calls to make, one at a time) makes exactly the calls a subject's benchmark kept.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, replace

from .messages import Limits, _number, _text
from .protocol import (
    MAX_BENCH_BATCH,
    MAX_BENCH_CALLS,
    MAX_BENCH_INPUT_BYTES,
    MAX_BENCH_REPEATS,
    MAX_BENCH_SIZES,
    MAX_BENCH_WARMUP,
    MAX_CALL_INPUT_BYTES,
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
REGION_NS = 10_000_000  # the work a timed region aims at: a tenth of a region's own time limit at most
KEPT = 8  # the values of a size's timed calls kept for the trusted side to check, drawn among all of them
NULL_SOURCE = "# the judge's null module: every call returns a value of the size it is told (execute_bench.py)\n"
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
    null: bool = False  # the judge's null module's child: its calls return values of the sizes they are told

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
        if type(self.fresh_inputs) is not bool or self.device not in DEVICES or type(self.null) is not bool:
            raise FrameError("malformed benchmark: fresh_inputs, device or null")

    @property
    def calls(self) -> int:
        """Times taken at each size: the first call's, the warm-up calls' (not counted), the timed regions'."""
        return 1 + self.warmup + self.repeats

    @property
    def kept(self) -> int:
        """The timed calls' values kept at each size (besides the first call's): KEPT, drawn as they come."""
        return min(self.repeats, KEPT)

    @property
    def max_call(self) -> int:
        """The calls a size may have: the first, the warm-up, each timed region's MAX_BENCH_BATCH at most."""
        return 1 + self.warmup + self.repeats * MAX_BENCH_BATCH

    def call_seed(self, size: int, call: int) -> int:
        """The seed a call's inputs are drawn under: the same on every side, so that the reference's call `call`
        at size `size` gets the values the submission's got; a hash, so that one call's seed tells nothing of
        another's."""
        draw = call if self.fresh_inputs else 0
        digest = hashlib.sha256(f"torchjudge-bench:{self.seed}:{size}:{draw}".encode()).digest()
        return int.from_bytes(digest[:8], "big") & MAX_SEED

    def for_module(self, null: bool = False) -> Bench:
        """What a module's child is told: what to call and how many calls, never how the inputs are made nor their
        seed (each call's inputs come with its command: execute_bench.py)."""
        return replace(self, inputs="", seed=0, helpers="", null=null)

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
    # What the subject's kept calls may return in all, in bytes: past it the benchmark ends (the subject's
    # output limit), so that neither the runner nor the trusted side holds more (0: max_result_bytes per call).
    max_total_bytes: int = 0
    # A reference's job: the calls to make, (size, call) in order, each alone, every value sent (no baseline).
    only: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        _text(self.subject, "subject")
        _number(self.max_ratio, 0, 1e6, "max_ratio")
        _number(self.max_total_bytes, 0, MAX_RESULT_BYTES, "max_total_bytes", integer=True)
        _text(self.baseline, "baseline")
        if type(self.bench) is not Bench or type(self.limits) is not Limits:
            raise FrameError("malformed benchmark job")
        _number(self.load_time_s, 1e-3, MAX_TEST_TIME_S, "load_time_s")
        _number(self.max_result_bytes, MIN_RESULT_BYTES, MAX_RESULT_BYTES, "max_result_bytes", integer=True)
        only = tuple(tuple(pair) if type(pair) in (list, tuple) else pair for pair in self.only)
        object.__setattr__(self, "only", only)
        if len(only) > len(self.bench.sizes) * MAX_BENCH_CALLS or (only and self.baseline):
            raise FrameError("malformed benchmark job: only")
        for pair in only:
            if type(pair) is not tuple or len(pair) != 2:
                raise FrameError("malformed benchmark job: only")
            _number(pair[0], 0, len(self.bench.sizes) - 1, "only", integer=True)
            _number(pair[1], 0, self.bench.max_call - 1, "only", integer=True)
        if list(only) != sorted(set(only)):
            raise FrameError("malformed benchmark job: only, in order and each once")

    def calls_at(self, size: int) -> list[int]:
        """A reference job's calls at one size."""
        return [call for at, call in self.only if at == size]

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
        """What the subject's kept calls (the first at each size and `bench.kept` more) may return in all."""
        checked = len(self.only) or len(self.bench.sizes) * (1 + self.bench.kept)
        return self.max_total_bytes or min(MAX_RESULT_BYTES, checked * self.max_result_bytes)

    def timings(self) -> int:
        """The times taken in all (a call's, or a region's: each held to one call's limit), the null module's
        included (one after each of a module's)."""
        if self.only:
            return len(self.only)
        modules = 2 if self.baseline else 1
        return len(self.bench.sizes) * self.bench.calls * modules * 2

    def bound_s(self) -> float:
        """How long the whole benchmark may take, at most: the loads, each call or region to its limit."""
        modules = 2 if self.baseline else 1
        return (modules + 1) * self.load_time_s + self.timings() * (self.limits.time_s + 0.05)


@dataclass(frozen=True)
class CallCommand:
    """The runner's command to a child to make one call: the size, the call's number at that size, where its
    inputs are in the module's shared area (shared.py: `at`, `length`), and for the null module's child only,
    the size in bytes of the value to return (the module's, on the same inputs)."""

    size: int
    call: int
    value_bytes: int = 0
    at: int = 0
    length: int = 0

    def header(self) -> dict:
        return {
            "size": self.size,
            "call": self.call,
            "value_bytes": self.value_bytes,
            "at": self.at,
            "length": self.length,
        }

    @classmethod
    def parse(cls, header: dict, bench: Bench) -> CallCommand:
        size, call, value_bytes = header.get("size"), header.get("call"), header.get("value_bytes", 0)
        at, length = header.get("at", 0), header.get("length", 0)
        _number(size, 0, len(bench.sizes) - 1, "size", integer=True)
        _number(call, 0, bench.max_call - 1, "call", integer=True)
        _number(value_bytes, 0, MAX_RESULT_BYTES, "value_bytes", integer=True)
        _number(at, 0, MAX_BENCH_INPUT_BYTES, "at", integer=True)
        _number(length, 0, MAX_CALL_INPUT_BYTES, "length", integer=True)
        return cls(size, call, value_bytes, at, length)  # type: ignore[arg-type]


def autorange(times_ns: list[int], time_s: float) -> int:
    """The calls in one timed region of a module whose single calls took `times_ns` (its warm-up, else its first
    call, net of the harness): as many as make REGION_NS of work, and a tenth of a call's limit at most."""
    target = min(REGION_NS, time_s * 1e8)
    fastest = max(min(times_ns, default=target), 1)
    return max(1, min(MAX_BENCH_BATCH, math.ceil(target / fastest)))
