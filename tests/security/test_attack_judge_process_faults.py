"""Issue 41, point 4 (the judge's faults are the judge's, and every part recovers), in real judge processes
(grader/grading/judge_process.py, isolated.py): a judge process that died or was stopped while idle is replaced
before it is used, and one stopped from outside while it judges (no value can stop it) is asked again in a fresh
process: the test is judged as it would have been. Before, the idle one was handed a request anyway and the test
was charged ("judging what this test returned took more than 14 s"), the submission blamed for the judge's
process. No Docker: values are built byte by byte as a sandbox sends them (tests/unit/conftest.py)."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np

from grader.grading.expected import Expected
from grader.grading.isolated import IsolatedJudge
from grader.grading.verdict import TestStatus
from tests.unit.test_isolated_judge import Case, Problem, body, expect, returned

FLAT = np.random.default_rng(2).normal(size=100_000)


def _judge_and_problem(rounds: int) -> tuple[IsolatedJudge, Problem, Expected, bytes]:
    check = f"sum(len(sorted(flat.tolist())) for k in range({rounds})) > 0 and flat"
    data = body(flat=FLAT)
    return (
        IsolatedJudge(memory_mb=256, cpu_s=5, size=1),
        Problem([Case("one", check=expect("flat", check))]),
        (Expected([data], [])),
        data,
    )


def _pid(judge: IsolatedJudge) -> int:
    assert len(judge._idle) == 1
    return judge._idle[0].process.pid


def test_an_idle_judge_process_that_was_stopped_or_killed_is_replaced_before_use() -> None:
    judge, problem, expected, data = _judge_and_problem(1)
    try:
        for fault in (signal.SIGSTOP, signal.SIGKILL):
            assert judge.test(problem, expected, 0, returned(0, data)).status == TestStatus.PASSED
            pid = _pid(judge)
            os.kill(pid, fault)
            time.sleep(0.2)
            started = time.monotonic()
            result = judge.test(problem, expected, 0, returned(0, data))
            assert result.status == TestStatus.PASSED, result.message
            assert time.monotonic() - started < 10, "the stopped process was asked and waited for"
            assert _pid(judge) != pid
        assert judge.limits_hit == 0  # nothing charged to the test
    finally:
        judge.close()


def test_a_judge_process_stopped_while_it_judges_is_asked_again_in_a_fresh_one() -> None:
    judge, problem, expected, data = _judge_and_problem(40)  # a few seconds of judging
    try:
        assert judge.test(problem, expected, 0, returned(0, data)).status == TestStatus.PASSED
        pid = _pid(judge)
        stopper = threading.Timer(0.5, os.kill, (pid, signal.SIGSTOP))
        stopper.start()
        result = judge.test(problem, expected, 0, returned(0, data))
        stopper.join()
        assert result.status == TestStatus.PASSED, result.message
        assert judge.limits_hit == 0
        assert _pid(judge) != pid
    finally:
        judge.close()
