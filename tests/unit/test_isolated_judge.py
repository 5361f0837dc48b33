"""Judging in processes of their own (grader/grading/isolated.py): what a sandbox returned is decoded and
compared, and a check's expressions evaluated, in a process whose memory and CPU the kernel bounds. Real
processes, no Docker: values are built byte by byte as a sandbox would send them (tests/unit/conftest.py)."""

from __future__ import annotations

import resource
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from grader.containers import values as trusted_values
from grader.containers.protocol import LoadHeader, Outcome, TestHeader
from grader.grading import isolated, judge_process
from grader.grading.checkers import get
from grader.grading.execution import ModuleRun, TestRun
from grader.grading.expected import Expected
from grader.grading.isolated import IsolatedJudge, JudgeUnavailable
from grader.grading.judge import LOCAL, judge_module
from grader.grading.verdict import Status, TestStatus
from tests.unit.conftest import _make_body


@dataclass
class Case:
    name: str
    check: dict[str, Any] = field(default_factory=dict)
    checker: str = "tolerance"
    visible: bool = True
    weight: float = 1.0
    code: str = "return {}"
    seed: str | None = None


@dataclass
class Pitfall:
    name: str
    hint: str
    code: str = ""


@dataclass
class Problem:
    tests: list[Case]
    pitfalls: list[Pitfall] = field(default_factory=list)
    id: str = "p"
    version: str = "1"


def body(**arrays: np.ndarray) -> bytes:
    """A dict of tensors, as a sandbox sends it."""
    items = [[key, {"t": "tensor", "dtype": str(a.dtype), "shape": list(a.shape)}] for key, a in arrays.items()]
    return _make_body({"t": "dict", "items": items}, *arrays.values())


def returned(index: int, data: bytes) -> TestRun:
    return TestRun(TestHeader(index=index, status=Outcome.OK, time_ms=1.5), data)


def expect(key: str, text: str) -> dict[str, Any]:
    return get("tolerance").parse({key: {"expect": text}})


@pytest.fixture
def judge() -> Iterator[IsolatedJudge]:
    judge = IsolatedJudge(memory_mb=256, cpu_s=2, size=2)
    yield judge
    judge.close()


def _peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


WEIGHT = np.random.default_rng(0).normal(size=(12, 4000)).astype("f4")
TOKENS = np.array([3, 0, 7], dtype=np.int64)


def test_a_value_judged_in_a_process_gets_the_result_it_gets_here(judge: IsolatedJudge) -> None:
    problem = Problem([Case("scaled lookup", check=expect("out", "weight[tokens] * 2")), Case("plain")])
    right = body(weight=WEIGHT, tokens=TOKENS, out=WEIGHT[TOKENS] * 2)
    wrong = body(weight=WEIGHT, tokens=TOKENS, out=WEIGHT[TOKENS] * 3)
    expected = Expected([right, body(x=np.arange(4.0))], [])
    for index, data in ((0, right), (0, wrong), (1, body(x=np.arange(4.0))), (1, body(x=np.arange(5.0)))):
        mine = judge.test(problem, expected, index, returned(index, data))
        here = LOCAL.test(problem, expected, index, returned(index, data))
        assert mine == here
    assert judge.test(problem, expected, 0, returned(0, wrong)).status == TestStatus.FAILED
    assert judge.test(problem, expected, 0, returned(0, right)).time_ms == 1.5


def test_tests_that_landed_together_get_in_one_request_what_each_gets_alone(judge: IsolatedJudge) -> None:
    problem = Problem([Case("scaled lookup", check=expect("out", "weight[tokens] * 2")), Case("plain"), Case("c")])
    right = body(weight=WEIGHT, tokens=TOKENS, out=WEIGHT[TOKENS] * 2)
    wrong = body(weight=WEIGHT, tokens=TOKENS, out=WEIGHT[TOKENS] * 3)
    expected = Expected([right, body(x=np.arange(4.0)), body(x=np.arange(2.0))], [])
    crashed = TestRun(TestHeader(index=2, status=Outcome.ERROR, time_ms=2.0, message="boom"))
    for runs in (
        [(0, returned(0, right)), (1, returned(1, body(x=np.arange(4.0)))), (2, crashed)],
        [(0, returned(0, wrong)), (1, returned(1, body(x=np.arange(5.0)))), (2, returned(2, body(x=np.arange(2.0))))],
    ):
        together = judge.tests(problem, expected, runs)
        assert together == [LOCAL.test(problem, expected, index, run) for index, run in runs]
        assert [result.index for result in together] == [index for index, _ in runs]
    statuses = [r.status for r in judge.tests(problem, expected, [(0, returned(0, wrong)), (2, crashed)])]
    assert statuses == [TestStatus.FAILED, TestStatus.ERROR]


