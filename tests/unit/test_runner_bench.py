"""The runner's benchmark (sandbox/runner/timing.py) on the host, with plain-Python children
(tests/unit/runner_harness.py): its frames in order and counted as the job asked, the two modules in turn,
the one not timed stopped, every failure told by whose it was; read by the grader's strict decoder."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from sandbox.runner.bench_children import Reservoir
from sandbox.runner.bench_job import BenchJob
from sandbox.runner.protocol import MAX_BENCH_BATCH, FrameError, Outcome
from tests.unit.runner_harness import HostRunner, bench_job

pytestmark = pytest.mark.timeout(120)

TWICE = "def f(x):\n    return x * 2\n"
# Busy for 4 ms of CPU: the benchmark's clock is each child's CPU time (the host keeps it), which a sleep does not use.
BUSY = (  # on the process's CPU time: a busy machine gives it less of the wall clock's
    "def busy(seconds):\n    until = time.process_time() + seconds\n"
    "    while time.process_time() < until:\n        pass\n"
)
SLOW_TWICE = BUSY + "def f(x):\n    busy(0.004)\n    return x * 2\n"


@pytest.fixture(scope="module")
def runner() -> HostRunner:
    host = HostRunner()
    yield host  # type: ignore[misc]
    host.close()


def test_a_benchmark_sends_each_sizes_checked_calls_and_times_then_its_end(runner: HostRunner) -> None:
    exchange = runner.run_bench(bench_job(TWICE, SLOW_TWICE, sizes=2, warmup=1, repeats=5))
    assert exchange.load.header.status == Outcome.OK
    by_size = {size: [frame for frame in exchange.calls if frame.header.size == size] for size in (0, 1)}
    for size, kept in by_size.items():
        # The first call, then 5 of the timed calls (not the warm-up, call 1: min(repeats, KEPT)), in order.
        calls = [frame.header.call for frame in kept]
        assert calls[0] == 0 and len(calls) == 6 and all(1 < a < b for a, b in zip(calls[1:], calls[2:], strict=False))
        assert [frame.body for frame in kept] == [str(2 * call).encode() for call in calls]  # f(CALL): its inputs
        header = exchange.sizes[size].header
        # The fast module's regions hold many calls (autorange), the 4 ms one's about 10 ms of them.
        assert header.subject_batch == MAX_BENCH_BATCH and header.baseline_batch in (2, 3)
        assert calls[-1] < 2 + 5 * MAX_BENCH_BATCH
    for frame in exchange.sizes:
        assert len(frame.header.subject_ns) == len(frame.header.baseline_ns) == 7
        # The baseline is busy 4 ms a call: the benchmark's clock sees it, whatever the children say, less the
        # harness (the null module's time on the same calls, a fraction of a millisecond here).
        assert min(frame.header.baseline_ns) >= 3_700_000
        assert sorted(frame.header.subject_ns)[3] < 2_000_000
    assert exchange.end.status == Outcome.OK and exchange.end.who == "" and exchange.end.clock == "cpu"
    assert exchange.end.baseline_load_ms is not None
    assert exchange.done is not None and exchange.done.header.clean


def test_a_benchmark_on_a_device_is_timed_on_the_wall_clock(runner: HostRunner) -> None:
    """A device's work is not the child's CPU time (the call waits for it): a benchmark timed on a device reads
    the runner's wall clock, which a sleep in the call does fill."""
    job = bench_job(TWICE, "import time\ndef f(x):\n    time.sleep(0.004)\n    return x * 2\n", sizes=1, repeats=5)
    exchange = runner.run_bench(replace(job, bench=replace(job.bench, device="cuda")))
    assert exchange.end.status == Outcome.OK and exchange.end.clock == "wall", exchange.end
    assert min(exchange.sizes[0].header.baseline_ns) >= 3_700_000  # the sleep, on the wall clock
    cpu = runner.run_bench(job)  # the same on the CPU: a sleep is no CPU time
    assert cpu.end.clock == "cpu" and max(cpu.sizes[0].header.baseline_ns) < 3_000_000


