"""The runner: serves jobs read from stdin, one frame per result on its private copy of stdout.

For each job it hands the submission to a child forked ahead of time, which prepared its confinement and
warmed up before the container was handed back (DONE says so). It runs the tests one at a time under a
wall-clock limit it enforces itself with SIGKILL, and writes one frame per test. A test that hangs or
crashes is charged to that test alone: the remaining tests run in a fresh child. After each job every
other process is killed and the scratch space is wiped, so nothing one submission leaves behind reaches
the next. Whatever a child writes, the runner goes on: a child's frame is re-checked against the
protocol's bounds before it is forwarded.
"""

from __future__ import annotations

import ctypes
import os
import sys
import time
import traceback

from . import cleanup, landlock, protocol, timing, zygote
from .bench_job import BenchJob
from .child import Child
from .child_job import for_child
from .messages import Job, Report, TestCommand
from .outcomes import memory_outcome
from .protocol import Outcome
from .testcode import TestCodes

PR_SET_DUMPABLE = 4
# A test's result is held back while the next test runs for at most this long (or until this much is held).
HOLD_S = 0.002
HOLD_BYTES = 1 << 20
# How long a spare child may take to prepare and warm up before the container is handed back without it.
READY_WAIT_S = 3.0


def protect_runner() -> None:
    """Not dumpable: processes of the same uid cannot ptrace the runner or read its /proc memory and environ."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _where(exc: BaseException) -> str:
    """An exception's type and the line of the judge's code it came from (never its message)."""
    frame = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ is not None else []
    place = f" at {os.path.basename(frame[0].filename)}:{frame[0].lineno}" if frame else ""
    return type(exc).__name__ + place


class ChildNotReady(Exception):
    """The child for a job's first load never got ready. No code of the job had run in the container:
    the job ends without a result and the container unclean, and the grader tries another one."""


class Runner:
    def __init__(self, forker: zygote.ZygoteClient, torch_version: str = "") -> None:
        self.forker = forker
        self.torch_version = torch_version  # for HELLO: the runner itself never imports torch
        # The frame channel is a private copy of stdout; fds 1 and 2 are pointed at /dev/null so a
        # stray print from a library cannot corrupt a frame.
        self.channel = os.dup(1)
        self.log = os.dup(2)  # the container's stderr: one line, why the runner ended (serve)
        devnull = os.open("/dev/null", os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.close(devnull)
        self.spare: Child | None = None
        self.held = bytearray()  # frames not yet written (emit's hold)
        self.reload_left = 0.0  # seconds the current job's fresh children may still take to load (run_job)
        self.test_codes = TestCodes()

    def emit(self, kind: bytes, header: dict, body: bytes = b"", hold: bool = False) -> None:
        """Writes a frame, after any held ones. hold=True keeps it back for a moment (a test's result, while
        the next test runs): the results of quick tests then go out together, a write instead of one each
        (each write is a trip through the container engine). What is held goes out with the next frame
        written, once the child has been waited on for HOLD_S, or as soon as it does not take a command at
        once: never later than HOLD_S after the runner starts waiting."""
        self.held += protocol.encode_fitted(kind, header, body)
        if not hold or len(self.held) >= HOLD_BYTES:
            self.flush()

    def flush(self) -> None:
        if self.held:
            held, self.held = self.held, bytearray()
            protocol.write_all(self.channel, held)

    def take_child(self) -> Child:
        spare, self.spare = self.spare, None
        return spare if spare is not None else Child(self.forker)

    def drop_spare(self) -> None:
        """The spare child ended unused (a benchmark forks its children with what they need)."""
        spare, self.spare = self.spare, None
        if spare is not None:
            spare.close(wait=False)

    def _load(self, proc: Child, job: Job, first: int, oom_before: int) -> Report:
        """Loads the submission in this child, for the tests from `first` on (their memory is its own). A load
        again (first > 0) has what is left of the job's reload budget, at most one load's time."""
        allowed = job.load_time_s if first == 0 else min(job.load_time_s, self.reload_left)
        if allowed <= 0:
            return Report(Outcome.TIMEOUT, message="the job's time for loading the module again is spent")
        deadline = time.monotonic() + allowed
        not_ready = proc.await_ready(deadline, oom_before, "loading")  # a child forked for this job: warming up
        if not_ready is not None:
            if first == 0:  # nothing of this job has run in this container yet: the sandbox's failure, not the job's
                raise ChildNotReady(not_ready.message or "")
            return not_ready
        child_job = for_child(job, first)
        proc.memory_mb = child_job.memory_mb
        if not proc.send(protocol.CHILD_JOB, {}, child_job.payload(), deadline):
            return proc.unsent_outcome(oom_before, "loading")
        output_limit = job.tests[first].limits.output_kb * 1024
        report, _ = proc.await_frame(protocol.CHILD_LOAD, deadline, output_limit, oom_before, "loading")
        return memory_outcome(report, proc)

    def run_job(self, job: Job) -> None:
        next_index = 0
        self.reload_left = job.reload_budget_s()
        while True:
            if next_index > 0:
                self.flush()  # what is held goes out before a fresh child loads (never later than HOLD_S)
            proc = self.take_child()
            try:
                oom_before = cleanup.oom_kills()
                started = time.monotonic()
                report = self._load(proc, job, next_index, oom_before)
                if next_index > 0:
                    self.reload_left -= time.monotonic() - started
                if next_index == 0:
                    header = report.header()
                    header["time_ms"] = min(round((time.monotonic() - started) * 1000, 3), protocol.MAX_TIME_MS)
                    self.emit(protocol.LOAD, header, hold=report.status == Outcome.OK)  # the first test follows
                    if report.status != Outcome.OK:
                        return
                elif report.status != Outcome.OK:
                    why = f": {report.message}" if report.message else ""
                    message = f"the submission failed to load again in a fresh process{why}"
                    for index in range(next_index, len(job.tests)):
                        header = {**Report(Outcome.ERROR, message=message).header(), "index": index, "time_ms": 0}
                        self.emit(protocol.TEST, header)
                    return
                next_index = self._run_tests(proc, job, next_index, oom_before)
                if next_index >= len(job.tests):
                    return
            finally:
                proc.close(wait=False)  # killed; serve()'s clean-up waits for it to be gone

    def _run_tests(self, proc: Child, job: Job, next_index: int, oom_before: int) -> int:
        """Runs tests in this child until they are done, one ends its process, or the next one's memory is not
        this child's; the next test's index (the tests from there on run in a fresh child)."""
        proc.reader.max_body = job.max_result_bytes + 64 * 1024
        while next_index < len(job.tests):
            index = next_index
            test = job.tests[index]
            if test.limits.memory_mb != proc.memory_mb:
                break  # confined once per process: a fresh child, confined to this test's memory
            next_index += 1
            proc.reset_peak()  # the peak read after the test is this test's (child.py)
            started = time.monotonic()
            proc.output_bytes = 0  # the output limit is per test; what loading printed is still shown
            proc.graced = False  # the memory's grace, once per test
            phase = f"test {index + 1}"
            deadline = started + test.limits.time_s
            code = test.code.encode()
            command = TestCommand(index, test.seed, len(code)).header()
            body = code + self.test_codes.get(test.code, index)  # compiled once per container (testcode.py)
            if not proc.send(protocol.CHILD_TEST, command, body, deadline, self.flush):
                report, body = proc.unsent_outcome(oom_before, phase), b""
            else:
                output_limit = test.limits.output_kb * 1024
                report, body = proc.await_frame(
                    protocol.CHILD_RESULT, deadline, output_limit, oom_before, phase, (HOLD_S, self.flush)
                )
            elapsed_ms = min(round((time.monotonic() - started) * 1000, 3), protocol.MAX_TIME_MS)
            peak = proc.test_peak_mb()  # measured by the runner, never taken from the child's report
            report = memory_outcome(report, proc)
            if report.status == Outcome.OK and report.index != index:
                report, body = Report(Outcome.ERROR, error_type="Protocol", message="result for the wrong test"), b""
                proc.kill()
            if report.status != Outcome.OK:
                body = b""
            header = report.header()
            header.update(index=index, time_ms=elapsed_ms)
            if peak is not None:
                header["memory_mb"] = min(peak, protocol.MAX_MEMORY_MB)
            output = proc.take_output()
            if output is not None:
                header["output"] = output
            ended = proc.reap(block=False)
            if report.status == Outcome.TIMEOUT and job.skip_after_timeout:
                self.emit(protocol.TEST, header, body, hold=next_index < len(job.tests))
                self._skip(job, next_index, index)
                return len(job.tests)
            self.emit(protocol.TEST, header, body, hold=next_index < len(job.tests) and not ended)
            if ended:
                break  # the rest of the tests run in a fresh child
        return next_index

    def _skip(self, job: Job, first: int, timed_out: int) -> None:
        """The tests after one that ran out of time, reported as not run: a solution that loops costs one
        time limit, not one per test."""
        message = f"not run: test {timed_out + 1} ran out of time, and the tests after a timeout are skipped"
        for index in range(first, len(job.tests)):
            header = {"index": index, "status": Outcome.SKIPPED.value, "time_ms": 0, "message": message}
            self.emit(protocol.TEST, header, hold=index + 1 < len(job.tests))

    def serve(self) -> None:
        """Serves jobs until stdin ends; then, or when it cannot go on, says why on the container's stderr
        (the grader shows it when it loses the sandbox) and returns, which ends the container."""
        try:
            reason = self._serve()
        except BaseException as exc:  # noqa: BLE001 - a fault of the runner's own: say where, then end
            reason = f"a fault of the runner's own: {_where(exc)}"
        protocol.log_line(self.log, "runner", reason)

    def _serve(self) -> str:
        protect_runner()
        cleanup.clean_container()  # the first job starts as clean as any other (warm-up leaves files in /tmp)
        try:
            self.spare = self._ready(self._next_child())
        except zygote.ZygoteLost as exc:
            return f"lost the zygote before the first job: {exc}"
        hello = {"torch": self.torch_version, "python": sys.version.split()[0], "landlock": landlock.abi_version()}
        self.emit(protocol.HELLO, {**hello, "contract": protocol.contract_digest()})
        while True:
            try:
                kind, _, body = protocol.read_frame(0, max_body=protocol.MAX_JOB_BYTES)
                job = Job.parse(body) if kind == protocol.JOB else None
                bench = BenchJob.parse(body) if kind == protocol.BENCH_JOB else None
            except EOFError:
                return "stdin ended"
            except (protocol.FrameError, OSError) as exc:
                return f"cannot read a job: {type(exc).__name__}"
            if job is None and bench is None:
                return "a frame that is not a job"
            finished = False
            try:
                if job is not None:
                    self.run_job(job)
                else:
                    timing.run_bench(self, bench)  # type: ignore[arg-type]
                finished = True
            except zygote.ZygoteLost as exc:
                return f"lost the zygote during a job: {exc}"  # the container goes with it: the sandbox is lost
            except Exception as exc:  # noqa: BLE001 - a fault of the runner's own: the job ends, the container goes
                protocol.log_line(self.log, "runner", f"a fault of the runner's own during a job: {_where(exc)}")
            try:
                spare, clean = self._after_job(finished)
            except zygote.ZygoteLost as exc:
                return f"lost the zygote after a job: {exc}"
            self.emit(protocol.DONE, {"clean": clean, "ready": clean and spare is not None})
            if clean:
                self.spare = spare
            elif spare is not None:
                spare.close(wait=False)

    def _after_job(self, finished: bool) -> tuple[Child | None, bool]:
        """Cleans the container and readies the next job's child: (that child, whether all is clean).
        Whatever fails here of the runner's own makes the container unclean (and so replaced), never
        the runner dead; only a lost zygote goes up."""
        spare: Child | None = None
        try:
            spare = self._next_child() if finished else None
            clean = cleanup.clean_container(keep=spare.pid if spare is not None else None) and finished
            return (self._ready(spare) if clean else spare), clean
        except zygote.ZygoteLost:
            raise
        except Exception as exc:  # noqa: BLE001 - see the docstring
            protocol.log_line(self.log, "runner", f"a fault of the runner's own after a job: {_where(exc)}")
            return spare, False

    def _ready(self, child: Child | None) -> Child | None:
        """The child once it says it is ready, so that the container is handed back (DONE) with its next
        job's child prepared and warm; None if it never gets ready (the next job forks one then)."""
        if child is None:
            return None
        deadline = time.monotonic() + READY_WAIT_S
        if child.await_ready(deadline, cleanup.oom_kills(), "start-up") is None:
            return child
        child.close()
        return None

    def _next_child(self) -> Child | None:
        """The next job's child, forked as soon as the job's processes are killed (it prepares itself while
        the kernel tears them down); None if it cannot be forked now (the next job forks one then)."""
        try:
            return Child(self.forker)
        except OSError:
            return None