def test_a_value_too_much_to_judge_among_others_is_its_own_tests_error_only() -> None:
    """One request judges the tests that landed together; when one of them ends the process, each is judged
    again alone, so only that test is charged and the others get their own results."""
    judge = IsolatedJudge(memory_mb=64, cpu_s=5, size=1)
    try:
        big = np.zeros(6_000_000, dtype=np.float32)  # float64 copies of both sides: more than 64 MB
        got = big.copy()
        got[-1] = 1.0
        problem = Problem([Case("small"), Case("large"), Case("small too")])
        small = body(x=np.arange(3.0))
        expected = Expected([small, body(x=big), small], [])
        runs = [(0, returned(0, small)), (1, returned(1, body(x=got))), (2, returned(2, body(x=np.arange(4.0))))]
        results = judge.tests(problem, expected, runs)
        assert [result.status for result in results] == [TestStatus.PASSED, TestStatus.ERROR, TestStatus.FAILED]
        assert "64 MB of memory" in (results[1].message or "")
        assert judge.status()["limits_hit"] == 1
    finally:
        judge.close()


def test_a_value_whose_expression_outgrows_the_process_is_that_tests_error() -> None:
    """The issue's blow-up: `weight[tokens]` on 400 KB of returned data. Past the guards (a 9.6 million-element
    lookup, under their 10 million) the process's own memory stops it (64 MB here: the lookup alone is 38 MB,
    and times 2 another 38); this process does not grow, and the next value is judged as ever."""
    judge = IsolatedJudge(memory_mb=64, cpu_s=5, size=1)
    try:
        tokens = np.zeros(50_000, dtype=np.int64)  # 400 KB
        weight = WEIGHT[:, :192]
        problem = Problem([Case("scaled lookup", check=expect("out", "weight[tokens] * 2"))])
        data = body(weight=weight, tokens=tokens, out=weight[:1] * 2)
        before = _peak_kib()
        result = judge.test(problem, Expected([data], []), 0, returned(0, data))
        assert result.status == TestStatus.ERROR
        assert result.message == "judging what this test returned took more than its 64 MB of memory"
        assert _peak_kib() - before < 30 * 1024
        fine = body(weight=weight, tokens=TOKENS, out=weight[TOKENS] * 2)
        assert judge.test(problem, Expected([fine], []), 0, returned(0, fine)).status == TestStatus.PASSED
    finally:
        judge.close()


def test_a_comparison_that_outgrows_the_process_is_that_tests_error() -> None:
    """No expression at all: two legitimately large arrays compared with a tolerance need float64 copies,
    more than a process of 64 MB has. The kernel's limit holds where no guard is written."""
    judge = IsolatedJudge(memory_mb=64, cpu_s=5, size=1)
    try:
        big = np.zeros(6_000_000, dtype=np.float32)  # 24 MB, each side; float64 copies are 48 MB each
        got = big.copy()
        got[-1] = 1.0
        problem = Problem([Case("large")])
        result = judge.test(problem, Expected([body(x=big)], []), 0, returned(0, body(x=got)))
        assert result.status == TestStatus.ERROR
        assert "64 MB of memory" in (result.message or "")
    finally:
        judge.close()


def test_a_value_that_takes_too_much_cpu_ends_its_process_and_is_that_tests_error() -> None:
    judge = IsolatedJudge(memory_mb=512, cpu_s=1, size=1)
    try:
        flat = np.random.default_rng(1).normal(size=900_000)
        # Within every guard (900,000 items), but some seconds of CPU: a sort of a million Python floats, 30 times.
        text = "sum(len(sorted(flat.tolist())) for k in range(30)) > 0 and flat"
        problem = Problem([Case("slow", check=expect("flat", text))])
        data = body(flat=flat)
        started = time.monotonic()
        result = judge.test(problem, Expected([data], []), 0, returned(0, data))
        assert result.status == TestStatus.ERROR
        assert result.message == "judging what this test returned took more than 1 s of CPU"
        assert time.monotonic() - started < judge.timeout_s
        assert judge.status()["limits_hit"] == 1
        quick = body(flat=flat[:3])
        assert judge.test(problem, Expected([quick], []), 0, returned(0, quick)).status == TestStatus.PASSED
    finally:
        judge.close()


