"""Speed grading: a submission to a speed-graded problem (problems/speed.py) that passes every test is then
timed against the problem's baseline (sandbox/runner/timing.py), and accepted only when its score reaches
the threshold.

The trusted side sends the benchmark (after the reference's first call at each size, whose values bound the
submission's), then checks each call the runner kept (the first at each size, and 8 of its timed calls drawn as
they came) against the reference's on the same inputs, the reference run on exactly those calls (a value kept
from an earlier call, on fresh inputs, is wrong), and makes the statistics from the times (speed_stats.py).
Blame as for tests: the submission's failures are its own verdicts (a call that runs out of time is
time_limit_exceeded, and so on); the baseline's or the reference's failure,
like a sandbox that cannot be had, is the judge's (internal_error). One benchmark runs at a time in a
process: two at once would share the CPU they are timed on.
"""

from __future__ import annotations

import logging
import threading

from grader import phases
from grader.config_grading import SandboxSettings
from grader.containers.bench import BenchOutcome
from grader.containers.losses import SandboxLost
from grader.containers.protocol import KEPT, Outcome
from grader.grading.execution import NoSandbox, bench_job, run_benchmark
from grader.grading.expected import ExpectedCache, ProblemBroken
from grader.grading.judge import CRASHED, Judge
from grader.grading.model import ProblemSpec, Sandboxes
from grader.grading.seeds import derive
from grader.grading.speed_stats import TIMING_VERSION, SpeedResult, score, setup_charge_ns, size_speed
from grader.grading.verdict import LOAD_TO_STATUS, RUNNER_TO_TEST, TEST_TO_STATUS, Status, Verdict

log = logging.getLogger(__name__)

BENCH_SEED_INDEX = 1_000_000  # the benchmark's seed is derived from the submission's as a test's is (seeds.py)
SLOT_WAIT_S = 600.0  # how long a benchmark waits for the one that runs before it


def bench_seed(problem: ProblemSpec, seed: int | None) -> int:
    """The benchmark's inputs' seed, derived from the submission's, which the judge draws and never shows: no
    module can draw a call's inputs ahead of it (seeds.draws_fresh: a speed-graded problem always has one)."""
    return derive(seed if seed is not None else 0, BENCH_SEED_INDEX)