def test_the_modules_take_turns_a_b_then_b_a(runner: HostRunner, tmp_path: Path) -> None:
    log = tmp_path / "turns"
    module = "def f(x):\n    with open({path!r}, 'a') as out:\n        out.write('{who}%d ' % x)\n    return x\n"
    job = bench_job(module.format(path=str(log), who="A"), module.format(path=str(log), who="B"), sizes=1, repeats=5)
    assert runner.run_bench(job).end.status == Outcome.OK
    # Both modules fast: the first call and the warm-up (call 1) alone, then regions of MAX_BENCH_BATCH calls,
    # the same calls for both, A B then B A.
    expected, first = [], 0
    for turn in range(1 + 1 + 5):
        count = 1 if turn < 2 else MAX_BENCH_BATCH
        order = "AB" if turn % 2 == 0 else "BA"
        expected += [f"{who}{call}" for who in order for call in range(first, first + count)]
        first += count
    assert log.read_text().split() == expected


def test_the_subject_is_stopped_while_the_baseline_runs(runner: HostRunner, tmp_path: Path) -> None:
    """A thread the subject starts at import keeps writing; the baseline sees no write during its calls."""
    beat = tmp_path / "beat"
    subject = (
        "import threading\n"
        "def _spin():\n"
        "    n = 0\n"
        "    while True:\n"
        "        n += 1\n"
        f"        with open({str(beat)!r}, 'w') as out:\n"
        "            out.write(str(n))\n"
        "threading.Thread(target=_spin, daemon=True).start()\n" + TWICE
    )
    baseline = (
        "def f(x):\n"
        f"    before = open({str(beat)!r}).read()\n"
        "    time.sleep(0.02)\n"
        f"    if open({str(beat)!r}).read() != before:\n"
        "        raise RuntimeError('the subject ran during the baseline')\n"
        "    return x * 2\n"
    )
    exchange = runner.run_bench(bench_job(subject, baseline, sizes=1, repeats=5))
    assert exchange.end.status == Outcome.OK, exchange.end


def test_a_call_past_its_time_ends_the_benchmark_as_the_subjects_timeout(runner: HostRunner) -> None:
    subject = "def f(x):\n    if x == 3:\n        time.sleep(10)\n    return x\n"
    started = time.monotonic()
    exchange = runner.run_bench(bench_job(subject, TWICE, sizes=2, repeats=5, time_s=0.5))
    assert time.monotonic() - started < 5
    end = exchange.end
    assert (end.status, end.who, end.size, end.call) == (Outcome.TIMEOUT, "subject", 0, 3)
    assert exchange.sizes == []  # no size was finished


def test_a_call_that_ends_its_process_is_the_subjects_error(runner: HostRunner) -> None:
    subject = "def f(x):\n    if x == 2:\n        os._exit(3)\n    return x\n"
    end = runner.run_bench(bench_job(subject, TWICE, sizes=1)).end
    assert (end.status, end.who, end.call) == (Outcome.ERROR, "subject", 2)
    assert "exited (code 3)" in (end.message or "")


def test_a_baseline_that_fails_is_told_as_the_baselines(runner: HostRunner) -> None:
    end = runner.run_bench(bench_job(TWICE, "raise ValueError('broken')\n")).end
    assert (end.status, end.who) == (Outcome.ERROR, "baseline")
    assert "broken" in (end.message or "")
    end = runner.run_bench(bench_job(TWICE, "def f(x):\n    raise KeyError(x)\n")).end
    assert (end.status, end.who, end.call) == (Outcome.ERROR, "baseline", 0)


def test_a_subject_that_does_not_load_ends_before_any_call(runner: HostRunner) -> None:
    exchange = runner.run_bench(bench_job("raise ImportError('no')\n", TWICE))
    assert exchange.load.header.status == Outcome.ERROR
    assert exchange.calls == exchange.sizes == exchange.ends == []


def test_inputs_that_cannot_be_built_are_the_problems_failure(runner: HostRunner) -> None:
    exchange = runner.run_bench(bench_job(TWICE, TWICE, inputs="raise ValueError('no inputs')"))
    assert exchange.load.header.status == Outcome.ERROR
    assert exchange.load.header.error_type == "BenchInputs"
    assert exchange.load.header.who == "judge"