def test_a_malformed_value_is_that_tests_error(judge: IsolatedJudge) -> None:
    problem = Problem([Case("t")])
    forged = _make_body({"t": "tensor", "dtype": "float32", "shape": [0, 2**31 - 1, 2**31 - 1]})
    result = judge.test(problem, Expected([body(x=np.arange(3.0))], []), 0, returned(0, forged))
    assert result.status == TestStatus.ERROR
    assert (result.message or "").startswith("the sandbox returned a malformed result")


def test_the_service_never_decodes_what_a_submission_returned(
    judge: IsolatedJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole verdict, hint included, with decoding made impossible in this process: only the judge
    processes (which import their own) decode."""

    def refuse(_body: bytes) -> Any:
        raise AssertionError("a value was decoded in the service")

    for module in (trusted_values, isolated, __import__("grader.grading.expected", fromlist=["x"])):
        if hasattr(module, "decode_value"):
            monkeypatch.setattr(module, "decode_value", refuse)
    monkeypatch.setattr("grader.grading.execution.decode_value", refuse)
    problem = Problem([Case("one"), Case("two", visible=False)], [Pitfall("doubled", "You doubled it.")])
    reference = [body(x=np.arange(3.0)), body(x=np.arange(2.0))]
    pitfall = [body(x=np.arange(3.0) * 2), body(x=np.arange(2.0) * 2)]
    submission = ModuleRun(
        load=LoadHeader(status=Outcome.OK),
        tests={0: returned(0, pitfall[0]), 1: returned(1, pitfall[1])},
    )
    verdict = judge_module(problem, Expected(reference, [pitfall]), submission, judge=judge)  # type: ignore[arg-type]
    assert verdict.status == Status.WRONG_ANSWER
    assert verdict.hint == "You doubled it."
    assert verdict.tests[0].details is not None and verdict.tests[0].details["reason"] == "values differ"
    assert judge.describe([reference[0], None])[0] == {
        "x": {"type": "tensor", "shape": [3], "dtype": "float64", "sample": [0.0, 1.0, 2.0]}
    }


def test_processes_are_bounded_and_waiting_for_one_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolated, "WAIT_S", 0.5)
    judge = IsolatedJudge(memory_mb=128, cpu_s=5, size=1)
    problem = Problem([Case("t")])
    data = body(x=np.arange(3.0))
    try:
        held = threading.Event()
        release = threading.Event()

        def hold() -> None:
            with judge._process():
                held.set()
                release.wait(5)

        holder = threading.Thread(target=hold)
        holder.start()
        assert held.wait(5)
        with pytest.raises(JudgeUnavailable):
            judge.test(problem, Expected([data], []), 0, returned(0, data))
        release.set()
        holder.join()
        assert judge.test(problem, Expected([data], []), 0, returned(0, data)).status == TestStatus.PASSED
        assert judge.status()["started"] == 1
    finally:
        judge.close()
    with pytest.raises(JudgeUnavailable):
        judge.test(problem, Expected([data], []), 0, returned(0, data))


@pytest.mark.parametrize(
    "reply",
    [
        b"not json",
        b"[" * 100_000,
        b'{"status": "passed"}',  # a process may say failed or error; passing is {}
        b'{"status": "failed", "message": 5}',
        b'{"status": "failed", "details": [1]}',
        b'{"status": "failed", "extra": 1}',
        b'{"status": "failed", "message": "' + b"m" * (2 * 1024 * 1024) + b'"}',
    ],
    ids=["not json", "deep", "passed", "message type", "details type", "extra field", "too large"],
)
def test_what_a_judge_process_answers_is_read_as_hostile(reply: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    """A judge process that went wrong (its data is a submission's) cannot make a test pass, nor grow this one."""
    judge = IsolatedJudge(memory_mb=128, cpu_s=5, size=1)
    monkeypatch.setattr(isolated.JudgeProcess, "ask", lambda self, request, timeout: _answer_as(self, reply, timeout))
    try:
        data = body(x=np.arange(3.0))
        result = judge.test(Problem([Case("t")]), Expected([data], []), 0, returned(0, data))
        assert result.status == TestStatus.ERROR
        assert len(result.message or "") < 200
    finally:
        judge.close()


def _answer_as(process: isolated.JudgeProcess, reply: bytes, timeout: float) -> dict[str, Any]:
    """JudgeProcess.ask's reading of `reply`, as if the process had sent it."""
    if len(reply) > judge_process.MAX_ANSWER_BYTES:
        process.kill()
        raise isolated.JudgeLimit("an answer that is not one")
    try:
        answer = judge_process.loads_bounded(reply, judge_process.MAX_ANSWER_DEPTH)
    except judge_process.FrameError:
        answer = None
    if not isinstance(answer, dict):
        process.kill()
        raise isolated.JudgeLimit("an answer that is not one")
    return answer