class SpeedGrader:
    def __init__(self, sandbox: SandboxSettings, sandboxes: Sandboxes, expected: ExpectedCache, judge: Judge) -> None:
        self.sandbox = sandbox
        self.sandboxes = sandboxes  # the submissions' containers: the baseline is public code, the reference never
        self.expected = expected
        self.judge = judge
        self._slot = threading.BoundedSemaphore(1)

    def grade(
        self,
        problem: ProblemSpec,
        source: str,
        seed: int | None,
        verdict: Verdict,
        against: tuple[str, str] | None = None,
    ) -> Verdict:
        """The verdict of a submission that passed every test, once it is timed. Never raises. `against`: (name,
        code) of another module to time it against than the problem's baseline: for the problem check only,
        which times the author's own modules (never a submission beside the reference)."""
        speed = problem.speed  # type: ignore[attr-defined]
        name, code = against if against is not None else (speed.baseline, speed.baseline_code())
        result = SpeedResult(
            baseline=name,
            device=speed.device,
            score=speed.score,
            threshold=speed.threshold,
            timing_version=TIMING_VERSION,
        )
        if not self._slot.acquire(timeout=SLOT_WAIT_S):
            return _judges(verdict, result, "no benchmark slot came free")
        try:
            with phases.timed("speed"):
                return self._grade(problem, source, code, bench_seed(problem, seed), verdict, result, against is None)
        except Exception as exc:  # the judge's own bug: never blamed on the submission
            log.exception("speed grading crashed")
            return _judges(verdict, result, f"the judge failed: {type(exc).__name__}")
        finally:
            self._slot.release()

    def _grade(
        self,
        problem: ProblemSpec,
        source: str,
        baseline: str,
        seed: int,
        verdict: Verdict,
        result: SpeedResult,
        give_up: bool,
    ) -> Verdict:
        image = self.sandboxes.image_id or "unknown"
        firsts = [(size, 0) for size in range(len(problem.speed.sizes))]  # type: ignore[attr-defined]
        try:  # the reference's first call at each size: its values' sizes bound the submission's, before it runs
            largest = max(len(body) for body in self.expected.bench(problem, image, seed, firsts).values())
        except ProblemBroken as exc:
            return _judges(verdict, result, str(exc))
        except (SandboxLost, NoSandbox) as exc:
            return _judges(verdict, result, f"the judge could not run the reference's benchmark: {exc}")
        kept = len(firsts) * (1 + min(problem.speed.repeats, KEPT))  # type: ignore[attr-defined]
        total = largest * kept * 5 // 4 + 1024 * 1024  # in all, against the reference's
        job = bench_job(problem, source, baseline, self.sandbox, seed, 2 * largest + 64 * 1024, give_up, total)
        try:
            run = run_benchmark(self.sandboxes, job)
        except NoSandbox as exc:
            return _judges(verdict, result, f"the judge has no sandbox for the benchmark: {exc}")
        if run.outcome is None:
            judges = next((lost for lost in run.lost if lost.judges), None)
            if judges is not None or not self.sandboxes.engine_ok():
                return _judges(
                    verdict,
                    result,
                    f"the judge lost the benchmark's sandbox: {judges or (run.lost[-1] if run.lost else 'no sandbox')}",
                )
            message = f"{CRASHED} during the benchmark"
            return _fails(verdict, result, Status.RUNTIME_ERROR, message)
        failed = self._failure(problem, run.outcome, verdict, result)
        if failed is not None:
            return failed
        try:  # the reference on the very calls the benchmark kept (drawn as they came: no module knew which)
            expected = self.expected.bench(problem, image, seed, sorted(run.outcome.calls))
        except ProblemBroken as exc:
            return _judges(verdict, result, str(exc))
        except (SandboxLost, NoSandbox) as exc:
            return _judges(verdict, result, f"the judge could not run the reference's benchmark: {exc}")
        wrong = self._wrong(problem, run.outcome, expected, verdict, result)
        if wrong is not None:
            return wrong
        return _timed(problem, run.outcome, verdict, result)

    def _failure(
        self, problem: ProblemSpec, outcome: BenchOutcome, verdict: Verdict, result: SpeedResult
    ) -> Verdict | None:
        """The verdict when the benchmark did not measure the submission: its load, a call that failed, the
        baseline's or the judge's own failure (the judge's); None when every call ran."""
        speed = problem.speed  # type: ignore[attr-defined]
        load = outcome.load
        if load.who == "judge":  # the inputs' code failed before the module was loaded: the problem's failure
            return _judges(verdict, result, f"the benchmark's inputs: {load.message}")
        if load.status != Outcome.OK:
            status = LOAD_TO_STATUS.get(load.status, Status.RUNTIME_ERROR)
            return _fails(verdict, result, status, f"loading it for the benchmark: {_said(load)}")
        end = outcome.end
        assert end is not None
        if end.status != Outcome.OK:
            if end.who == "baseline":
                return _judges(verdict, result, f"the baseline {result.baseline!r} failed: {_said(end)}")
            if end.who == "judge":
                return _judges(verdict, result, f"the benchmark failed: {_said(end)}")
            where = _where(speed, end.size, end.call)
            status = TEST_TO_STATUS[RUNNER_TO_TEST.get(end.status, RUNNER_TO_TEST[Outcome.ERROR])]
            return _fails(verdict, result, status, f"the benchmark, {where}: {_said(end)}")
        return None

    def _wrong(
        self,
        problem: ProblemSpec,
        outcome: BenchOutcome,
        expected: dict[tuple[int, int], bytes],
        verdict: Verdict,
        result: SpeedResult,
    ) -> Verdict | None:
        """The verdict when a kept call's value is not the reference's on the same inputs; None when all are."""
        speed = problem.speed  # type: ignore[attr-defined]
        for (size, call), body in sorted(outcome.calls.items()):
            found = self.judge.call(expected.get((size, call)), body, speed.check.model_dump())
            if found:
                message = f"the benchmark, {_where(speed, size, call)}: a wrong result ({found.get('message')})"
                if speed.fresh_inputs and call > 0:
                    message += "; each call gets inputs of its own, so a result kept from an earlier call is wrong"
                return _fails(verdict, result, Status.WRONG_ANSWER, message, found.get("details"))
        return None


