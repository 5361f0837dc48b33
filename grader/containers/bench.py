"""A benchmark job in one container (sandbox/runner/timing.py runs it): sent, and its frames collected and
checked against the job that was sent: the subject's load, then per size its checked calls and its times, in
order, every count what the job asked for, then how it ended."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from grader import phases
from grader.containers.container import FRAME_SLACK_S, LOADING, SandboxContainer, SandboxProtocolError
from grader.containers.frames import encode
from grader.containers.protocol import (
    BENCH_END,
    BENCH_JOB,
    CALL,
    LOAD,
    SIZE,
    BenchEndHeader,
    BenchJob,
    CallHeader,
    LoadHeader,
    Outcome,
    SizeHeader,
)


@dataclass
class BenchOutcome:
    """What a benchmark did: the subject's load; per size, the bytes each checked call returned and the raw
    times; how it ended (None only when the subject did not load)."""

    load: LoadHeader
    calls: dict[tuple[int, int], bytes] = field(default_factory=dict)  # (size, call) -> returned bytes
    sizes: list[SizeHeader] = field(default_factory=list)
    end: BenchEndHeader | None = None


def frame_budget_s(job: BenchJob) -> float:
    """How long the trusted side waits for the next frame: a size's frames come once all its calls are made."""
    modules = 2 if job.baseline else 1
    return job.load_time_s + job.bench.calls * modules * (job.limits.time_s + 0.05) + FRAME_SLACK_S


def run_bench(container: SandboxContainer, job: BenchJob, deadline: float) -> BenchOutcome:
    """Sends the benchmark and collects what it sends back. SandboxLost if the container fails or its frames
    break the job's shape; the runner's DONE that follows is settle()'s."""
    container.send(encode(BENCH_JOB, {}, job.payload()), deadline)
    with phases.timed("benchmark"):
        frame = container.next_frame(min(deadline, time.monotonic() + job.load_time_s * 2 + FRAME_SLACK_S))
        if frame.kind != LOAD:
            raise SandboxProtocolError("expected the load result first", during_test=LOADING)
        assert isinstance(frame.header, LoadHeader)
        outcome = BenchOutcome(load=frame.header)
        if outcome.load.status != Outcome.OK:
            return outcome
        _collect(container, job, outcome, deadline)
        return outcome


def _collect(container: SandboxContainer, job: BenchJob, outcome: BenchOutcome, deadline: float) -> None:
    bench = job.bench
    expected_calls = [call for call in range(bench.calls) if bench.checked(call)]
    baseline_count = bench.calls if job.baseline else 0
    size, pending, received = 0, list(expected_calls), 0
    while True:
        frame = container.next_frame(min(deadline, time.monotonic() + frame_budget_s(job)))
        header = frame.header
        if frame.kind == BENCH_END:
            assert isinstance(header, BenchEndHeader)
            if header.status == Outcome.OK and size != len(bench.sizes):
                raise SandboxProtocolError("the benchmark ended before its last size")
            outcome.end = header
            return
        if size >= len(bench.sizes):
            raise SandboxProtocolError("a benchmark's frame after its last size")
        if frame.kind == CALL:
            assert isinstance(header, CallHeader)
            if header.size != size or not pending or header.call != pending[0]:
                raise SandboxProtocolError("a benchmark's calls out of order")
            pending.pop(0)
            outcome.calls[(size, header.call)] = frame.body
            received += len(frame.body)
            if received > job.total_bytes():  # the runner ends the benchmark before: this one does not
                raise SandboxProtocolError("a benchmark's values over the job's total")
        elif frame.kind == SIZE:
            assert isinstance(header, SizeHeader)
            if header.size != size or pending:
                raise SandboxProtocolError("a benchmark's size out of order, or without its calls")
            if (len(header.subject_ns), len(header.baseline_ns)) != (bench.calls, baseline_count):
                raise SandboxProtocolError("a benchmark's times do not match its calls")
            outcome.sizes.append(header)
            size, pending = size + 1, list(expected_calls)
        else:
            raise SandboxProtocolError(f"unexpected frame kind during a benchmark: {frame.kind!r}")
