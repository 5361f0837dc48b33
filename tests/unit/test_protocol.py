"""The one contract (sandbox/runner/protocol.py, messages.py, bench_job.py): the grader uses it, not a copy; a job is
checked when made and when read; a child's report is re-read within its bounds; hostile JSON is parsed by
measuring its nesting first, never by recursing into it."""

from __future__ import annotations

import ast
import json
import random
from pathlib import Path

import pytest

from grader.containers import protocol as grader_side
from grader.grading.execution import build_job
from sandbox.runner import bench_job, messages
from sandbox.runner import protocol as runner_side
from sandbox.runner.child_job import ChildJob, for_child
from sandbox.runner.messages import Job, JobTest, Limits, Report
from sandbox.runner.protocol import CHILD_TEST_OUTCOMES, LOAD_OUTCOMES, TEST_OUTCOMES, FrameError, Outcome

RUNNER = Path(runner_side.__file__).resolve().parent


def test_the_grader_uses_the_contract_itself_not_a_copy() -> None:
    """One definition: every kind, word and bound the grader names is the contract's own object."""
    for name in grader_side.__all__:
        home = next(module for module in (runner_side, messages, bench_job) if hasattr(module, name))
        assert getattr(grader_side, name) is getattr(home, name), name
    for constant in ("MAX_", "MIN_", "WIRE_", "SETTING_"):
        assert not any(
            isinstance(node, ast.Assign) and any(getattr(t, "id", "").startswith(constant) for t in node.targets)
            for node in ast.parse(Path(grader_side.__file__).read_text()).body
        ), f"grader/containers/protocol.py defines a {constant}* bound of its own"


def test_the_outcome_words() -> None:
    assert Outcome.SKIPPED not in LOAD_OUTCOMES and Outcome.COMPILE_ERROR in LOAD_OUTCOMES
    assert TEST_OUTCOMES == (*CHILD_TEST_OUTCOMES, Outcome.SKIPPED)
    assert Outcome.COMPILE_ERROR not in TEST_OUTCOMES
    assert json.dumps({"status": Outcome.TIMEOUT}) == '{"status": "timeout"}'


def _job(**changes: object) -> Job:
    limits = Limits(time_s=2, memory_mb=512, output_kb=64)
    fields: dict = {
        "source": "def f():\n    return 'é'\n",
        "entry_points": ("f",),
        "load_time_s": 10.0,
        "max_result_bytes": 1 << 20,
        "tests": (JobTest("return f()", 0, limits), JobTest("return 1", runner_side.MAX_SEED, limits)),
    }
    return Job(**{**fields, **changes})


def test_the_runner_reads_the_job_the_grader_writes() -> None:
    job = _job(helpers="K = 3", skip_after_timeout=True)
    assert Job.parse(job.payload()) == job
    assert Job.parse(job.payload()).tests[1].seed == 2**63 - 1


def test_the_grader_builds_its_jobs_from_the_contract(tmp_path: Path) -> None:
    from grader.config import Settings
    from grader.problems.registry import Registry
    from sandbox.runner.messages import Limits as RunnerLimits

    registry = Registry(RunnerLimits(time_s=2.0, memory_mb=512, output_kb=64))
    registry.load_dir(Path(__file__).resolve().parents[2] / "problems")
    problem = registry.get("embedding-layer")
    job = build_job(problem, "def f(): pass", Settings(data_dir=tmp_path).sandbox, seed=5)
    assert type(job) is Job and Job.parse(job.payload()) == job
    assert all(test.limits.time_s == problem.limits.time_s for test in job.tests)


@pytest.mark.parametrize(
    "change",
    [
        {"entry_points": ()},
        {"entry_points": (1,)},
        {"tests": ()},
        {"source": b"x"},
        {"load_time_s": float("nan")},
        {"load_time_s": 0},
        {"max_result_bytes": 10},
        {"max_result_bytes": True},
        {"skip_after_timeout": "yes"},
    ],
    ids=repr,
)
def test_a_job_out_of_its_bounds_cannot_be_made(change: dict) -> None:
    with pytest.raises(FrameError):
        _job(**change)


