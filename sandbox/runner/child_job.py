"""What the runner sends a child with its job (child_main.py reads it): the submission or module, its entry
points, its limits, and for a benchmark's child the benchmark (bench_job.py), its CPU and the processes it may
not signal."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from itertools import takewhile

from .bench_job import Bench
from .messages import Job, _names, _number, _text
from .protocol import (
    MAX_JOB_DEPTH,
    MAX_LIMIT_MEMORY_MB,
    MAX_RESULT_BYTES,
    MIN_MEMORY_MB,
    MIN_RESULT_BYTES,
    FrameError,
    loads_bounded,
)


@dataclass(frozen=True)
class ChildJob:
    """What a child needs to load the submission and run tests: the runner sends it, the child reads it."""

    source: str
    entry_points: tuple[str, ...]
    memory_mb: int
    cpu_s: float
    max_result_bytes: int
    helpers: str = ""
    # A benchmark's child (bench_job.py): the inputs it builds before loading the module and the function it
    # calls; the CPU it is pinned to; other processes of the container it may not signal (the baseline's).
    bench: Bench | None = None
    cpu: int = -1
    protect: tuple[int, ...] = ()
    forbid: tuple[str, ...] = ()  # Job.forbid

    def payload(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":"), allow_nan=False).encode()

    @classmethod
    def parse(cls, body: bytes) -> ChildJob:
        raw = loads_bounded(body, MAX_JOB_DEPTH + 1)
        try:
            job = cls(**raw)  # type: ignore[arg-type]
            if job.bench is not None:
                object.__setattr__(job, "bench", Bench.of(job.bench))
        except TypeError as exc:
            raise FrameError(f"malformed child job: {type(exc).__name__}") from None
        if type(job.protect) is not list or not all(type(pid) is int and 0 < pid < 2**22 for pid in job.protect):
            raise FrameError("malformed child job: protect")
        object.__setattr__(job, "protect", tuple(job.protect))
        object.__setattr__(job, "forbid", _names(job.forbid))
        _number(job.cpu, -1, 4095, "cpu", integer=True)
        _text(job.source, "source")
        _text(job.helpers, "helpers")
        if type(job.entry_points) is not list or not all(type(name) is str for name in job.entry_points):
            raise FrameError("malformed child job: entry points")
        _number(job.memory_mb, MIN_MEMORY_MB, MAX_LIMIT_MEMORY_MB, "memory_mb", integer=True)
        _number(job.cpu_s, 0, 10**6, "cpu_s")
        _number(job.max_result_bytes, MIN_RESULT_BYTES, MAX_RESULT_BYTES, "max_result_bytes", integer=True)
        return job


def for_child(job: Job, first: int) -> ChildJob:
    """A child's share of the job, for the tests from `first` on that it may run (never their code: it
    gets each test when it runs): the memory it is confined to is that test's, and so is every test's
    it runs (runner.py starts a fresh child where a test's memory differs)."""
    tests = job.tests[first:]
    runs = list(takewhile(lambda test: test.limits.memory_mb == tests[0].limits.memory_mb, tests))
    # The CPU time the child may use in all, a backstop to the runner's own clock on each test.
    cpu_s = sum(test.limits.time_s for test in runs) + 2 * max(t.limits.time_s for t in runs) + job.load_time_s + 5
    return ChildJob(
        source=job.source,
        entry_points=job.entry_points,
        memory_mb=tests[0].limits.memory_mb,
        cpu_s=cpu_s,
        max_result_bytes=job.max_result_bytes,
        helpers=job.helpers,
        forbid=job.forbid,
    )
