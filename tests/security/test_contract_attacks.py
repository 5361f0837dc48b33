"""Attacks on the one contract (sandbox/runner/protocol.py, messages.py) and on per-test limits.

Host-side: the real runner with plain-Python children (tests/unit/runner_harness.py), whose frames the
grader's strict decoder reads; the trusted side's job and bounds from a problem file. A test here that
fails shows a flaw; one that passes is a defence that held.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from grader.config import Settings
from grader.containers.container import FRAME_SLACK_S
from grader.containers.frames import encode_job
from grader.containers.protocol import DONE, LOAD, TEST
from grader.grading.execution import build_job, job_bound_s
from grader.problems.registry import LoadedProblem, ProblemError, Registry
from sandbox.runner import protocol
from sandbox.runner.child_job import for_child
from sandbox.runner.messages import Job, JobTest, Limits, Report
from sandbox.runner.messages import Limits as RunnerLimits
from sandbox.runner.protocol import CHILD_TEST_OUTCOMES, FrameError, Outcome
from tests.unit.runner_harness import HostRunner, job

pytestmark = pytest.mark.timeout(180)

MODULE = "def f(x):\n    return x * 2\n"
FORGE = "from sandbox.runner import protocol as p\n"


def _reloading_slowly(marker: Path, sleep_s: float) -> str:
    """A correct module whose import takes sleep_s each time it is loaded again (a fresh child)."""
    return (
        f"import os\nif os.path.exists({str(marker)!r}):\n    time.sleep({sleep_s})\n"
        f"open({str(marker)!r}, 'w').close()\n" + MODULE
    )


# -- (a) a hostile child: what it writes must come out as frames the grader accepts -------------------------
def test_a_childs_load_report_cannot_smuggle_an_index_into_the_load_frame(host: HostRunner) -> None:
    """Report.from_child keeps `index` (0..999) for any report and Report.header() writes it: in a LOAD frame,
    whose strict model has no such field, the grader refuses the frame and loses the sandbox (two containers
    per submission). Before the contract, clean_header never copied `index` into a load header."""
    source = FORGE + "os.write(RES, p.encode(p.CHILD_LOAD, {'status': 'ok', 'index': 0}))\ntime.sleep(30)\n"
    done = host.run(job(source, "result = 1", time_s=0.3), wait_s=15)  # FrameError: "index: Extra inputs"
    assert done.load.header.status is Outcome.OK
    assert done.statuses() == ["timeout"]


def test_a_report_of_long_non_ascii_text_still_fits_the_graders_header_cap(host: HostRunner) -> None:
    """Texts are capped in characters (traceback 16 384) but the header in bytes (64 KiB), and the runner
    re-encodes with \\u escapes: 16 000 emoji (64 000 bytes as the child sent them) become 192 074 bytes,
    over the grader's cap, and the sandbox is lost. An exception whose message and traceback hold such
    text does the same without touching the pipe."""
    code = (
        FORGE + "import json\n"
        "header = {'status': 'error', 'index': INDEX, 'traceback': '\\U0001F600' * 16000}\n"
        "raw = json.dumps(header, ensure_ascii=False).encode()\n"
        "os.write(RES, p.PREFIX.pack(p.MAGIC, p.CHILD_RESULT, len(raw), 0) + raw); time.sleep(5)"
    )
    done = host.run(job(MODULE, code, "result = f(2)"), wait_s=15)  # was FrameError: "header of 192074 bytes"
    # The forged frame is that test's error, cut to fit (runner.py emit: protocol.fit_header); the job ends
    # with its DONE, nothing lost. (The child, still asleep, then costs the next test its time.)
    assert done.statuses()[0] == "error" and done.done is not None and done.done.header.clean  # type: ignore[union-attr]
    assert done.tests[0].header.traceback.startswith("\U0001f600")  # type: ignore[union-attr]


def test_a_childs_report_is_reread_field_by_field() -> None:
    """Defence that holds: statuses a child may not report, bools posing as ints, unknown names and fields."""
    report = Report.from_child({"status": "skipped", "index": True, "line": True, "x": 1}, CHILD_TEST_OUTCOMES)
    assert report.status is Outcome.ERROR and report.index is None and report.line is None
    report = Report.from_child({"status": "compile_error", "settings_changed": "grad mode"}, CHILD_TEST_OUTCOMES)
    assert report.status is Outcome.ERROR and report.settings_changed == []
    changed = ["grad mode", ["grad mode"], {"a": 1}, "grad mode"]
    header = {"status": "ok", "index": 999, "settings_changed": changed}
    report = Report.from_child(header, CHILD_TEST_OUTCOMES, indexed=True)
    assert report.header() == {"status": "ok", "settings_changed": ["grad mode"], "index": 999}
    assert Report.from_child({"status": "ok", "index": 1000}, CHILD_TEST_OUTCOMES, indexed=True).index is None


# -- the fresh child where a test's memory differs -----------------------------------------------------------
def test_results_are_not_held_back_while_a_fresh_child_loads(host: HostRunner, tmp_path: Path) -> None:
    """emit(hold=True) keeps the LOAD and a quick test's result back "never later than HOLD_S after the
    runner starts waiting"; but at a memory switch the runner waits for the fresh child (await_ready, the
    load) with no idle flush, so both wait for the whole reload (here 3 s)."""
    source = _reloading_slowly(tmp_path / "loaded", 3.0)
    os.write(host.to_w, encode_job(job(source, "result = 1", "result = 2", memory_mb=[4096, 16384])))
    sent = time.monotonic()
    load = host.next_frame(20)
    load_at = time.monotonic() - sent
    first = host.next_frame(20)
    first_at = time.monotonic() - sent
    assert load.kind == LOAD and first.kind == TEST
    assert host.next_frame(20).kind == TEST and host.next_frame(20).kind == DONE
    assert load_at < 1.5 and first_at < 1.5, (load_at, first_at)  # both came at about 3.0 s


def test_quick_tests_that_switch_memory_do_not_lose_a_correct_solutions_sandbox(
    host: HostRunner, tmp_path: Path
) -> None:
    """The consequence: quick tests whose memory alternates hold the LOAD back through every reload, and
    the grader waits for the LOAD only load_time_s + FRAME_SLACK_S (SandboxContainer.run_job), so a correct
    module whose import is slow but within its limit is a lost sandbox: "crashed the sandbox"."""
    load_time_s, reload_s, count = 2.0, 1.8, 8
    source = _reloading_slowly(tmp_path / "loaded", reload_s)
    codes = ["result = f(INDEX)"] * count
    memories = [4096 if index % 2 == 0 else 8192 for index in range(count)]
    os.write(host.to_w, encode_job(job(source, *codes, memory_mb=memories, load_time_s=load_time_s)))
    sent = time.monotonic()
    load = host.next_frame(60)
    load_at = time.monotonic() - sent
    frames = [host.next_frame(60) for _ in range(count + 1)]
    assert load.kind == LOAD and [frame.header.status for frame in frames[:-1]] == [Outcome.OK] * count  # type: ignore[union-attr]
    assert load_at < load_time_s + FRAME_SLACK_S, f"the LOAD came after {load_at:.1f} s"


def test_every_test_switching_memory_gets_a_child_each_and_one_load_report(host: HostRunner) -> None:
    """Defence that holds: no test run twice or lost, the LOAD once, each child confined to its test's memory,
    and a timeout in the middle skips the rest, across children."""
    code = "result = f'{JOB.memory_mb} {os.getpid()}'"
    done = host.run(job(MODULE, code, code, code, code, memory_mb=[4096, 8192, 4096, 16384]))
    assert done.statuses() == ["ok"] * 4
    memories, pids = zip(*(frame.body.decode().split() for frame in done.tests), strict=True)
    assert memories == ("4096", "8192", "4096", "16384") and len(set(pids)) == 4
    codes = ("result = 1", "time.sleep(30)", "result = 3", "result = 4")
    skipped = host.run(job(MODULE, *codes, memory_mb=[4096, 8192, 8192, 4096], time_s=0.3, skip_after_timeout=True))
    assert skipped.statuses() == ["ok", "timeout", "skipped", "skipped"]
    assert [frame.header.index for frame in skipped.tests] == [0, 1, 2, 3]  # type: ignore[union-attr]
    ran = host.run(job(MODULE, *codes, memory_mb=[4096, 8192, 8192, 4096], time_s=0.3))
    assert ran.statuses() == ["ok", "timeout", "ok", "ok"] and ran.done.header.clean  # type: ignore[union-attr]


def _limits(*times_and_memories: tuple[float, int]) -> tuple[JobTest, ...]:
    return tuple(
        JobTest(f"result = {index}", index, Limits(time_s=time_s, memory_mb=memory, output_kb=64))
        for index, (time_s, memory) in enumerate(times_and_memories)
    )


def _job(tests: tuple[JobTest, ...], load_time_s: float = 5.0) -> Job:
    return Job(source=MODULE, entry_points=("f",), tests=tests, load_time_s=load_time_s, max_result_bytes=1 << 20)


def test_a_childs_cpu_budget_counts_only_the_tests_it_may_run() -> None:
    """for_child sums every later test of the same memory, not the run this child serves (a fresh child
    follows the first test of another memory): the backstop grows with tests it never runs."""
    tests = _limits((1.0, 256), (1.0, 1024), (60.0, 256), (60.0, 256))
    child = for_child(_job(tests), 0)
    assert child.memory_mb == 256
    assert child.cpu_s <= 1.0 + 2 * 1.0 + 5.0 + 5, child.cpu_s  # 192.0: tests 3 and 4 counted


def test_a_childs_cpu_budget_covers_its_run() -> None:
    """Defence that holds: never less than the run's time, its load and the two spare test times."""
    tests = _limits((1.0, 256), (2.0, 256), (0.5, 1024), (3.0, 1024), (3.0, 256))
    job_ = _job(tests)
    assert for_child(job_, 0).cpu_s >= 3.0 + 2 * 2.0 + 5.0
    assert for_child(job_, 2).cpu_s >= 3.5 + 2 * 3.0 + 5.0 and for_child(job_, 2).memory_mb == 1024
    assert for_child(job_, 4).cpu_s >= 3.0 + 2 * 3.0 + 5.0