@pytest.mark.parametrize(
    "limits",
    [(0, 512, 64), (601, 512, 64), (float("inf"), 512, 64), (2, 8, 64), (2, 512.0, 64), (2, 512, 0), (2, True, 64)],
)
def test_limits_out_of_their_bounds_cannot_be_made(limits: tuple) -> None:
    with pytest.raises(FrameError):
        Limits(*limits)


@pytest.mark.parametrize(
    "body",
    [
        b"[]",
        b'{"source": "x"}',
        b'{"source": "x", "entry_points": ["f"], "tests": [{"code": "", "seed": -1, "limits": {}}]}',
        json.dumps({**json.loads(_job().payload()), "extra": 1}).encode(),
        json.dumps({**json.loads(_job().payload()), "tests": [{"code": "", "seed": 0}]}).encode(),
        json.dumps({**json.loads(_job().payload()), "load_time_s": 1e999}).encode(),
        b'{"tests": ' + b"[" * 100 + b"]" * 100 + b"}",
    ],
    ids=["list", "partial", "bad-test", "extra-key", "no-limits", "infinite", "deep"],
)
def test_the_runner_refuses_a_malformed_job(body: bytes) -> None:
    with pytest.raises(FrameError):
        Job.parse(body)


def test_a_child_gets_the_memory_of_the_tests_it_runs() -> None:
    small, large = Limits(1, 256, 64), Limits(3, 1024, 64)
    job = _job(tests=(JobTest("1", 0, small), JobTest("2", 0, small), JobTest("3", 0, large)))
    first, last = for_child(job, 0), for_child(job, 2)
    assert (first.memory_mb, last.memory_mb) == (256, 1024)
    assert first.cpu_s >= 1 + 1 + job.load_time_s and last.cpu_s >= 3 + job.load_time_s
    assert ChildJob.parse(first.payload()).memory_mb == 256
    assert "code" not in first.payload().decode()  # a child gets each test's code only when it runs it
    with pytest.raises(FrameError):
        ChildJob.parse(json.dumps({**json.loads(first.payload()), "memory_mb": -1}).encode())


@pytest.mark.parametrize(
    "header",
    [
        {},
        {"index": -1, "seed": 0, "code_bytes": 0},
        {"index": 0, "seed": 2**64, "code_bytes": 0},
        {"index": "0", "seed": 0, "code_bytes": 0},
        {"index": 0, "seed": 0},
        {"index": 0, "seed": 0, "code_bytes": -1},
        {"index": 0, "seed": 0, "code_bytes": 1.5},
    ],
)
def test_a_malformed_test_command_is_refused(header: dict) -> None:
    with pytest.raises(FrameError):
        messages.TestCommand.parse(header)


def test_a_childs_report_is_reread_within_its_bounds() -> None:
    hostile = {
        "status": "skipped",  # not a child's word
        "message": "m" * 100_000,
        "traceback": 7,
        "line": -3,
        "settings_changed": ["grad mode", "rm -rf", "grad mode"],
        "index": 10**9,
        "extra": "dropped",
    }
    report = Report.from_child(hostile, CHILD_TEST_OUTCOMES)
    assert report.status is Outcome.ERROR
    assert len(report.message or "") == runner_side.MAX_MESSAGE and report.traceback is None
    assert report.line is None and report.index is None and report.settings_changed == ["grad mode"]
    assert set(report.header()) == {"status", "message", "settings_changed"}
    ok = Report.from_child({"status": "ok", "index": 3, "line": 4}, CHILD_TEST_OUTCOMES, indexed=True)
    assert Report.from_child({"status": "ok", "index": 3}, LOAD_OUTCOMES).index is None  # never a load's
    assert (ok.status, ok.index, ok.line) == (Outcome.OK, 3, 4)
    assert Report.from_child({"status": "compile_error"}, LOAD_OUTCOMES).status is Outcome.COMPILE_ERROR
    assert Report.from_child({"status": "compile_error"}, CHILD_TEST_OUTCOMES).status is Outcome.ERROR


NESTED = [b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 5_000 + b"1" + b"}" * 5_000, b"[" * 100]


