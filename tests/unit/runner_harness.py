"""The runner (sandbox/runner/runner.py and child.py) on the host, without torch, Docker or a zygote.

What the container provides is stood in for at its true edges only: ScriptedForker forks children in the
runner's own process where the zygote would (the zygote's end-of-container kill(-1) has no place on a
host), and the container-wide clean-up and OOM count (cleanup.py) are narrowed to those children. The
runner itself, its Child, the contract (protocol.py, messages.py) and the grader's strict decoder of what
comes out are the real ones. A child is a plain-Python program (scripted_child) that speaks the child's
side of the contract: it runs the job's source as a module and each test's code as statements; a test's
`result` is sent back as its body, as text.
"""

from __future__ import annotations

import importlib
import json
import marshal
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.containers.frames import Frame, FrameDecoder, encode, encode_job
from grader.containers.protocol import BENCH_END, CALL, DONE, HELLO, LOAD, SIZE, TEST
from sandbox.runner import cleanup, protocol, runner
from sandbox.runner.bench_job import Bench, BenchJob, BenchSize, CallCommand
from sandbox.runner.child_job import ChildJob
from sandbox.runner.messages import Job, JobTest, Limits, Report, TestCommand
from sandbox.runner.protocol import Outcome
from sandbox.runner.shared import ChildArea

ChildMain = Callable[..., None]
REPO = Path(__file__).resolve().parents[2]


def scripted_child(cmd_r: int, res_w: int, out_w: int, shared: int = -1) -> None:
    """A child speaking the contract, in plain Python: READY, the job, its load, then one result per test.
    In the source and the tests: JOB (the ChildJob), RES (the result pipe), os, time, signal. `shared`: a
    benchmark module's area (sandbox/runner/shared.py)."""
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    _close_others({0, 1, 2, cmd_r, res_w, shared})
    # Forked from pytest, whose sys.stdout is its own capture: print goes to the output pipe, as in a child.
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115

    def send(kind: bytes, header: dict, body: bytes = b"") -> None:
        protocol.write_all(res_w, protocol.encode(kind, header, body))

    send(protocol.CHILD_READY, Report(Outcome.OK).header())
    kind, _, body = protocol.read_frame(cmd_r, max_body=protocol.MAX_JOB_BYTES)
    job = ChildJob.parse(body)
    if job.bench is not None:
        scripted_bench(cmd_r, job, send, ChildArea(shared) if shared >= 0 and job.source else None)
    namespace: dict = {"JOB": job, "RES": res_w, "os": os, "time": time, "signal": signal}
    try:
        exec(compile(job.source, "submission.py", "exec"), namespace)
    except SyntaxError as exc:
        send(protocol.CHILD_LOAD, Report(Outcome.COMPILE_ERROR, message=str(exc.msg), line=exc.lineno).header())
        os._exit(0)
    except Exception as exc:  # noqa: BLE001 - the scripted submission's error
        send(protocol.CHILD_LOAD, Report(Outcome.ERROR, message=str(exc), error_type=type(exc).__name__).header())
        os._exit(0)
    send(protocol.CHILD_LOAD, Report(Outcome.OK).header())
    while True:
        try:
            kind, header, body = protocol.read_frame(cmd_r, max_body=protocol.MAX_JOB_BYTES)
        except EOFError:
            os._exit(0)
        command = TestCommand.parse(header)
        scope = dict(namespace, INDEX=command.index, SEED=command.seed)
        try:
            code = body[: command.code_bytes].decode()
            compiled = marshal.loads(body[command.code_bytes :])  # as the runner compiled it (testcode.py)
            assert compiled.co_filename == f"<test {command.index + 1}>"
            exec(code, scope)
            report, value = Report(Outcome.OK, index=command.index), str(scope.get("result")).encode()
        except Exception as exc:  # noqa: BLE001 - the test's error
            report, value = Report(Outcome.ERROR, message=str(exc), index=command.index), b""
        sys.stdout.flush()
        sys.stderr.flush()
        send(protocol.CHILD_RESULT, report.header(), value)


