"""The runner's side of a benchmark (bench_job.py): two children, one CPU, a clock outside both.

The subject and the baseline are each loaded in a child of their own, both pinned to the same CPU and kept to
one thread (for good: seccomp then refuses another CPU, another thread, and the timers and signals a stopped
process could be woken by), the subject kept from signalling the baseline. Only one of them runs at any time:
the other is stopped (SIGSTOP, waited for), so that nothing the subject does runs while the baseline is timed,
nor between its own calls. The calls alternate (A B, then B A, so neither always goes first).

Each call is timed from its command to its whole value (the value is the work: a child cannot stop the clock
before its work is done), on the child's own CPU time where the kernel keeps it (/proc/<pid>/schedstat, in
ns): neither another process on the CPU nor the round trip through the runner is in it, and whatever CPU the
child had while it was to be stopped is added to its next call. Where there is no such count (gVisor), the
runner's wall clock. The returned values of the subject's first and timed calls go to the trusted side, which
checks them against the reference's on the same inputs; the raw times go there too, and the statistics are
made there.
"""

from __future__ import annotations

import os
import signal
import time
from typing import TYPE_CHECKING

from . import cleanup, protocol
from .bench_job import GIVE_UP_S, BenchJob, CallCommand
from .child import Child
from .messages import ChildJob, Report
from .outcomes import memory_outcome
from .protocol import Outcome

if TYPE_CHECKING:
    from .runner import Runner

FREEZE_WAIT_S = 0.5
STOPPED_STATES = (b"T", b"t", b"Z", b"X")


