"""The runner's side of a benchmark (bench_job.py): three children on one CPU, a clock outside them.

The subject, the baseline and the judge's null module are each loaded in a child of their own, all pinned to
the same CPU and kept to one thread (for good: seccomp then refuses another CPU, another thread, and the timers
and signals a stopped process could be woken by), the subject kept from signalling the others. Only one of them
runs at any time: the others are stopped (SIGSTOP, waited for). The modules alternate (A B, then B A); after
each of a module's timings the null module makes the same calls on the same inputs, returning values of the
same sizes, and its time (the harness's) is taken off the module's. Each module's child has a shared area
(shared.py): a region's inputs are put there while it is stopped, and it leaves each value there, so that only
a few bytes of command and result go through its pipes on its clock.

A region (one call, or as many in a row as autorange asks) is timed from its first command to its last value's
result (a child cannot stop the clock before its work is done), on the child's own CPU time where the kernel
keeps it (/proc/<pid>/schedstat, in ns): neither another process on the CPU nor the runner's own work is in
it, and whatever CPU the child had while it was to be stopped is added to its next region. Where there is no
such count (gVisor), the runner's wall clock. The harness's time taken off a region is the median, over the
module's timed regions at that size, of the null module's time a call beside them. The inputs come from a
fourth child that runs only the judge's and the problem's code. Of each size's timed calls the runner keeps 8
values, drawn as they come, and the first call's; those and the times go to the trusted side, which checks the
values against the reference's on the same inputs and makes the statistics.
"""

from __future__ import annotations

import statistics
import time

from . import cleanup, protocol
from .bench_children import Host, Reservoir, cpu_ns, end_alone, freeze, inputs_failed, pick_cpu, said, thaw, widen
from .bench_job import GIVE_UP_S, NULL_SOURCE, BenchJob, CallCommand, autorange
from .child import Child
from .child_job import ChildJob
from .messages import Report
from .outcomes import memory_outcome
from .protocol import Outcome
from .shared import LENGTH, AreaError, SharedArea

MIN_NET_NS = 1_000  # a call's time, the harness's taken off, at least: noise cannot make it nothing