def test_a_subject_whose_import_error_is_named_like_the_judges_is_its_own(runner: HostRunner) -> None:
    source = "class BenchInputs(Exception):\n    pass\n\n\nraise BenchInputs('the judge did it')\n"
    exchange = runner.run_bench(bench_job(source, TWICE))
    assert exchange.load.header.status == Outcome.ERROR
    assert exchange.load.header.error_type == "BenchInputs"
    assert exchange.load.header.who == ""  # the runner's word alone says the judge's


def test_the_load_is_timed_without_the_inputs_making(runner: HostRunner) -> None:
    """Inputs that take 0.3 s to make, a module that loads at once: its load is timed from the word to load."""
    exchange = runner.run_bench(bench_job(TWICE, "", inputs="time.sleep(0.05)\nargs = [CALL]", sizes=1, repeats=5))
    assert exchange.end.status == Outcome.OK
    assert exchange.load.header.time_ms < 100


def test_a_result_for_another_call_is_refused(runner: HostRunner) -> None:
    """A child that answers a call with a result for another one (a frame forged ahead, say)."""
    subject = "def f(x):\n    CALL.__dict__  # noqa\n    return x\n"
    forged = subject.replace("CALL.__dict__  # noqa", "object.__setattr__(CALL, 'call', CALL.call + 1)")
    end = runner.run_bench(bench_job(forged, TWICE, sizes=1)).end
    assert (end.status, end.who) == (Outcome.ERROR, "subject")
    assert "wrong call" in (end.message or "")


def test_a_subject_far_slower_than_the_baseline_is_stopped_early(runner: HostRunner) -> None:
    """Past `max_ratio` times the baseline's time (plus a second) it can reach no threshold: it would only hold
    the container and the CPU timed on."""
    slow = BUSY + "def f(x):\n    busy(0.15)\n    return x\n"
    end = runner.run_bench(bench_job(slow, TWICE, sizes=2, warmup=2, repeats=20, max_ratio=2.0)).end
    assert (end.status, end.who) == (Outcome.TIMEOUT, "subject")
    # Stopped at the turn that took it past a second (the 7th or 8th call of 0.15 s on its clock, one a turn),
    # not after the 44 turns' 6.6 s: counted in calls, which a slow or loaded machine does not change
    assert end.size == 0 and end.call is not None and end.call < 3 + 8 * MAX_BENCH_BATCH, (end.size, end.call)
    assert "too slow to reach the threshold" in (end.message or "")
    end = runner.run_bench(bench_job(slow, TWICE, sizes=1, warmup=0, repeats=5, max_ratio=0.0)).end
    assert end.status == Outcome.OK  # without a ratio, never stopped


def test_values_past_the_jobs_total_end_the_benchmark_as_the_subjects_output(runner: HostRunner) -> None:
    """Each value within the per-call cap, but together more than the job allows: neither the runner nor the
    trusted side holds more than that."""
    subject = "def f(x):\n    return 'x' * 5000\n"
    exchange = runner.run_bench(bench_job(subject, TWICE, sizes=2, warmup=0, repeats=5, max_total_bytes=20_000))
    end = exchange.end
    assert (end.status, end.who, end.size) == (Outcome.OUTPUT, "subject", 0)  # the fifth value kept: 25,000 bytes
    assert "more than 20000 bytes in all" in (end.message or "")
    assert exchange.calls == []  # nothing of the size was sent


def test_the_runner_says_which_contract_it_speaks(runner: HostRunner) -> None:
    """The grader refuses a sandbox whose runner speaks another contract (an image built before the contract
    changed): a stale image is then named as such, never blamed on a problem or a submission."""
    from grader.containers.container import CONTRACT

    assert runner.hello.header.contract == CONTRACT and len(CONTRACT) == 16