def cpu_ns(pid: int) -> int | None:
    """The CPU time a process has had, in ns, every thread of it (a benchmark's child has one: seccomp refuses it
    another), from /proc/<pid>/task/*/schedstat; None where the kernel keeps none (gVisor)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    total = 0
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat", "rb") as stat:
                total += int(stat.read().split()[0])
        except (OSError, ValueError, IndexError):
            return None
    return total if tasks else None


def pick_cpu() -> int:
    """The CPU both children are pinned to: the highest this runner may use (the lowest takes more of the
    machine's interrupts), or -1 where affinity is not to be had."""
    try:
        return max(os.sched_getaffinity(0))
    except (OSError, ValueError, AttributeError):
        return -1


def _all_stopped(pid: int) -> bool:
    """Every thread of the process stopped (or gone)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/stat", "rb") as stat:
                data = stat.read()
        except OSError:
            continue
        at = data.rfind(b")")
        if data[at + 2 : at + 3] not in STOPPED_STATES:
            return False
    return True


def freeze(proc: Child) -> bool:
    """Stops every thread of the child, and waits until they have all stopped; False if they did not in time."""
    if proc.exit_status is not None:
        return True
    try:
        os.kill(proc.pid, signal.SIGSTOP)
    except OSError:
        return True
    deadline = time.monotonic() + FREEZE_WAIT_S
    while not _all_stopped(proc.pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.0002)
    return True


def end_alone(proc: Child) -> None:
    """Kills this child only, and waits for its end (Child.close kills every process of the container but the
    runner and the zygote: the next job's child, ready to be the subject, among them)."""
    if proc.exit_status is None:
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.reap(block=True)
    proc.close(wait=False)


def thaw(proc: Child) -> None:
    try:
        os.kill(proc.pid, signal.SIGCONT)
    except OSError:
        pass


class Benchmark:
    """One benchmark job, run to its end: frames LOAD, then per size the checked calls (CALL) and the times
    (SIZE), then BENCH_END; the runner's DONE follows as after any job."""

    def __init__(self, runner: Runner, job: BenchJob) -> None:
        self.runner, self.job, self.bench = runner, job, job.bench
        self.cpu = pick_cpu()
        self.oom_before = cleanup.oom_kills()
        self.spent = {"subject": 0, "baseline": 0}  # every call's time so far, in ns
        self.returned = 0  # the bytes of the subject's checked calls so far (BenchJob.total_bytes)
        self.cpu_clock = True  # each child's CPU time where the kernel keeps it (runc), else the wall clock
        self.stopped_at: dict[int, int] = {}  # a child's CPU time when it was last stopped
        self.inputs: dict[tuple[int, int], bytes] = {}  # each call's, encoded (execute_bench.py inputs_main)

    def run(self) -> None:
        inputs = self._inputs()
        if isinstance(inputs, Report):  # the problem's inputs' code failed: no module was loaded
            self.runner.emit(protocol.LOAD, {**inputs.header(), "time_ms": 0})
            return
        self.inputs = inputs
        baseline = Child(self.runner.forker) if self.job.baseline else None  # forked first: its pid is protected
        subject = self.runner.take_child()
        try:
            self._run(subject, baseline)
        finally:
            for proc in (subject, baseline):
                if proc is not None:
                    thaw(proc)
                    proc.close(wait=False)

    def _inputs(self) -> dict[tuple[int, int], bytes] | Report:
        """Every call's inputs, encoded, from a child of their own that runs only the judge's and the problem's
        code; or why they could not be had (the problem's failure: BenchInputs)."""
        proc = Child(self.runner.forker)
        try:
            made = self._start_inputs(proc)
            if not isinstance(made, Report):
                made = self._collect_inputs(proc)
        finally:
            end_alone(proc)
        if isinstance(made, Report):
            why = made.message or made.status
            return Report(Outcome.ERROR, error_type="BenchInputs", message=f"the benchmark's inputs: {why}")
        return made

    def _start_inputs(self, proc: Child) -> Report | None:
        job, bench = self.job, self.bench
        deadline = time.monotonic() + job.load_time_s
        report = proc.await_ready(deadline, self.oom_before, "building the inputs")
        if report is not None:
            return report
        child_job = ChildJob(
            source="",  # no module: the inputs' child
            entry_points=(bench.entry_point,),
            memory_mb=job.limits.memory_mb,
            cpu_s=job.load_time_s + len(bench.sizes) * bench.calls * job.limits.time_s + 5,
            max_result_bytes=protocol.MAX_CALL_INPUT_BYTES,
            helpers=bench.helpers,
            bench=bench,
        )
        if not proc.send(protocol.CHILD_JOB, {}, child_job.payload(), deadline):
            return proc.unsent_outcome(self.oom_before, "building the inputs")
        report, _ = proc.await_frame(protocol.CHILD_BUILT, deadline, 1 << 20, self.oom_before, "building the inputs")
        return None if report.status == Outcome.OK else report

    def _collect_inputs(self, proc: Child) -> dict[tuple[int, int], bytes] | Report:
        job, bench = self.job, self.bench
        proc.reader.max_body = protocol.MAX_CALL_INPUT_BYTES + 64 * 1024
        made: dict[tuple[int, int], bytes] = {}
        total = 0
        for size in range(len(bench.sizes)):
            for call in range(bench.calls):
                deadline = time.monotonic() + job.limits.time_s + job.load_time_s
                phase = f"call {call + 1} at size {bench.sizes[size].name!r}"
                if not proc.send(protocol.CHILD_CALL, CallCommand(size, call).header(), b"", deadline):
                    return proc.unsent_outcome(self.oom_before, phase)
                report, body = proc.await_frame(protocol.CHILD_RESULT, deadline, 1 << 20, self.oom_before, phase)
                if report.status != Outcome.OK or report.index != call:
                    return report if report.status != Outcome.OK else Report(Outcome.ERROR, message=phase)
                total += len(body)
                if total > protocol.MAX_BENCH_INPUT_BYTES:
                    return Report(Outcome.ERROR, message=f"more than {protocol.MAX_BENCH_INPUT_BYTES} bytes in all")
                made[(size, call)] = body
        return made

    def _load(self, proc: Child, source: str, protect: tuple[int, ...]) -> tuple[Report, int]:
        """Loads a module in its child, pinned and confined first (its BUILT: ready); the load and its time."""
        job = self.job
        deadline = time.monotonic() + job.load_time_s
        not_ready = proc.await_ready(deadline, self.oom_before, "loading")
        if not_ready is not None:
            return not_ready, 0
        calls = len(self.bench.sizes) * self.bench.calls * (2 if job.baseline else 1)
        child_job = ChildJob(
            source=source,
            entry_points=(self.bench.entry_point,),
            memory_mb=job.limits.memory_mb,
            cpu_s=job.load_time_s + calls * job.limits.time_s + 5,
            max_result_bytes=job.max_result_bytes,
            bench=self.bench.for_module(),
            cpu=self.cpu,
            protect=protect,
        )
        proc.memory_mb = job.limits.memory_mb
        if not proc.send(protocol.CHILD_JOB, {}, child_job.payload(), deadline):
            return proc.unsent_outcome(self.oom_before, "confining itself"), 0
        output_limit = job.limits.output_kb * 1024
        built, _ = proc.await_frame(protocol.CHILD_BUILT, deadline, output_limit, self.oom_before, "confining itself")
        if built.status != Outcome.OK:
            return memory_outcome(built, proc), 0
        proc.take_output()
        deadline = time.monotonic() + job.load_time_s
        self.cpu_clock = self.cpu_clock and cpu_ns(proc.pid) is not None
        started = self._clock(proc)
        if not proc.send(protocol.CHILD_GO, {}, b"", deadline):
            return proc.unsent_outcome(self.oom_before, "loading"), 0
        report, _ = proc.await_frame(protocol.CHILD_LOAD, deadline, output_limit, self.oom_before, "loading")
        if report.status == Outcome.OK and not freeze(proc):
            report = Report(Outcome.ERROR, error_type="Resources", message="could not be stopped after loading")
        return memory_outcome(report, proc), self._clock(proc) - started

    def _clock(self, proc: Child) -> int:
        """Now, on the benchmark's clock: the child's CPU time (which runs only while it works, whatever else
        the machine does), else the wall clock; noted as the child's CPU time when last stopped."""
        if not self.cpu_clock:
            return time.perf_counter_ns()
        now = cpu_ns(proc.pid)
        if now is None:  # the child is gone: its last reading stands
            return self.stopped_at.get(proc.pid, 0)
        self.stopped_at[proc.pid] = now
        return now

    def _run(self, subject: Child, baseline: Child | None) -> None:
        if baseline is not None:
            # Its warm-up done before the subject loads: nothing but the subject runs while its load is timed.
            baseline.await_ready(time.monotonic() + self.job.load_time_s, self.oom_before, "start-up")
        report, load_ns = self._load(subject, self.job.subject, (baseline.pid,) if baseline is not None else ())
        header = report.header()
        header["time_ms"] = min(round(load_ns / 1e6, 3), protocol.MAX_TIME_MS)
        self.runner.emit(protocol.LOAD, header)
        if report.status != Outcome.OK:
            return
        baseline_load_ns = 0
        if baseline is not None:
            loaded, baseline_load_ns = self._load(baseline, self.job.baseline, ())
            if loaded.status != Outcome.OK:
                self._end(loaded, "baseline", message=f"the baseline did not load: {loaded.message or loaded.status}")
                return
        for size in range(len(self.bench.sizes)):
            if not self._size(size, subject, baseline):
                return
        self._end(Report(Outcome.OK), "", baseline_load_ns=baseline_load_ns)

    def _size(self, size: int, subject: Child, baseline: Child | None) -> bool:
        """Every call at one size, the two modules in turn; whether the benchmark goes on."""
        times: dict[str, list[int]] = {"subject": [], "baseline": []}
        checked: list[tuple[int, bytes]] = []
        for call in range(self.bench.calls):
            turns = [("subject", subject), ("baseline", baseline)]
            for who, proc in turns if call % 2 == 0 else turns[::-1]:
                if proc is None:
                    continue
                report, body, elapsed = self._call(proc, size, call)
                if report.status != Outcome.OK:
                    self._end(report, who, size=size, call=call, output=proc.take_output())
                    return False
                times[who].append(elapsed)
                self.spent[who] += elapsed
                if who == "subject" and self.bench.checked(call):
                    checked.append((call, body))
                    self.returned += len(body)
                    if self.returned > self.job.total_bytes():
                        limit = self.job.total_bytes()
                        message = f"its calls' values came to more than {limit} bytes in all"
                        self._end(Report(Outcome.OUTPUT, message=message), "subject", size=size, call=call)
                        return False
            if baseline is not None and self._hopeless():
                message = (
                    f"stopped: its calls took {self.spent['subject'] / 1e6:.0f} ms in all, the baseline's "
                    f"{self.spent['baseline'] / 1e6:.0f} ms: too slow to reach the threshold"
                )
                self._end(Report(Outcome.TIMEOUT, message=message), "subject", size=size, call=call)
                return False
        for call, body in checked:  # written once the size is done: nothing is written while a call is timed
            self.runner.emit(protocol.CALL, {"size": size, "call": call}, body, hold=True)
        self.runner.emit(
            protocol.SIZE, {"size": size, **{f"{key}_ns": value for key, value in times.items()}}, hold=True
        )
        return True

    def _hopeless(self) -> bool:
        """The subject has taken so much longer than the baseline that it cannot reach the threshold."""
        ratio = self.job.max_ratio
        return ratio > 0 and self.spent["subject"] > ratio * self.spent["baseline"] + GIVE_UP_S * 1e9

    def _call(self, proc: Child, size: int, call: int) -> tuple[Report, bytes, int]:
        """One call, the child running only for it: how it ended, its value, and its time on the benchmark's clock
        from the command to the whole value, with whatever CPU the child had while it was to be stopped."""
        limits = self.job.limits
        phase = f"call {call + 1} at size {self.bench.sizes[size].name!r}"
        proc.reader.max_body = self.job.max_result_bytes + 64 * 1024
        proc.output_bytes, proc.graced = 0, True  # a call's output limit is its own; no memory grace on a clock
        stopped = self.stopped_at.get(proc.pid)
        started = self._clock(proc)
        ran_stopped = started - stopped if self.cpu_clock and stopped is not None else 0
        thaw(proc)
        deadline = time.monotonic() + limits.time_s
        command = CallCommand(size, call).header()
        if not proc.send(protocol.CHILD_CALL, command, self.inputs.get((size, call), b""), deadline):
            report, body = proc.unsent_outcome(self.oom_before, phase), b""
        else:
            output = limits.output_kb * 1024
            report, body = proc.await_frame(protocol.CHILD_RESULT, deadline, output, self.oom_before, phase)
        ended = None if self.cpu_clock else time.perf_counter_ns()  # the wall clock stops at the value
        report = memory_outcome(report, proc)
        if report.status == Outcome.OK and report.index != call:
            report, body = Report(Outcome.ERROR, error_type="Protocol", message="result for the wrong call"), b""
        if proc.exit_status is None and not freeze(proc):
            message = f"its threads could not all be stopped after {phase}"
            report, body = Report(Outcome.ERROR, error_type="Resources", message=message), b""
        reading = cpu_ns(proc.pid) if ended is None else None  # once: the child may be reaped any moment now
        if report.status == Outcome.OK and (proc.reap(block=False) or (ended is None and reading is None)):
            # Ended after its value: its CPU can no longer be read (nor its work after the value counted).
            report, body = proc.death_outcome(self.oom_before, f"{phase}, after its value"), b""
        if reading is not None:
            self.stopped_at[proc.pid] = reading
        end = ended if ended is not None else reading if reading is not None else started
        return report, body, min(max(0, end - started + max(0, ran_stopped)), protocol.MAX_CALL_NS)

    def _end(self, report: Report, who: str, **extra: object) -> None:
        header = {**report.header(), "who": who, "cpu": self.cpu, "clock": "cpu" if self.cpu_clock else "wall"}
        for key, value in extra.items():
            if key == "baseline_load_ns":
                header["baseline_load_ms"] = min(round(int(value) / 1e6, 3), protocol.MAX_TIME_MS)  # type: ignore[call-overload]
            elif value is not None:
                header[key] = value
        header.pop("index", None)
        self.runner.emit(protocol.BENCH_END, header)


def run_bench(runner: Runner, job: BenchJob) -> None:
    Benchmark(runner, job).run()