class Benchmark:
    """One benchmark job, run to its end: frames LOAD, then per size the kept calls (CALL) and the times (SIZE),
    then BENCH_END; the runner's DONE follows as after any job."""

    def __init__(self, runner: Host, job: BenchJob) -> None:
        self.runner, self.job, self.bench = runner, job, job.bench
        self.cpu = pick_cpu()
        self.oom_before = cleanup.oom_kills()
        self.spent = {"subject": 0, "baseline": 0}  # every call's net time so far, in ns
        self.returned = 0  # the bytes of the subject's kept calls so far (BenchJob.total_bytes)
        # Each child's CPU time where the kernel keeps it (runc) and the work is the CPU's; else the wall clock
        # (gVisor; or a device, whose work is not the child's CPU time: it waits for it, synchronised, in the call).
        self.cpu_clock = self.bench.device == "cpu"
        self.stopped_at: dict[int, int] = {}  # a child's CPU time when it was last stopped
        self.inputs: dict[tuple[int, int], bytes] = {}  # the coming region's, encoded (execute_bench.py)
        self.maker: Child | None = None  # the inputs' child
        self.failed_call: int | None = None  # the call a region ended at, when it failed

    def run(self) -> None:
        self.runner.drop_spare()  # forked without a shared area: first, while no other child of the job lives
        maker = widen(Child(self.runner.forker))
        try:
            self._run_with(maker)
        finally:
            end_alone(maker)

    def _run_with(self, maker: Child) -> None:
        self.maker = maker
        started = self._start_inputs(maker)
        if started is None:  # each size's first call's inputs: code that fails at once fails before any load
            started = self._fetch([(size, 0) for size in range(len(self.bench.sizes))])
        if started is not None:  # the problem's inputs' code failed: no module was loaded
            self.runner.emit(protocol.LOAD, {**started.header(), "time_ms": 0, "who": "judge"})
            return
        timed = not self.job.only
        # Forked before the subject: their pids are protected from it. Each module's child is forked with its
        # shared area (shared.py).
        forker, area = self.runner.forker, self.job.max_result_bytes
        null = Child(forker, SharedArea(area)) if timed else None
        baseline = Child(forker, SharedArea(area)) if self.job.baseline else None
        subject = Child(forker, SharedArea(area))
        try:
            self._run(subject, baseline, null)
        finally:
            for proc in (subject, baseline, null):
                if proc is not None:
                    thaw(proc)
                    proc.close(wait=False)

    def _start_inputs(self, proc: Child) -> Report | None:
        job, bench = self.job, self.bench
        deadline = time.monotonic() + job.load_time_s
        report = proc.await_ready(deadline, self.oom_before, "building the inputs")
        if report is not None:
            return inputs_failed(report)
        child_job = ChildJob(
            source="",  # no module: the inputs' child
            entry_points=(bench.entry_point,),
            memory_mb=job.limits.memory_mb,
            cpu_s=job.load_time_s + job.timings() * job.limits.time_s + 5,
            max_result_bytes=protocol.MAX_CALL_INPUT_BYTES,
            helpers=bench.helpers,
            bench=bench,
        )
        if not proc.send(protocol.CHILD_JOB, {}, child_job.payload(), deadline):
            return inputs_failed(proc.unsent_outcome(self.oom_before, "building the inputs"))
        report, _ = proc.await_frame(protocol.CHILD_BUILT, deadline, 1 << 20, self.oom_before, "building the inputs")
        return None if report.status == Outcome.OK else inputs_failed(report)

    def _fetch(self, calls: list[tuple[int, int]]) -> Report | None:
        """The inputs of the coming calls, from the inputs' child (while every module is stopped), those of earlier
        calls dropped; or why they could not be had (the problem's failure)."""
        proc, job = self.maker, self.job
        assert proc is not None
        self.inputs = {key: body for key, body in self.inputs.items() if key in calls}
        proc.reader.max_body = protocol.MAX_CALL_INPUT_BYTES + 64 * 1024
        total = sum(len(body) for body in self.inputs.values())
        for size, call in calls:
            if (size, call) in self.inputs:
                continue
            deadline = time.monotonic() + job.limits.time_s + job.load_time_s
            phase = f"call {call + 1} at size {self.bench.sizes[size].name!r}"
            if not proc.send(protocol.CHILD_CALL, CallCommand(size, call).header(), b"", deadline):
                return inputs_failed(proc.unsent_outcome(self.oom_before, phase))
            report, body = proc.await_frame(protocol.CHILD_RESULT, deadline, 1 << 20, self.oom_before, phase)
            if report.status != Outcome.OK or report.index != call:
                return inputs_failed(report if report.status != Outcome.OK else Report(Outcome.ERROR, message=phase))
            total += len(body)
            if total > protocol.MAX_BENCH_INPUT_BYTES:
                message = f"a region's inputs come to more than {protocol.MAX_BENCH_INPUT_BYTES} bytes"
                return inputs_failed(Report(Outcome.ERROR, message=message))
            self.inputs[(size, call)] = body
        return None

    def _load(self, proc: Child, source: str, protect: tuple[int, ...], null: bool = False) -> tuple[Report, int]:
        """Loads a module in its child, pinned and confined first (its BUILT: ready); the load and its time."""
        job = self.job
        deadline = time.monotonic() + job.load_time_s
        not_ready = proc.await_ready(deadline, self.oom_before, "loading")
        if not_ready is not None:
            return not_ready, 0
        child_job = ChildJob(
            source=source,
            entry_points=(self.bench.entry_point,),
            memory_mb=job.limits.memory_mb,
            cpu_s=job.load_time_s + job.timings() * job.limits.time_s + 5,
            max_result_bytes=job.max_result_bytes,
            bench=self.bench.for_module(null=null),
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

    def _run(self, subject: Child, baseline: Child | None, null: Child | None) -> None:
        others = tuple(proc.pid for proc in (baseline, null, self.maker) if proc is not None)
        for proc in (baseline, null):
            if proc is not None:  # its warm-up done before the subject loads: nothing else runs while that is timed
                proc.await_ready(time.monotonic() + self.job.load_time_s, self.oom_before, "start-up")
        report, load_ns = self._load(subject, self.job.subject, others)
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
        if null is not None:
            loaded, _ = self._load(null, NULL_SOURCE, (), null=True)
            if loaded.status != Outcome.OK:
                self._end(loaded, "judge", message=f"the judge's null module did not load: {said(loaded)}")
                return
        for size in range(len(self.bench.sizes)):
            done = self._size(size, subject, baseline, null) if null is not None else self._reference(size, subject)
            if not done:
                return
        self._end(Report(Outcome.OK), "", baseline_load_ns=baseline_load_ns)

    def _reference(self, size: int, subject: Child) -> bool:
        """A reference job's calls at one size, each alone, every value kept."""
        calls = self.job.calls_at(size)
        kept = Reservoir(len(calls))
        times: list[int] = []
        for call in calls:
            failed = self._fetch([(size, call)])
            if failed is not None:
                self._end(failed, "judge", size=size, call=call)
                return False
            timed = self._timed("subject", subject, None, size, [call], kept)
            if timed is None:
                return False
            times.append(timed[0])
            if self.returned + kept.bytes() > self.job.total_bytes():
                message = f"its calls' values came to more than {self.job.total_bytes()} bytes in all"
                self._end(Report(Outcome.OUTPUT, message=message), "subject", size=size, call=call)
                return False
        self.returned += kept.bytes()
        return self._emit(size, kept.items, {"subject": times, "baseline": []}, {}, 0)

    def _size(self, size: int, subject: Child, baseline: Child | None, null: Child) -> bool:
        """Every call at one size, the two modules in turn, the null module after each; whether it goes on."""
        bench = self.bench
        modules = [("subject", subject)] + ([("baseline", baseline)] if baseline is not None else [])
        times: dict[str, list[int]] = {who: [] for who, _ in modules}
        raw: dict[str, list[tuple[int, int, int]]] = {who: [] for who, _ in modules}  # (module, null, calls) a turn
        first, kept = Reservoir(1), Reservoir(bench.kept)  # the first call's value; those of the timed calls
        batch = dict.fromkeys(times, 1)
        call = 0
        for turn in range(bench.calls):
            if turn == 1 + bench.warmup:  # the warm-up done: each module's regions sized to its own calls
                # A region's inputs are held at once: room for twice the warm-up's largest (inputs may vary in size).
                largest = max((len(body) for body in self.inputs.values()), default=0)
                room = max(1, protocol.MAX_BENCH_INPUT_BYTES // max(2 * largest, 1))
                batch = {
                    who: min(room, autorange(found[1:] or found, self.job.limits.time_s))
                    for who, found in times.items()
                }
            count = max(batch.values())
            calls = list(range(call, call + count))
            failed = self._fetch([(size, at) for at in calls])
            if failed is not None:
                self._end(failed, "judge", size=size, call=call)
                return False
            for who, proc in modules if turn % 2 == 0 else modules[::-1]:
                values = None if who != "subject" else first if turn == 0 else kept if turn > bench.warmup else None
                timed = self._timed(who, proc, null, size, calls[: batch[who]], values)
                if timed is None:
                    return False
                elapsed, overhead = timed
                raw[who].append((elapsed, overhead, batch[who]))
                net = max(elapsed - overhead, MIN_NET_NS * batch[who]) // batch[who]
                times[who].append(net)
                if who in self.spent:  # each turn's time per call: the modules' regions hold different counts
                    self.spent[who] += net
            call += count
            if self.returned + first.bytes() + kept.bytes() > self.job.total_bytes():
                message = f"its calls' values came to more than {self.job.total_bytes()} bytes in all"
                self._end(Report(Outcome.OUTPUT, message=message), "subject", size=size, call=call - 1)
                return False
            if baseline is not None and self._hopeless():
                message = (
                    f"stopped: its calls took {self.spent['subject'] / 1e6:.0f} ms against the baseline's "
                    f"{self.spent['baseline'] / 1e6:.0f} ms (a call's time at each turn, summed): too slow to "
                    "reach the threshold"
                )
                self._end(Report(Outcome.TIMEOUT, message=message), "subject", size=size, call=call - 1)
                return False
        self.returned += first.bytes() + kept.bytes()
        # The timed regions' harness: the median of the null module's time per call beside a module's regions
        # (all of one size of region), taken off each of them; less noisy than each region's own null alone.
        harness = {}
        for who, turns in raw.items():
            timed = turns[1 + bench.warmup :]
            harness[who] = statistics.median(overhead / count for _, overhead, count in timed) if timed else 0.0
            times[who][1 + bench.warmup :] = [
                max(MIN_NET_NS, round(elapsed / count - harness[who])) for elapsed, _, count in timed
            ]
        kept_calls = first.items + sorted(kept.items)
        return self._emit(size, kept_calls, {"baseline": [], **times}, batch, round(harness["subject"]))

    def _emit(self, size: int, kept: list, times: dict[str, list[int]], batch: dict, harness_ns: int) -> bool:
        """A size's kept values and its times: written once it is done (nothing is written while one is timed)."""
        for call, body in kept:
            self.runner.emit(protocol.CALL, {"size": size, "call": call}, body, hold=True)
        header = {"size": size, **{f"{key}_ns": value for key, value in times.items()}}
        header.update({f"{who}_batch": count for who, count in batch.items()}, harness_ns=harness_ns)
        self.runner.emit(protocol.SIZE, header, hold=True)
        return True

    def _timed(
        self,
        who: str,
        proc: Child,
        null: Child | None,
        size: int,
        calls: list[int],
        kept: Reservoir | None,
    ) -> tuple[int, int] | None:
        """A module's region, and the null module's on the same inputs after it: both times (the null's is the
        harness's: 0 without one); None when the benchmark has ended (the module's failure)."""
        report, lengths, elapsed = self._region(proc, size, calls, kept=kept)
        if report.status != Outcome.OK:
            self._end(report, who, size=size, call=self.failed_call, output=proc.take_output())
            return None
        overhead = 0
        if null is not None:
            report, _, overhead = self._region(null, size, calls, lengths=lengths)
            if report.status != Outcome.OK:
                self._end(report, "judge", size=size, message=f"the judge's null module failed: {said(report)}")
                return None
        return elapsed, overhead

    def _hopeless(self) -> bool:
        """The subject has taken so much longer than the baseline that it cannot reach the threshold."""
        ratio = self.job.max_ratio
        return ratio > 0 and self.spent["subject"] > ratio * self.spent["baseline"] + GIVE_UP_S * 1e9

    def _region(
        self, proc: Child, size: int, calls: list[int], kept: Reservoir | None = None, lengths: list[int] | None = None
    ) -> tuple[Report, list[int], int]:
        """Calls in a row, the child running only for them: how they ended, each value's length, and their time on
        the benchmark's clock from the first command to the last whole value, with whatever CPU the child had
        while it was to be stopped; each value offered to `kept`. `lengths`: the null module's calls, the size of
        each value it is to return. The region, like one call, is held to one call's limit."""
        limits, area = self.job.limits, proc.area
        assert area is not None
        proc.reader.max_body = LENGTH.size
        placed = area.put_inputs([self.inputs.get((size, call), b"") for call in calls])  # while it is stopped
        stopped = self.stopped_at.get(proc.pid)
        started = self._clock(proc)
        ran_stopped = started - stopped if self.cpu_clock and stopped is not None else 0
        thaw(proc)
        deadline = time.monotonic() + limits.time_s
        got: list[int] = []
        report = Report(Outcome.OK)
        for at, call in enumerate(calls):
            phase = f"call {call + 1} at size {self.bench.sizes[size].name!r}"
            proc.output_bytes, proc.graced = 0, True  # a call's output limit is its own; no memory grace on a clock
            value_bytes = lengths[at] if lengths is not None else 0
            command = CallCommand(size, call, value_bytes, *placed[at]).header()
            if not proc.send(protocol.CHILD_CALL, command, b"", deadline):
                report, body = proc.unsent_outcome(self.oom_before, phase), b""
            else:
                output = limits.output_kb * 1024
                report, body = proc.await_frame(protocol.CHILD_RESULT, deadline, output, self.oom_before, phase)
            if report.status == Outcome.OK and report.index != call:
                report = Report(Outcome.ERROR, error_type="Protocol", message="result for the wrong call")
            length = 0
            if report.status == Outcome.OK:
                try:
                    length = area.value_length(body)
                except AreaError as exc:
                    report = Report(Outcome.ERROR, error_type="Protocol", message=str(exc))
            if report.status != Outcome.OK:
                self.failed_call = call
                break
            got.append(length)
            if kept is not None:  # copied out of the area only if kept
                kept.offer(call, lambda length=length: area.value(length))  # type: ignore[misc]
        ended = None if self.cpu_clock else time.perf_counter_ns()  # the wall clock stops at the last value
        report = memory_outcome(report, proc)
        if proc.exit_status is None and not freeze(proc):
            message = f"its threads could not all be stopped after call {calls[-1] + 1}"
            report = Report(Outcome.ERROR, error_type="Resources", message=message)
            self.failed_call = calls[-1]
        reading = cpu_ns(proc.pid) if ended is None else None  # once: the child may be reaped any moment now
        if report.status == Outcome.OK and (proc.reap(block=False) or (ended is None and reading is None)):
            # Ended after its value: its CPU can no longer be read (nor its work after the value counted).
            report = proc.death_outcome(self.oom_before, f"call {calls[-1] + 1}, after its value")
            self.failed_call = calls[-1]
        if reading is not None:
            self.stopped_at[proc.pid] = reading
        end = ended if ended is not None else reading if reading is not None else started
        return report, got, min(max(0, end - started + max(0, ran_stopped)), protocol.MAX_CALL_NS)

    def _end(self, report: Report, who: str, **extra: object) -> None:
        header = {**report.header(), "who": who, "cpu": self.cpu, "clock": "cpu" if self.cpu_clock else "wall"}
        for key, value in extra.items():
            if key == "baseline_load_ns":
                header["baseline_load_ms"] = min(round(int(value) / 1e6, 3), protocol.MAX_TIME_MS)  # type: ignore[call-overload]
            elif value is not None:
                header[key] = value
        header.pop("index", None)
        self.runner.emit(protocol.BENCH_END, header)


def run_bench(runner: Host, job: BenchJob) -> None:
    Benchmark(runner, job).run()