def test_cpu_a_child_has_while_it_was_to_be_stopped_is_counted_in_its_next_call(
    runner: HostRunner, tmp_path: Path
) -> None:
    """Woken while stopped (here by the baseline: the host's children have no seccomp; in a sandbox nothing can
    wake it), the subject works in the baseline's turn: that CPU is on its own clock, counted in its next call.
    Every SIGCONT (the runner's, at its turn; the baseline's, out of it) makes it busy for 10 ms."""
    pid = tmp_path / "pid"
    subject = (
        BUSY
        + f"import signal\nopen({str(pid)!r}, 'w').write(str(os.getpid()))\n"
        + "signal.signal(signal.SIGCONT, lambda *_: busy(0.01))\n"
        + TWICE
    )
    baseline = (
        BUSY + "def f(x):\n"
        f"    os.kill(int(open({str(pid)!r}).read()), signal.SIGCONT)\n"
        "    busy(0.01)\n    return x * 2\n"
    )
    exchange = runner.run_bench(bench_job(subject, baseline, sizes=1, warmup=0, repeats=5))
    assert exchange.end.status == Outcome.OK, exchange.end
    size = exchange.sizes[0].header
    # 10 ms at each of its own turns, 10 ms at each of the baseline's calls: all on its clock.
    batches = [1] + [size.subject_batch] * 5, [1] + [size.baseline_batch] * 5
    total = sum(ns * count for ns, count in zip(size.subject_ns, batches[0], strict=True))
    assert total >= 0.85 * (10_000_000 * 6 + 10_000_000 * sum(batches[1])), (size.subject_ns, batches)
    assert max(size.baseline_ns) < 17_000_000, size.baseline_ns


def test_the_kept_calls_are_drawn_evenly_among_all_offered() -> None:
    """The runner keeps 8 of a size's timed values, drawn as they come: each call as likely as any other to be
    checked, so that a module cannot know which of its calls are."""
    seen = [0] * 100
    for _ in range(4000):
        kept = Reservoir(8)
        for call in range(100):
            kept.offer(call, b"")
        assert len(kept.items) == 8 and len({call for call, _ in kept.items}) == 8
        for call, _ in kept.items:
            seen[call] += 1
    # Each call kept 8 % of the time: 320 of 4,000 (sd about 17).
    assert 240 < min(seen) and max(seen) < 400, (min(seen), max(seen))


def test_the_harness_time_is_measured_beside_the_modules_and_taken_off(runner: HostRunner) -> None:
    """The null module makes the same calls on the same inputs with values of the same sizes: its time per call
    is on the SIZE frame, and a module's net time is its own less that (a big value costs the harness, not it)."""
    big = "def f(x):\n    return 'x' * 500_000\n"
    exchange = runner.run_bench(bench_job(big, SLOW_TWICE, sizes=1, warmup=1, repeats=5))
    assert exchange.end.status == Outcome.OK, exchange.end
    size = exchange.sizes[0].header
    assert size.harness_ns > 0
    # Sending 500 kB costs the harness about what it costs the module: the module's net time is a fraction of
    # the 4 ms baseline's, whatever the value's size.
    assert sorted(size.subject_ns)[3] < 1_500_000, (size.subject_ns, size.harness_ns)
    assert min(size.baseline_ns) >= 3_700_000


@pytest.mark.parametrize(
    "only",
    [((0, 1), (0, 0)), ((0, 0), (0, 0)), ((2, 0),), ((0, 10**9),), ((0,),), ("ab",)],
    ids=["out of order", "twice", "no such size", "no such call", "not a pair", "not numbers"],
)
def test_a_reference_jobs_calls_are_checked(only: tuple) -> None:
    job = bench_job(TWICE, sizes=2)
    with pytest.raises(FrameError):
        BenchJob.parse(job.payload().replace(b'"only":[]', json.dumps({"only": only})[1:-1].encode()))


def test_a_reference_job_makes_exactly_the_calls_asked_for(runner: HostRunner) -> None:
    job = replace(bench_job(TWICE, sizes=2, warmup=1, repeats=5), only=((0, 0), (0, 40), (1, 7)))
    exchange = runner.run_bench(job)
    assert exchange.end.status == Outcome.OK, exchange.end
    assert [(f.header.size, f.header.call, f.body) for f in exchange.calls] == [
        (0, 0, b"0"),
        (0, 40, b"80"),
        (1, 7, b"14"),
    ]
    assert [len(frame.header.subject_ns) for frame in exchange.sizes] == [2, 1]
