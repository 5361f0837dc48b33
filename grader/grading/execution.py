"""One module (a submission, a reference, a pitfall, a starter) run in a sandbox: the only code that
drives containers for grading, used by the Grader, the expected outputs and the problem check alike.

At most two containers are spent on one module. A container lost while the module runs is replaced
once; a second loss, at whatever test, ends the run as crashed (the module took its sandboxes down).
Containers always go back to where they came from, or are replaced there.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from grader import phases
from grader.config_grading import SandboxSettings
from grader.containers.bench import BenchOutcome, run_bench
from grader.containers.container import LOADING, SandboxContainer
from grader.containers.losses import SandboxLost
from grader.containers.protocol import Bench, BenchJob, BenchSize, Job, JobTest, LoadHeader, Outcome, TestHeader
from grader.containers.values import MalformedValue, decode_value
from grader.grading.model import ProblemSpec, Sandboxes
from grader.grading.seeds import per_test_seeds
from grader.grading.source_rules import violations
from sandbox.runner.messages import memory_switches

log = logging.getLogger(__name__)

CONTAINERS_PER_MODULE = 2
MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING"})()  # no value: the test did not return


class NoSandbox(Exception):
    """No container could be had: the judge's problem, never the module's."""


class TestRun:
    """One test's frame as the sandbox sent it: its header, and the bytes of the value it returned.

    The value is decoded where it is judged: for a submission, in a judge process of its own
    (grading/isolated.py), never here. `value` decodes in this process, for what the problem's author
    wrote (the check runs the reference, pitfalls and alternatives) and for values given directly."""

    __slots__ = ("header", "body", "_value", "_malformed", "_decoded")

    def __init__(self, header: TestHeader, body: bytes = b"", value: Any = MISSING) -> None:
        self.header = header
        self.body = body
        self._value = value
        self._malformed: str | None = None
        self._decoded = value is not MISSING or header.status != Outcome.OK

    def _decode(self) -> None:
        if not self._decoded:
            self._decoded = True
            try:
                self._value = decode_value(self.body)
            except MalformedValue as exc:
                self._malformed = str(exc)

    @property
    def value(self) -> Any:
        """The returned value, decoded in this process (MISSING when the test returned none)."""
        self._decode()
        return self._value

    @property
    def malformed(self) -> str | None:
        """Why a value that came could not be decoded (decoded in this process)."""
        self._decode()
        return self._malformed

    @property
    def returned(self) -> bool:
        return self.header.status == Outcome.OK and self.malformed is None


@dataclass
class ModuleRun:
    """What a module did: how it loaded, then each test; or, when it took two containers down, where."""

    load: LoadHeader | None
    tests: dict[int, TestRun] = field(default_factory=dict)
    lost: list[SandboxLost] = field(default_factory=list)

    @property
    def crashed(self) -> bool:
        return self.load is None

    @property
    def crashed_at(self) -> int | None:
        """The test during which the last container was lost (LOADING while loading), if it crashed."""
        if not self.crashed or not self.lost:
            return None
        index = self.lost[-1].during_test
        return LOADING if index is None else index

    @property
    def loaded(self) -> bool:
        """The module loaded (then ran its tests, or crashed during one)."""
        if self.load is not None:
            return self.load.status == Outcome.OK
        return self.crashed_at is not None and self.crashed_at != LOADING

    def value(self, index: int) -> Any:
        """Test `index`'s value, decoded in this process (see TestRun)."""
        run = self.tests.get(index)
        return run.value if run is not None else MISSING

    def body(self, index: int) -> bytes | None:
        """The bytes of the value test `index` returned; None when it returned none."""
        run = self.tests.get(index)
        return run.body if run is not None and run.header.status == Outcome.OK else None