# -- (c) anyone feeding the runner a job ----------------------------------------------------------------------
def _payload_with(**limits: object) -> bytes:
    raw = json.loads(_job(_limits((1.0, 256))).payload())
    raw["tests"][0]["limits"].update(limits)
    return json.dumps(raw).encode()


@pytest.mark.parametrize("limits", [{"memory_mb": 10**400}, {"time_s": 10**400}, {"output_kb": 10**400}])
def test_a_job_with_a_huge_integer_limit_is_a_frame_error(limits: dict) -> None:
    """Job.parse promises FrameError "for anything else"; an integer too large for a float escapes as
    OverflowError (math.isfinite, float()), which parse does not catch."""
    with pytest.raises(FrameError):
        Job.parse(_payload_with(**limits))


def test_the_runner_says_a_huge_limit_is_a_malformed_job() -> None:
    """Through the runner: the OverflowError reaches serve() as "a fault of the runner's own"."""
    host = HostRunner()
    os.write(host.to_w, protocol.encode(protocol.JOB, {}, _payload_with(memory_mb=10**400)))
    with pytest.raises(EOFError):
        host.next_frame(10)
    assert "cannot read a job: FrameError" in host.close()


@pytest.mark.parametrize(
    "limits",
    [
        {"time_s": float("nan")},
        {"time_s": float("inf")},
        {"time_s": True},
        {"time_s": 0},
        {"time_s": 601},
        {"memory_mb": True},
        {"memory_mb": 0},
        {"memory_mb": 256.0},
        {"memory_mb": 2**64},
        {"output_kb": 0},
        {"output_kb": "64"},
    ],
)
def test_limits_out_of_bounds_never_reach_the_runner(limits: dict) -> None:
    """Defence that holds: made on the grader's side or parsed by the runner, each is refused."""
    base = {"time_s": 1.0, "memory_mb": 256, "output_kb": 64}
    with pytest.raises(FrameError):
        Limits(**{**base, **limits})
    with pytest.raises(FrameError):
        Job.parse(_payload_with(**limits))


