"""A benchmark job in one container (sandbox/runner/timing.py runs it): sent, and its frames collected and
checked against the job that was sent: the subject's load, then per size its kept calls and its times, in
order, every count what the job asked for, then how it ended."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from grader import phases
from grader.containers.container import FRAME_SLACK_S, LOADING, SandboxContainer
from grader.containers.frames import encode
from grader.containers.losses import SandboxProtocolError
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
    calls: dict[tuple[int, int], bytes] = field(default_factory=dict)  # (size, call) -> returned bytes, kept
    sizes: list[SizeHeader] = field(default_factory=list)
    end: BenchEndHeader | None = None


def frame_budget_s(job: BenchJob) -> float:
    """How long the trusted side waits for the next frame: a size's frames come once all its calls are made."""
    per_size = job.timings() / len(job.bench.sizes) if not job.only else len(job.only)
    return job.load_time_s + per_size * (job.limits.time_s + 0.05) + FRAME_SLACK_S


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
    size, kept, received = 0, [], 0
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
            if header.size != size or not _next_kept(job, size, kept, header.call):
                raise SandboxProtocolError("a benchmark's kept calls out of order, or not the job's")
            kept.append(header.call)
            outcome.calls[(size, header.call)] = frame.body
            received += len(frame.body)
            if received > job.total_bytes():  # the runner ends the benchmark before: this one does not
                raise SandboxProtocolError("a benchmark's values over the job's total")
        elif frame.kind == SIZE:
            assert isinstance(header, SizeHeader)
            if header.size != size or not _all_kept(job, size, kept) or not _made(job, header, kept):
                raise SandboxProtocolError("a benchmark's size out of order, or without its calls")
            times = len(job.calls_at(size)) if job.only else bench.calls
            if (len(header.subject_ns), len(header.baseline_ns)) != (times, times if job.baseline else 0):
                raise SandboxProtocolError("a benchmark's times do not match its calls")
            outcome.sizes.append(header)
            size, kept = size + 1, []
        else:
            raise SandboxProtocolError(f"unexpected frame kind during a benchmark: {frame.kind!r}")


def _next_kept(job: BenchJob, size: int, kept: list[int], call: int) -> bool:
    """Whether `call` may be the size's next kept call: a reference job's next; else the first call (0), then
    `bench.kept` of the timed calls, in order, past the warm-up."""
    if job.only:
        calls = job.calls_at(size)
        return len(kept) < len(calls) and calls[len(kept)] == call
    if not kept:
        return call == 0
    return len(kept) <= job.bench.kept and max(kept[-1], job.bench.warmup) < call < job.bench.max_call


def _made(job: BenchJob, header: SizeHeader, kept: list[int]) -> bool:
    """Every kept timed call is one the subject made: a turn's calls are max(batches) numbers, of which the
    subject makes the first `subject_batch`."""
    if job.only:
        return True
    turn = max(header.subject_batch, header.baseline_batch if job.baseline else 1)
    first = 1 + job.bench.warmup
    return all((call - first) % turn < header.subject_batch for call in kept[1:])


def _all_kept(job: BenchJob, size: int, kept: list[int]) -> bool:
    return len(kept) == (len(job.calls_at(size)) if job.only else 1 + job.bench.kept)