class Sticky:
    """Sandboxes that hand out one container again and again (for runs one after another, such as a
    problem's reference and pitfalls), until it comes back unclean or lost; then the source's next one.
    close() gives the last one back. For one user at a time."""

    def __init__(self, source: Sandboxes) -> None:
        self.source = source
        self.container: SandboxContainer | None = None

    @property
    def image_id(self) -> str | None:
        return self.source.image_id

    def acquire(self, timeout: float | None = None, due_in_s: float = 3600.0) -> SandboxContainer:
        if self.container is None:
            self.container = self.source.acquire(timeout, due_in_s)
        return self.container

    def release(self, container: SandboxContainer, reusable: bool) -> None:
        if not reusable or not container.settle():
            self.container = None
            self.source.release(container, reusable=False)

    def engine_ok(self) -> bool:
        return self.source.engine_ok()

    def close(self) -> None:
        if self.container is not None:
            self.source.release(self.container, reusable=True)
            self.container = None


def build_job(
    problem: ProblemSpec, source: str, sandbox: SandboxSettings, seed: int | None = None, rules: bool = True
) -> Job:
    """The job for one module: every test with its seed (grading/seeds.py) under the submission's seed, and
    its limits; rules: the names the problem forbids, for the child to replace."""
    seeds = per_test_seeds(problem, seed)
    return Job(
        source=source,
        entry_points=tuple(problem.entry_points),
        tests=tuple(
            JobTest(code=test.code, seed=test_seed, limits=limits)
            for test, test_seed, limits in zip(problem.tests, seeds, problem.test_limits, strict=True)
        ),
        max_result_bytes=sandbox.max_result_bytes,
        load_time_s=sandbox.load_time_s,
        helpers=problem.helpers,
        skip_after_timeout=problem.after_timeout != "run",
        forbid=tuple(problem.forbid) if rules else (),
    )


def job_bound_s(problem: ProblemSpec, sandbox: SandboxSettings) -> float:
    """The trusted side's own bound on a whole job: the runner enforces each test's limit itself."""
    limits = problem.test_limits
    # The first load, then what the runner lets fresh children take to load again (messages.py
    # Job.reload_budget_s: one load per change of memory between tests, one for reloads after a crash).
    loads = 2 + memory_switches(limits)
    return loads * sandbox.load_time_s + sum(test.time_s + 1.0 for test in limits) + 15.0


# (container_no, [(test index, its run)]): the tests that landed together, in order.
OnTests = Callable[[int, list[tuple[int, TestRun]]], None]


def run_module(
    sandboxes: Sandboxes,
    problem: ProblemSpec,
    source: str,
    sandbox: SandboxSettings,
    on_tests: OnTests | None = None,
    seed: int | None = None,
    *,
    rules: bool,
) -> ModuleRun:
    """Runs one module's tests; never raises for anything the module does. NoSandbox when no container
    can be had. on_tests hears the tests as they land (those that came together at once), with the number
    of the container they ran in (0; 1 when the first was lost: a second container starts the tests again).
    rules: the problem's forbid/require hold for it (a submission's, never the reference's): a source that breaks
    one is refused here, before any sandbox, and the forbidden names are replaced in its process."""
    if rules:
        broken = violations(source, problem.forbid, problem.require)
        if broken:
            message = "; ".join(violation.message for violation in broken)[:2000]
            line = broken[0].line if broken[0].line is not None and 0 < broken[0].line <= 1_000_000 else None
            return ModuleRun(load=LoadHeader(status=Outcome.COMPILE_ERROR, message=message, line=line))
    job = build_job(problem, source, sandbox, seed, rules=rules)
    lost: list[SandboxLost] = []
    tests: dict[int, TestRun] = {}
    for container_no in range(CONTAINERS_PER_MODULE):
        tests = {}

        def landed(
            frames: list[tuple[TestHeader, bytes]], container_no: int = container_no, tests: dict = tests
        ) -> None:
            runs = [(header.index, TestRun(header, body)) for header, body in frames]
            tests.update(runs)
            if on_tests is not None:
                try:
                    on_tests(container_no, runs)
                except Exception:  # a listener's failure must not cost the run
                    log.exception("a listener of tests %s failed", [index + 1 for index, _ in runs])

        bound = job_bound_s(problem, sandbox)
        try:
            with phases.timed("handout"):
                container = sandboxes.acquire(due_in_s=bound)
        except SandboxLost as exc:
            raise NoSandbox(str(exc)) from exc
        reusable = False
        try:
            outcome = container.run_job(job, time.monotonic() + bound, landed)
            reusable = True  # once the runner says it cleaned up after the job (the pool waits for that)
        except SandboxLost as exc:
            log.warning(
                "sandbox %s lost (container %d of %d): %s", container.name, container_no + 1, CONTAINERS_PER_MODULE, exc
            )
            lost.append(exc)
            continue
        finally:
            sandboxes.release(container, reusable=reusable)
        return ModuleRun(load=outcome.load, tests=tests, lost=lost)
    return ModuleRun(load=None, tests=tests, lost=lost)


