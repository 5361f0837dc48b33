"""Tests that land together are judged in one request to a judge process (grader/grading/isolated.py
`IsolatedJudge.tests`, op "tests" in isolated_worker.py), each again alone when that request fails. Attacked
here with hostile returned values, in real judge processes (no Docker: values are built byte by byte as a
sandbox sends them, tests/unit/conftest.py).

What must hold:
- every test gets, in order and under its own index, the result it gets alone, across chunks of BATCH and
  with tests that returned nothing among them; a value that ends the process is charged to its test only;
- the answers of a full batch of hostile failures (keys of astral characters, six-fold in JSON) fit in one
  answer: nothing is killed for the batch's size;
- one request holds a judge process no longer than one test's request may (one CPU budget: a white-box review
  found a request given a budget per test, BATCH times one, while anyone waiting for a process gives up after
  WAIT_S);
- a value that ends the process late in a batch does not have the tests judged before it judged twice (the
  same review: they were, all of them, doubling what a submission's judging costs)."""

from __future__ import annotations

import json
import resource
import time
from typing import Any

import numpy as np
import pytest

from grader.containers.protocol import Outcome, TestHeader
from grader.grading import isolated, isolated_worker, judge_process
from grader.grading.execution import TestRun
from grader.grading.expected import Expected
from grader.grading.isolated import IsolatedJudge
from grader.grading.judge import LOCAL
from grader.grading.verdict import TestStatus
from tests.unit.conftest import _make_body
from tests.unit.test_isolated_judge import Case, Problem, body, expect, returned

FLAT = np.random.default_rng(1).normal(size=100_000)


def _slow(rounds: int) -> str:
    """An `expect:` whose evaluation costs CPU in proportion to `rounds` (about 50 ms each here), within guards."""
    return f"sum(len(sorted(flat.tolist())) for k in range({rounds})) > 0 and flat"


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


class Asks:
    """Records every request a judge process is asked: (op, number of items, seconds it took)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[tuple[str, int, float]] = []
        original = isolated.JudgeProcess.ask

        def ask(process: isolated.JudgeProcess, request: bytes, timeout_s: float) -> dict[str, Any]:
            op, _, _, args = isolated.judge_wire.decode(request)
            started = time.monotonic()
            try:
                return original(process, request, timeout_s)
            finally:
                self.seen.append((op, len(args[0]) if op == "tests" else 1, time.monotonic() - started))

        monkeypatch.setattr(isolated.JudgeProcess, "ask", ask)


def test_a_batch_gets_what_each_test_gets_alone_across_chunks_gaps_and_silent_tests() -> None:
    count = isolated.BATCH + 9  # two chunks
    problem = Problem([Case(f"t{i}") for i in range(count + 3)])
    expected = Expected([body(x=np.arange(float(i % 5 + 1))) for i in range(count + 3)], [])
    forged = _make_body({"t": "tensor", "dtype": "float32", "shape": [0, 2**31 - 1, 2**31 - 1]})
    runs: list[tuple[int, TestRun]] = []
    for i in range(0, count + 3):
        if i in (4, 40):  # gaps: these indices never landed
            continue
        kind = i % 4
        if kind == 0:
            run = returned(i, body(x=np.arange(float(i % 5 + 1))))  # right
        elif kind == 1:
            run = returned(i, body(x=np.arange(float(i % 5 + 2))))  # wrong shape
        elif kind == 2:
            run = returned(i, forged)  # malformed
        else:
            run = TestRun(TestHeader(index=i, status=Outcome.TIMEOUT, time_ms=9.0, message="slow"))
        runs.append((i, run))
    judge = IsolatedJudge(memory_mb=256, cpu_s=5, size=1)
    try:
        together = judge.tests(problem, expected, runs)
        assert [result.index for result in together] == [index for index, _ in runs]
        assert together == [LOCAL.test(problem, expected, index, run) for index, run in runs]
        assert judge.status()["started"] == 1 and judge.status()["limits_hit"] == 0
    finally:
        judge.close()


def test_a_value_that_ends_the_process_mid_chunk_is_charged_to_its_own_test_only() -> None:
    big = np.zeros(6_000_000, dtype=np.float32)  # float64 copies of both sides: more than 64 MB
    got = big.copy()
    got[-1] = 1.0
    count = isolated.BATCH + 4
    hostile = isolated.BATCH + 1  # in the second chunk, not at its start
    problem = Problem([Case(f"t{i}") for i in range(count)])
    small = body(x=np.arange(3.0))
    expected = Expected([body(x=big) if i == hostile else small for i in range(count)], [])
    runs = [(i, returned(i, body(x=got) if i == hostile else small)) for i in range(count)]
    judge = IsolatedJudge(memory_mb=64, cpu_s=5, size=1)
    try:
        results = judge.tests(problem, expected, runs)
        assert [r.index for r in results] == list(range(count))
        assert [r.status for r in results] == [
            TestStatus.ERROR if i == hostile else TestStatus.PASSED for i in range(count)
        ]
        assert "64 MB of memory" in (results[hostile].message or "")
        assert judge.status()["limits_hit"] == 1
    finally:
        judge.close()


def test_the_answers_of_a_full_batch_of_hostile_failures_fit_in_one_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each failure names the submission's keys (KEYS_SHOWN of KEY_TEXT characters, twice, and 20 in its
    details); astral characters take 12 bytes each in JSON. A batch of them is still one answer."""
    asks = Asks(monkeypatch)
    count = isolated.BATCH
    problem = Problem([Case(f"t{i}") for i in range(count)])

    def hostile(i: int) -> bytes:
        keys = ["\U0001f600" * 39 + chr(0x10000 + i * 50 + k) for k in range(40)]
        return _make_body({"t": "dict", "items": [[k, {"t": "str", "v": "\U0001f600" * 300}] for k in keys]})

    expected = Expected([body(x=np.arange(3.0))] * count, [])
    runs = [(i, returned(i, hostile(i))) for i in range(count)]
    judge = IsolatedJudge(memory_mb=256, cpu_s=5, size=1)
    try:
        results = judge.tests(problem, expected, runs)
        assert all(r.status == TestStatus.FAILED for r in results)
        assert [(op, n) for op, n, _ in asks.seen] == [("tests", count)]  # one request, no fallback
        assert judge.status()["started"] == 1  # its process was not killed
        size = len(json.dumps([r.model_dump(mode="json", include={"message", "details"}) for r in results]))
        assert size < judge_process.MAX_ANSWER_BYTES
    finally:
        judge.close()