def _timed(problem: ProblemSpec, outcome: BenchOutcome, verdict: Verdict, result: SpeedResult) -> Verdict:
    """The statistics of a benchmark whose every kept call was right, and the verdict they make."""
    speed = problem.speed  # type: ignore[attr-defined]
    end = outcome.end
    assert end is not None
    subject_import = (outcome.load.time_ms or 0.0) * 1e6
    baseline_import = (end.baseline_load_ms or 0.0) * 1e6
    charge = setup_charge_ns(
        subject_import,
        baseline_import,
        [size.subject_ns for size in outcome.sizes],
        speed.warmup,
        [size.subject_batch for size in outcome.sizes],
    )
    sizes = [
        size_speed(
            spec.name,
            header.subject_ns,
            header.baseline_ns,
            speed.warmup,
            charge,
            (header.subject_batch, header.baseline_batch),
            header.harness_ns,
        )
        for spec, header in zip(speed.sizes, outcome.sizes, strict=True)
    ]
    value, interval = score(sizes, speed.score)
    passed = value >= speed.threshold
    result = result.model_copy(
        update={
            "sizes": sizes,
            "speedup": value,
            "interval": interval,
            "passed": passed,
            "submission_import_ms": round(subject_import / 1e6, 3),
            "baseline_import_ms": round(baseline_import / 1e6, 3),
            "setup_charge_ms": round(charge / 1e6, 4),
            "cpu": end.cpu if end.cpu >= 0 else None,
            "clock": end.clock,
        }
    )
    how = "geometric mean of the sizes' speed-ups" if speed.score == "geomean" else "smallest speed-up of the sizes"
    if passed:
        result.message = f"{value:g}x the baseline {result.baseline!r} ({how}); at least {speed.threshold:g}x needed"
        return verdict.model_copy(update={"speed": result})
    result.message = (
        f"correct, but {value:g}x the baseline {result.baseline!r} ({how}), where at least {speed.threshold:g}x is "
        "needed"
    )
    return verdict.model_copy(update={"status": Status.TIME_LIMIT_EXCEEDED, "message": result.message, "speed": result})


def _said(header: object) -> str:
    kind, message = getattr(header, "error_type", None), getattr(header, "message", None)
    status = getattr(header, "status", "")
    return f"{kind}: {message}" if kind and message else message or str(getattr(status, "value", status))


def _where(speed: object, size: int | None, call: int | None) -> str:
    sizes = speed.sizes  # type: ignore[attr-defined]
    name = sizes[size].name if size is not None and 0 <= size < len(sizes) else "?"
    return f"call {call + 1 if call is not None else '?'} at size {name!r}"


def _fails(verdict: Verdict, result: SpeedResult, status: Status, message: str, details: dict | None = None) -> Verdict:
    """The submission's own failure during the benchmark: not measured, and the verdict says why."""
    result = result.model_copy(update={"message": message, "details": details})
    return verdict.model_copy(update={"status": status, "message": message, "speed": result})


def _judges(verdict: Verdict, result: SpeedResult, message: str) -> Verdict:
    """The judge's failure (the baseline's, the reference's, no sandbox): internal_error, never the submission's."""
    log.error("speed grading failed: %s", message)
    result = result.model_copy(update={"message": message})
    return verdict.model_copy(update={"status": Status.INTERNAL_ERROR, "message": message, "speed": result})
