"""One protocol, two sides: the grader's typed definition (grader/sandboxes/protocol.py) and the runner's
stdlib twin (sandbox/runner/protocol.py) must agree on every kind, word and bound, and parse hostile
JSON the same way: by measuring its nesting first, never by recursing into it."""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest

from grader.sandboxes import protocol as grader_side
from grader.sandboxes.protocol import JobLimits, JobSpec, JobTest, Outcome

RUNNER_PROTOCOL = Path(__file__).resolve().parents[2] / "sandbox" / "runner" / "protocol.py"
spec = importlib.util.spec_from_file_location("runner_protocol", RUNNER_PROTOCOL)
assert spec is not None and spec.loader is not None
runner_side = importlib.util.module_from_spec(spec)
spec.loader.exec_module(runner_side)

SHARED_CONSTANTS = [
    "MAGIC",
    "JOB",
    "HELLO",
    "LOAD",
    "TEST",
    "DONE",
    "MAX_HEADER_BYTES",
    "MAX_HEADER_DEPTH",
    "MAX_JOB_BYTES",
    "MAX_JOB_DEPTH",
    "MAX_TESTS",
    "MAX_MESSAGE",
    "MAX_TRACEBACK",
    "MAX_OUTPUT",
    "MAX_ERROR_TYPE",
    "MAX_LINE",
    "MAX_TIME_MS",
    "MAX_MEMORY_MB",
    "MAX_SEED",
    "TRUNCATED",
    "MAX_VALUE_DEPTH",
    "MAX_VALUE_NODES",
    "MAX_STR",
    "MAX_INT_DIGITS",
    "MAX_RANK",
    "MAX_DIM",
    "MAX_ELEMENTS",
    "MAX_MANIFEST_DEPTH",
    "WIRE_DTYPES",
    "SETTING_NAMES",
]


@pytest.mark.parametrize("name", SHARED_CONSTANTS)
def test_both_sides_agree_on(name: str) -> None:
    assert getattr(grader_side, name) == getattr(runner_side, name)


def test_both_sides_agree_on_the_outcome_words() -> None:
    assert tuple(o.value for o in grader_side.LOAD_OUTCOMES) == runner_side.LOAD_STATUSES
    # A test's outcome is what a child reports, or the runner's own "skipped" (after a timeout).
    assert tuple(o.value for o in grader_side.TEST_OUTCOMES) == (*runner_side.TEST_STATUSES, runner_side.SKIPPED)
    assert {o.value for o in Outcome} == {*runner_side.LOAD_STATUSES, runner_side.SKIPPED}


def test_the_runner_reads_the_job_the_grader_writes() -> None:
    job = JobSpec(
        source="def f():\n    return 'é'\n",
        entry_points=["f"],
        limits=JobLimits(time_s=2, memory_mb=512, output_kb=64),
        load_time_s=10,
        max_result_bytes=1 << 20,
        tests=[JobTest(code="return f()", seed=0), JobTest(code="return 1", seed=grader_side.MAX_SEED)],
    )
    raw = runner_side.loads_bounded(job.payload(), runner_side.MAX_JOB_DEPTH)
    assert raw == json.loads(job.payload())
    assert raw["tests"][1]["seed"] == 2**63 - 1


NESTED = [b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 5_000 + b"1" + b"}" * 5_000, b"[" * 100]


@pytest.mark.parametrize("raw", NESTED, ids=["deep-lists", "deep-objects", "unclosed"])
def test_deep_nesting_is_refused_on_both_sides_without_recursing(raw: bytes) -> None:
    with pytest.raises(grader_side.ProtocolViolation):
        grader_side.loads_bounded(raw, 4)
    with pytest.raises(runner_side.FrameError):
        runner_side.loads_bounded(raw, 4)


@pytest.mark.parametrize(
    ("raw", "depth"),
    [(b'{"a": "[[[[[[[[[[", "b": "\\\\\\"[["}', 1), (b"[[1], [2, [3]]]", 3), (b'"]]]]"', 0), (b"{}", 1)],
)
def test_brackets_inside_strings_do_not_count(raw: bytes, depth: int) -> None:
    assert grader_side.json_depth(raw, 1000) == depth == runner_side.json_depth(raw, 1000)


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
        assert grader_side.json_depth(raw, 1 << 16) == _depth(value) == runner_side.json_depth(raw, 1 << 16), raw


@pytest.mark.parametrize(
    "raw", [b"\xff", b"{", b"1" * 5000, b'{"a": NaN', b"\x00"], ids=["utf8", "open", "huge-int", "nan", "nul"]
)
def test_anything_malformed_is_a_protocol_error_on_both_sides(raw: bytes) -> None:
    with pytest.raises(grader_side.ProtocolViolation):
        grader_side.loads_bounded(raw, 4)
    with pytest.raises(runner_side.FrameError):
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
def test_both_sides_cut_and_clean_text_alike(text: str, limit: int, expected: str) -> None:
    assert grader_side.bounded_text(text, limit) == runner_side.truncate(text, limit)
    cleaned = grader_side.bounded_text(text, limit)
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
        except (runner_side.FrameError, OverflowError):
            pass


def test_the_settings_put_back_are_the_ones_both_sides_name() -> None:
    """torchstate.py (which needs torch, so is read here as text) puts back exactly the named settings."""
    import ast

    source = (RUNNER_PROTOCOL.parent / "torchstate.py").read_text()
    table = next(
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "SETTINGS"
    )
    assert isinstance(table, ast.Dict)
    assert tuple(key.value for key in table.keys) == grader_side.SETTING_NAMES  # type: ignore[union-attr]