def test_one_request_holds_a_judge_process_no_longer_than_one_tests_cpu_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Alone, a request holds its process for one test's CPU budget (cpu_s, rounded up) at most; one waiting
    for a process gives up after WAIT_S (60 s). So does a "tests" request: it starts no further test once it
    has used a share of that budget (isolated_worker._tests), and the rest go in the next request. Here 8
    values each well within 1 s of CPU, but several seconds together."""
    asks = Asks(monkeypatch)
    count = 8
    problem = Problem([Case(f"slow {i}", check=expect("flat", _slow(10))) for i in range(count)])
    data = body(flat=FLAT)
    expected = Expected([data] * count, [])
    judge = IsolatedJudge(memory_mb=256, cpu_s=1, size=1)
    try:
        judge.start()
        results = judge.tests(problem, expected, [(i, returned(i, data)) for i in range(count)])
        assert all(r.status == TestStatus.PASSED for r in results)
        longest = max(seconds for _, _, seconds in asks.seen)
        budget = judge.cpu_s + 1  # what one request alone may take (its CPU limit is rounded up)
        assert longest <= budget, f"one request held the judge process for {longest:.1f} s (one test: {budget} s)"
    finally:
        judge.close()


def test_a_value_that_ends_a_batch_does_not_get_the_others_judged_twice() -> None:
    """The last value of a batch takes more than its CPU: the process ends, and the tests of the request it ended
    are judged again alone (IsolatedJudge.tests). A request judges tests only within a share of one budget, so
    what is judged twice is bounded by that share, not by the batch.

    Beyond judging each alone, the batch costs by design the ending value once more, in a fresh process (its
    cost measured here in the same run), and what the request it ended judged before it: at most the share and
    one test. A process ended for its CPU dies at a whole second of its own (isolated_worker.cpu_budget rounds
    up), so each of the two processes compared may be up to 1 s off. Before the fix, every test of the batch
    was judged twice."""
    count = 12
    cases = [Case(f"slow {i}", check=expect("flat", _slow(20))) for i in range(count)]
    problem = Problem([*cases, Case("endless", check=expect("flat", _slow(400)))])
    data = body(flat=FLAT)
    expected = Expected([data] * (count + 1), [])
    runs = [(i, returned(i, data)) for i in range(count + 1)]

    def cpu_of(judging: Any) -> tuple[float, list[Any]]:
        judge = IsolatedJudge(memory_mb=256, cpu_s=1, size=1)
        before = _children_cpu()
        try:
            results = judging(judge)
        finally:
            judge.close()  # every process reaped: its CPU is counted
        return _children_cpu() - before, results

    ending_cpu, _ = cpu_of(lambda judge: [judge.test(problem, expected, count, runs[count][1])])
    alone_cpu, alone = cpu_of(lambda judge: [judge.test(problem, expected, i, run) for i, run in runs])
    batch_cpu, together = cpu_of(lambda judge: judge.tests(problem, expected, runs))
    assert [r.status for r in together] == [r.status for r in alone] == [TestStatus.PASSED] * count + [TestStatus.ERROR]
    others_cpu = alone_cpu - ending_cpu  # the tests' own work, within the rounding
    one_test = (others_cpu + 1.0) / count
    bound = isolated_worker.SHARE * 1 + 2 * one_test + 1.0  # the share, the test past it, the rounding
    twice = batch_cpu - alone_cpu - ending_cpu
    assert others_cpu - 1.0 > bound, f"the tests' work ({others_cpu:.1f} s) is too small to tell anything"
    assert twice < bound, (
        f"judging together took {batch_cpu:.1f} s of CPU, alone {alone_cpu:.1f} s, the ending value alone "
        f"{ending_cpu:.1f} s: {twice:.1f} s of the other tests' {others_cpu:.1f} s judged twice (at most {bound:.1f})"
    )