def scripted_inputs(cmd_r: int, job: ChildJob, send: Callable[..., None]) -> None:
    """A benchmark's inputs' child (execute_bench.py inputs_main), in plain Python: for each call named, the
    inputs' code run (SIZE, CALL, SEED in scope) and its `args` sent as JSON."""
    bench = job.bench
    send(protocol.CHILD_BUILT, Report(Outcome.OK).header())
    while True:
        try:
            kind, header, _ = protocol.read_frame(cmd_r, max_body=0)
        except EOFError:
            os._exit(0)
        command = CallCommand.parse(header, bench)
        scope = {
            "SIZE": bench.sizes[command.size].scope(),
            "CALL": command.call,
            "SEED": bench.call_seed(command.size, command.call),
            "time": time,
        }
        try:
            exec(bench.inputs, scope)
            report, body = Report(Outcome.OK, index=command.call), json.dumps(scope["args"]).encode()
        except Exception as exc:  # noqa: BLE001 - the inputs' error
            report, body = Report(Outcome.ERROR, message=str(exc), error_type="BenchInputs", index=command.call), b""
        send(protocol.CHILD_RESULT, report.header(), body)


def scripted_bench(cmd_r: int, job: ChildJob, send: Callable[..., None], area: ChildArea | None) -> None:
    """A benchmark's module child (execute_bench.py bench_main), in plain Python: ready, its module loaded when
    told, then one call of `f` per command on the inputs the command places in its area, its value left there."""
    if not job.source:
        scripted_inputs(cmd_r, job, send)
    bench = job.bench
    send(protocol.CHILD_BUILT, Report(Outcome.OK).header())
    kind, _, _ = protocol.read_frame(cmd_r, max_body=0)
    assert kind == protocol.CHILD_GO
    namespace: dict = {"os": os, "time": time, "signal": signal, "JOB": job}
    try:
        exec(compile(job.source, "submission.py", "exec"), namespace)
    except Exception as exc:  # noqa: BLE001 - the scripted module's error
        send(protocol.CHILD_LOAD, Report(Outcome.ERROR, message=str(exc), error_type=type(exc).__name__).header())
        os._exit(0)
    send(protocol.CHILD_LOAD, Report(Outcome.OK).header())
    function = None if bench.null else namespace[bench.entry_point]  # the null module: a value of the size told
    assert area is not None
    namespace["AREA"] = area
    while True:
        try:
            kind, header, _ = protocol.read_frame(cmd_r, max_body=0)
        except EOFError:
            os._exit(0)
        command = CallCommand.parse(header, bench)
        namespace["CALL"] = command
        try:
            body = bytes(area.inputs(command.at, command.length))
            value = b"n" * command.value_bytes if function is None else str(function(*json.loads(body))).encode()
            report = Report(Outcome.OK, index=command.call)  # after the call: a forging module may move it
        except Exception as exc:  # noqa: BLE001 - the call's error
            report, value = Report(Outcome.ERROR, message=str(exc), index=command.call), b""
        sys.stdout.flush()
        send(protocol.CHILD_RESULT, report.header(), area.put_value([value]) if report.status == Outcome.OK else b"")


def never_ready_child(cmd_r: int, res_w: int, out_w: int) -> None:
    """A child that never says it is ready (it hangs in its warm-up)."""
    time.sleep(60)


def _close_others(keep: set[int]) -> None:
    for name in os.listdir("/proc/self/fd"):
        if int(name) not in keep:
            try:
                os.close(int(name))
            except OSError:
                pass