@pytest.mark.parametrize("raw", NESTED, ids=["deep-lists", "deep-objects", "unclosed"])
def test_deep_nesting_is_refused_without_recursing(raw: bytes) -> None:
    with pytest.raises(FrameError):
        runner_side.loads_bounded(raw, 4)


@pytest.mark.parametrize(
    ("raw", "depth"),
    [(b'{"a": "[[[[[[[[[[", "b": "\\\\\\"[["}', 1), (b"[[1], [2, [3]]]", 3), (b'"]]]]"', 0), (b"{}", 1)],
)
def test_brackets_inside_strings_do_not_count(raw: bytes, depth: int) -> None:
    assert runner_side.json_depth(raw, 1000) == depth


def _random_json(rnd: random.Random, depth: int) -> object:
    """A JSON value nesting at most `depth`, with strings full of brackets, quotes and escapes."""
    if depth == 0 or rnd.random() < 0.3:
        return "".join(rnd.choice('[]{}"\\ab\n\u00e9') for _ in range(rnd.randint(0, 8)))
    if rnd.random() < 0.5:
        return [_random_json(rnd, depth - 1) for _ in range(rnd.randint(0, 3))]
    return {_random_json(rnd, 0): _random_json(rnd, depth - 1) for _ in range(rnd.randint(0, 3))}  # type: ignore[misc]


def _depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


def test_the_depth_found_without_parsing_is_the_parsed_depth() -> None:
    rnd = random.Random(7)
    for _ in range(2000):
        value = _random_json(rnd, 6)
        raw = json.dumps(value, ensure_ascii=rnd.random() < 0.5).encode()
        assert runner_side.json_depth(raw, 1 << 16) == _depth(value), raw


@pytest.mark.parametrize(
    "raw", [b"\xff", b"{", b"1" * 5000, b'{"a": NaN', b"\x00"], ids=["utf8", "open", "huge-int", "nan", "nul"]
)
def test_anything_malformed_is_a_frame_error(raw: bytes) -> None:
    with pytest.raises(FrameError):
        runner_side.loads_bounded(raw, 4)


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("short", 10, "short"),
        ("x" * 100, 20, "x" * (20 - len(grader_side.TRUNCATED)) + grader_side.TRUNCATED),
        ("a\x00b", 10, "a\ufffdb"),
        ("lone \ud800 surrogate", 100, "lone \ufffd surrogate"),
        ("pair \U0001f600 kept", 100, "pair \U0001f600 kept"),
    ],
)
def test_text_is_cut_and_cleaned(text: str, limit: int, expected: str) -> None:
    cleaned = runner_side.bounded_text(text, limit)
    assert len(cleaned) <= limit
    cleaned.encode("utf-8")  # always encodable
    if "\ud800" not in text:
        assert cleaned == expected
    else:
        assert "\ud800" not in cleaned and cleaned.startswith("lone ") and cleaned.endswith(" surrogate")


def test_the_runners_reader_survives_every_frame_a_child_can_write() -> None:
    """Whatever bytes arrive, the runner's incremental reader returns frames or raises its two documented
    errors; anything else would end the runner."""
    prefix = runner_side.PREFIX
    cases = [
        prefix.pack(b"TJ", b"r", 200_000, 0) + b"[" * 100_000 + b"]" * 100_000,
        prefix.pack(b"TJ", b"r", 4, 0) + b"\xff\xfe\xfd\xfc",
        prefix.pack(b"TJ", b"r", 9, 0) + b'"string"',
        prefix.pack(b"XX", b"r", 0, 0),
        prefix.pack(b"TJ", b"r", 2, 1 << 30),
        prefix.pack(b"TJ", b"r", 12, 0) + b'{"x": 1e999}',
    ]
    for data in cases:
        reader = runner_side.FrameReader(max_body=1024)
        try:
            reader.feed(data)
        except (FrameError, OverflowError):
            pass


def test_the_settings_put_back_are_the_ones_the_contract_names() -> None:
    """torchstate.py (which needs torch, so is read here as text) puts back exactly the named settings."""
    source = (RUNNER / "torchstate.py").read_text()
    table = next(
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "SETTINGS"
    )
    assert isinstance(table, ast.Dict)
    assert tuple(key.value for key in table.keys) == grader_side.SETTING_NAMES  # type: ignore[union-attr]