# -- a benchmark (a speed-graded problem's: grading/speed.py) ---------------------------------------------------
# A subject whose calls take this many times what the threshold allows, against the baseline's, is stopped.
GIVE_UP_FACTOR = 4.0


def bench_job(
    problem: Any,
    subject: str,
    baseline: str,
    sandbox: SandboxSettings,
    seed: int,
    max_result_bytes: int | None = None,
    give_up: bool = True,
    max_total_bytes: int = 0,
    only: Sequence[tuple[int, int]] = (),
) -> BenchJob:
    """The benchmark of `subject` against `baseline` ("": none, the calls only) on the problem's speed inputs
    drawn under `seed`; each call's returned value at most `max_result_bytes` (the server's cap by default). A
    subject far slower than the threshold allows is stopped early (BenchJob.max_ratio). `only`: a reference's
    job, the calls (size, call) to make, each alone."""
    speed, limits = problem.speed, problem.speed_limits
    return BenchJob(
        subject=subject,
        baseline=baseline,
        bench=Bench(
            entry_point=speed.call or problem.entry_points[0],
            inputs=speed.inputs,
            sizes=tuple(BenchSize(name=size.name, params=size.params) for size in speed.sizes),
            seed=seed,
            warmup=speed.warmup,
            repeats=speed.repeats,
            fresh_inputs=speed.fresh_inputs,
            device=speed.device,
            helpers=problem.helpers,
        ),
        limits=limits,
        load_time_s=sandbox.load_time_s,
        max_result_bytes=min(max_result_bytes or sandbox.max_result_bytes, sandbox.max_result_bytes),
        max_ratio=GIVE_UP_FACTOR / speed.threshold if baseline and give_up else 0.0,
        max_total_bytes=max_total_bytes,
        only=tuple(only),
    )


@dataclass
class BenchRun:
    """A benchmark's outcome; None when it took both its containers down (`lost` says where)."""

    outcome: BenchOutcome | None
    lost: list[SandboxLost] = field(default_factory=list)


def run_benchmark(sandboxes: Sandboxes, job: BenchJob) -> BenchRun:
    """Runs a benchmark, in a second container if the first is lost; never raises for what the modules do.
    NoSandbox when no container can be had."""
    lost: list[SandboxLost] = []
    bound = job.bound_s() + 15.0
    for container_no in range(CONTAINERS_PER_MODULE):
        try:
            container = sandboxes.acquire(due_in_s=bound)
        except SandboxLost as exc:
            raise NoSandbox(str(exc)) from exc
        reusable = False
        try:
            outcome = run_bench(container, job, time.monotonic() + bound)
            reusable = True
        except SandboxLost as exc:
            log.warning("sandbox %s lost during a benchmark (container %d): %s", container.name, container_no + 1, exc)
            lost.append(exc)
            continue
        finally:
            sandboxes.release(container, reusable=reusable)
        return BenchRun(outcome, lost)
    return BenchRun(None, lost)