class ScriptedForker:
    """The zygote's part for the runner (runner.zygote.ZygoteClient's methods): children forked here."""

    def __init__(self, main: ChildMain) -> None:
        self.main = main
        self.live: set[int] = set()
        self.exits: dict[int, int] = {}

    def fork_child(self, fds: tuple[int, ...]) -> int:
        pid = os.fork()
        if pid == 0:
            try:
                self.main(*fds)
            finally:
                os._exit(70)
        self.live.add(pid)
        return pid

    def exit_status(self, pid: int, block: bool) -> int | None:
        if pid in self.exits:
            return self.exits.pop(pid)
        try:
            got, status = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return -1
        if got == 0:
            return None
        self.live.discard(pid)
        return status

    def abandon(self, pid: int) -> None:
        self.exits.pop(pid, None)

    def forget(self, pid: int) -> None:
        self.exits.pop(pid, None)

    def kill_others(self, keep: int | None = None) -> None:
        for pid in self.live - {keep}:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def clean(self, keep: int | None = None) -> bool:
        self.kill_others(keep)
        for pid in list(self.live - {keep}):
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
            self.live.discard(pid)
        return True


@dataclass
class Exchange:
    """What came out of the runner for one job, decoded by the grader's strict decoder."""

    load: Frame
    tests: list[Frame] = field(default_factory=list)
    done: Frame | None = None

    def statuses(self) -> list[str]:
        return [frame.header.status.value for frame in self.tests]  # type: ignore[union-attr]


@dataclass
class BenchExchange:
    """What came out of the runner for one benchmark, decoded by the grader's strict decoder."""

    load: Frame
    calls: list[Frame] = field(default_factory=list)
    sizes: list[Frame] = field(default_factory=list)
    ends: list[Frame] = field(default_factory=list)
    done: Frame | None = None

    @property
    def end(self) -> Any:
        assert len(self.ends) == 1, self.ends
        return self.ends[0].header


def serve(main: ChildMain, ready_wait_s: float) -> None:
    """The runner's process (python -m tests.unit.runner_harness): stdin and stdout are its frame channel."""
    os.setpgid(0, 0)
    forker = ScriptedForker(main)
    cleanup.kill_others = forker.kill_others  # type: ignore[assignment]
    cleanup.clean_container = forker.clean  # type: ignore[assignment]
    cleanup.oom_kills = lambda: 0  # type: ignore[assignment]
    cleanup.submission_tasks = lambda: len(forker.live)  # type: ignore[assignment]
    runner.READY_WAIT_S = ready_wait_s
    runner.Runner(forker, torch_version="none").serve()  # type: ignore[arg-type]


class HostRunner:
    """A runner in a process of its own (its stdout is its frame channel), serving jobs from this test. It is
    started afresh (fork and exec), never forked from the test's process, whose other threads (a service's,
    in a whole run) could hold a lock at the fork that the copy would wait on for ever."""

    def __init__(self, main: ChildMain = scripted_child, ready_wait_s: float = 3.0) -> None:
        self.log = tempfile.TemporaryFile()
        where = f"{main.__module__}:{main.__qualname__}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.unit.runner_harness", where, str(ready_wait_s)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            bufsize=0,
            cwd=REPO,
        )
        self.pid = self.process.pid
        self.to_w = self.process.stdin.fileno()  # type: ignore[union-attr]
        self.from_r = self.process.stdout.fileno()  # type: ignore[union-attr]
        self.decoder = FrameDecoder(max_body=16 << 20)
        self.frames: list[Frame] = []
        self.between_jobs = False  # its last frame was HELLO or DONE: ready for the next job
        self.hello = self.next_frame(20.0)
        assert self.hello.kind == HELLO, self.hello

    def next_frame(self, wait_s: float) -> Frame:
        deadline = time.monotonic() + wait_s
        while not self.frames:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.from_r], [], [], remaining)[0]:
                raise TimeoutError(f"no frame from the runner within {wait_s} s; it said: {self.said()!r}")
            data = os.read(self.from_r, 1 << 16)
            if not data:
                raise EOFError(f"the runner ended; it said: {self.said()!r}")
            self.frames.extend(self.decoder.feed(data))
        frame = self.frames.pop(0)
        self.between_jobs = frame.kind in (HELLO, DONE)
        return frame

    def reusable(self) -> bool:
        """Alive, between jobs, nothing unread: the next test may use it (else it gets a fresh one)."""
        pending = select.select([self.from_r], [], [], 0.05)[0]
        return self.process.poll() is None and self.between_jobs and not self.frames and not pending

    def run(self, job: Job, wait_s: float = 20.0) -> Exchange:
        os.write(self.to_w, encode_job(job))
        exchange = Exchange(load=self.next_frame(wait_s))
        assert exchange.load.kind == LOAD, exchange.load
        while True:
            frame = self.next_frame(wait_s)
            if frame.kind == DONE:
                exchange.done = frame
                return exchange
            assert frame.kind == TEST, frame
            exchange.tests.append(frame)

    def run_bench(self, bench_job: BenchJob, wait_s: float = 20.0) -> BenchExchange:
        """A benchmark: its LOAD, each CALL and SIZE, its BENCH_END (absent when the load failed), then DONE."""
        os.write(self.to_w, encode(protocol.BENCH_JOB, {}, bench_job.payload()))
        exchange = BenchExchange(load=self.next_frame(wait_s))
        assert exchange.load.kind == LOAD, exchange.load
        while True:
            frame = self.next_frame(wait_s)
            if frame.kind == DONE:
                exchange.done = frame
                return exchange
            assert frame.kind in (CALL, SIZE, BENCH_END), frame
            {CALL: exchange.calls, SIZE: exchange.sizes, BENCH_END: exchange.ends}[frame.kind].append(frame)

    def said(self) -> str:
        self.log.seek(0)
        return self.log.read().decode("ascii", "replace")

    def close(self) -> str:
        """Ends stdin, waits for the runner, takes its process group down; what it said on stderr."""
        self.process.stdin.close()  # type: ignore[union-attr]
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass
        self.process.wait()
        self.process.stdout.close()  # type: ignore[union-attr]
        return self.said()