# -- (b) a problem author --------------------------------------------------------------------------------------
REGISTRY = Registry(RunnerLimits(time_s=2.0, memory_mb=512, output_kb=64), max_memory_mb=4096)


def _problem(*test_limits: str, after_timeout: str = "skip") -> LoadedProblem:
    head = (
        "id: attack\ntitle: Attack\ndifficulty: easy\nstatement: s\nstarter_code: |\n  def f(x):\n      pass\n"
        f"entry_points: [f]\nafter_timeout: {after_timeout}\nreference: |\n  def f(x):\n      return x\ntests:\n"
    )
    tests = "".join(
        f"  - name: t{index}\n    limits: {{{limits}}}\n    code: |\n      return {{'x': f({index})}}\n"
        for index, limits in enumerate(test_limits)
    )
    return REGISTRY.make(REGISTRY.parse(head + tests, "attack.yaml"))


@pytest.mark.parametrize("time_s", ["0.0005", "1e-300"])
def test_a_problem_that_loads_builds_a_job(time_s: str) -> None:
    """The schema takes any time_s > 0; the contract's Limits wants at least 1 ms: a problem file (or an
    upload) with `limits: {time_s: 0.0005}` loads, and every grading of it fails in build_job (FrameError:
    an internal error for each submission). Before, the grader's JobSpec took gt=0 too."""
    try:
        problem = _problem(f"time_s: {time_s}", "")
    except ProblemError as refused:  # refused at load, saying why: fine
        assert "time_s" in str(refused)
        return
    build_job(problem, MODULE, Settings().sandbox)