def shared_runner(holder: list[HostRunner]) -> HostRunner:
    """The runner a module's tests share (one start-up, not one per test), replaced when a test left it
    mid-job or ended it."""
    if not holder[0].reusable():
        holder[0].close()
        holder[0] = HostRunner()
    return holder[0]


def job(
    source: str,
    *codes: str,
    time_s: float = 2.0,
    memory_mb: int | list[int] = 4096,  # a label the scripted child sees; near it, a timeout is the memory's
    output_kb: int = 64,
    skip_after_timeout: bool = False,
    load_time_s: float = 5.0,
) -> Job:
    memories = memory_mb if isinstance(memory_mb, list) else [memory_mb] * len(codes)
    tests = tuple(
        JobTest(code, index, Limits(time_s=time_s, memory_mb=memory, output_kb=output_kb))
        for index, (code, memory) in enumerate(zip(codes, memories, strict=True))
    )
    return Job(
        source=source,
        entry_points=("f",),
        tests=tests,
        load_time_s=load_time_s,
        max_result_bytes=1 << 20,
        skip_after_timeout=skip_after_timeout,
    )


if __name__ == "__main__":
    module, _, name = sys.argv[1].partition(":")
    serve(getattr(importlib.import_module(module), name), float(sys.argv[2]))


def bench_job(
    subject: str,
    baseline: str = "",
    inputs: str = "args = [CALL]",
    sizes: int = 2,
    warmup: int = 1,
    repeats: int = 5,
    time_s: float = 2.0,
    load_time_s: float = 5.0,
    max_ratio: float = 0.0,
    max_total_bytes: int = 0,
) -> BenchJob:
    """A benchmark of `f` for the scripted children: the inputs' code sets `args` (SIZE, CALL, SEED in scope)."""
    return BenchJob(
        subject=subject,
        baseline=baseline,
        bench=Bench(
            entry_point="f",
            inputs=inputs,
            sizes=tuple(BenchSize(f"size {n}", {"n": n}) for n in range(sizes)),
            seed=1,
            warmup=warmup,
            repeats=repeats,
        ),
        limits=Limits(time_s=time_s, memory_mb=4096, output_kb=64),
        load_time_s=load_time_s,
        max_result_bytes=1 << 20,
        max_ratio=max_ratio,
        max_total_bytes=max_total_bytes,
    )