@pytest.mark.parametrize("limits", ["time_s: .nan", "time_s: .inf", "time_s: 0", "memory_mb: 8192", "memory_mb: true"])
def test_a_problem_with_limits_out_of_bounds_is_refused_at_load(limits: str) -> None:
    """Defence that holds: NaN, inf, 0, a bool and more than the server gives are refused with their line."""
    with pytest.raises(ProblemError):
        _problem("", limits)


def test_the_whole_job_bound_covers_a_reload_at_every_memory_switch() -> None:
    """Holds in the working tree (pairwise reloads in job_bound_s); at HEAD 7a40103 the bound counted one
    load only, so N tests each switching memory could take N loads and lose a correct solution's sandbox."""
    settings = Settings()
    problem = _problem(*(f"memory_mb: {256 if index % 2 else 512}" for index in range(10)))
    worst = 10 * settings.sandbox.load_time_s + sum(limits.time_s for limits in problem.test_limits)
    assert job_bound_s(problem, settings.sandbox) >= worst


def test_the_whole_job_bound_covers_a_reload_after_every_test_that_ends_its_process() -> None:
    """With `after_timeout: run`, every test that times out (or crashes, or is OOM-killed) ends its child and
    the next loads the module again, each load allowed load_time_s by the runner; the trusted side gives each
    test 1 s beyond its time. A module whose import takes 9 s loses both containers ("crashed the sandbox")
    instead of its time-limit verdict, and each such submission holds two containers for the whole bound."""
    settings = Settings()
    problem = _problem(*("time_s: 0.5" for _ in range(10)), after_timeout="run")
    # The runner's own worst case: the first load, every reload within the job's reload budget (the tests
    # left past it are errors), every test's time.
    job = build_job(problem, MODULE, settings.sandbox)
    worst = settings.sandbox.load_time_s + job.reload_budget_s() + sum(limits.time_s for limits in problem.test_limits)
    assert job_bound_s(problem, settings.sandbox) >= worst, (job_bound_s(problem, settings.sandbox), worst)


@pytest.mark.docker
def test_in_the_real_sandbox_an_exception_in_emoji_is_that_tests_error_not_a_lost_sandbox(tmp_path: Path) -> None:
    """Defence that holds on the honest path: through the real child (execute.py) an exception of 20 000 emoji
    stays under the 64 KiB header cap (the traceback does not repeat the message); only a forged report
    (above) reaches it."""
    from grader.grading.execution import run_module
    from grader.problems.check import ProblemChecker

    problem = _problem("", "")
    source = "def f(x):\n    if x == 0:\n        raise ValueError('\\U0001F600' * 20000)\n    return x\n"
    settings = Settings(data_dir=tmp_path)
    with ProblemChecker(settings.sandbox, settings.limits, seeds=1) as checker:
        run = run_module(checker.sandboxes(), problem, source, checker.sandbox, rules=True)
    assert not run.lost, run.lost
    assert run.load is not None and run.load.status is Outcome.OK
    assert [run.tests[i].header.status for i in (0, 1)] == [Outcome.ERROR, Outcome.OK]
