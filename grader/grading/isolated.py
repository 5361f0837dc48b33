"""Judging in processes of their own: the `Judge` that submissions and runs are judged by.

What a sandbox returned is decoded, compared, put through the check's expressions and matched with the
pitfalls in a judge process (grading/isolated_worker.py) whose memory and CPU the kernel bounds, never in
the service: there a returned value that made the comparison build gigabytes would grow the API (in
local mode, the whole service) or the grading loop. A request that exceeds the process's limits ends as
that test's error, charged to the submission (it chose the values); the process is replaced, and no
other submission notices. A judge process that cannot be had is the judge's own failure (JudgeUnavailable).

The processes are started on demand, up to `size` at once, and kept for the next request. Each holds
nothing of a submission between requests: a request carries its values, and the answer is data (JSON,
read here as hostile: bounded, validated field by field). Results of tests that returned no value are
judged here: no value is involved.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from grader.containers.protocol import MAX_MESSAGE, Outcome
from grader.grading import judge_wire
from grader.grading.bounds import cap, cap_details
from grader.grading.execution import ModuleRun, TestRun
from grader.grading.expected import Expected
from grader.grading.judge import base_result, judge_test
from grader.grading.judge_process import (
    JudgeLimit,
    JudgeProcess,
    JudgeStopped,
    JudgeUnavailable,
)
from grader.grading.judge_wire import JudgeSpec
from grader.grading.model import ProblemSpec
from grader.grading.verdict import TestResult, TestStatus

log = logging.getLogger(__name__)

WAIT_S = 60.0  # for a free judge process, before the judge gives up (its own failure)
SPECS_KEPT = 128
BATCH = 32  # tests judged in one request at most (its answer stays well within MAX_ANSWER_BYTES)


class IsolatedJudge:
    """The Judge (grading/judge.py) whose work on returned values happens in bounded processes."""

    def __init__(self, memory_mb: int, cpu_s: float, size: int) -> None:
        self.memory_mb, self.cpu_s, self.size = memory_mb, cpu_s, size
        self._idle: list[JudgeProcess] = []
        self._count = 0  # processes started and not yet closed
        self._closed = False
        self._cond = threading.Condition()
        self._specs: OrderedDict[int, tuple[ProblemSpec, bytes, bytes]] = OrderedDict()
        self._specs_lock = threading.Lock()
        self.limits_hit = 0

    @property
    def timeout_s(self) -> float:
        """A backstop for a process that neither answers nor ends: the CPU limit ends it before this."""
        return 4 * self.cpu_s + 10.0

    # -- the Judge ------------------------------------------------------------------------------------------
    def test(self, problem: ProblemSpec, expected: Expected, index: int, run: TestRun) -> TestResult:
        if run.header.status != Outcome.OK:
            return judge_test(problem, expected, index, run)  # nothing returned: no value to judge
        try:
            answer = self._call("test", problem, (index, expected.body(index), run.body))
        except JudgeLimit as exc:
            self.limits_hit += 1
            return _limited(problem, index, run, exc)
        return _result(problem, index, run, answer)

    def tests(self, problem: ProblemSpec, expected: Expected, runs: Sequence[tuple[int, TestRun]]) -> list[TestResult]:
        """Tests that landed together, judged in as few requests as one request's CPU budget allows (the judge
        process judges the first ones of up to BATCH, and says which). A request that fails (its process ended,
        an answer that is not one) has its tests judged again alone: only a value too much to judge is charged,
        to its own test."""
        returned = [(index, run) for index, run in runs if run.header.status == Outcome.OK]
        answers: dict[int, dict[str, Any]] = {}
        while len(returned) > 1:
            chunk, returned = returned[:BATCH], returned[BATCH:]
            items = [(index, expected.body(index), run.body) for index, run in chunk]
            try:
                found = self._call("tests", problem, (items,)).get("results")
            except JudgeLimit:
                found = None
            if not _some_answers(found, len(chunk)):
                continue  # each of the chunk judged alone (below)
            answers.update((index, one) for (index, _), one in zip(chunk, found, strict=False))
            returned = chunk[len(found) :] + returned  # those the process did not get to: the next request
        alone = self.test
        return [
            _result(problem, index, run, answers[index]) if index in answers else alone(problem, expected, index, run)
            for index, run in runs
        ]

    def call(self, expected_body: bytes | None, body: bytes, check: Mapping[str, Any]) -> dict[str, Any]:
        """A benchmark call's value judged in a judge process: {} or its message and details."""
        try:
            answer = self._call("call", None, (expected_body, body, dict(check)))
        except JudgeLimit as exc:
            self.limits_hit += 1
            return {"message": f"judging what this call returned took {exc}"}
        judged = _judged(answer)
        if judged is None:
            return {"message": "what this call returned could not be judged"}
        return {key: judged[key] for key in ("message", "details")} if judged else {}

    def hint(self, problem: ProblemSpec, expected: Expected, run: ModuleRun, tests: list[TestResult]) -> str | None:
        if not any(test.status != TestStatus.PASSED for test in tests) or not problem.pitfalls:
            return None
        frames = {index: (test.header, test.body) for index, test in run.tests.items()}
        args = (list(_bodies(expected, len(problem.tests))), expected.pitfall_bodies, frames, tests)
        try:
            number = self._call("hint", problem, args).get("pitfall")
        except (JudgeLimit, JudgeUnavailable) as exc:  # a hint is a courtesy
            log.warning("no hint for a submission to %s: %s", problem.id, exc)
            return None
        if type(number) is not int or not 0 <= number < len(problem.pitfalls):
            return None
        return problem.pitfalls[number].hint

    def describe(self, bodies: Sequence[bytes | None]) -> list[dict[str, Any] | None]:
        try:
            described = self._call("describe", None, (list(bodies),)).get("described")
        except JudgeLimit:
            described = None
        if not isinstance(described, list) or len(described) != len(bodies):
            return [None] * len(bodies)
        return [item if isinstance(item, dict) else None for item in described]

    # -- requests -------------------------------------------------------------------------------------------
    def _spec(self, problem: ProblemSpec | None) -> tuple[bytes, bytes]:
        """The problem's spec as sent (encoded once per problem object) and its digest."""
        if problem is None:
            blob = judge_wire.encode(JudgeSpec("", "", (), ()))
            return hashlib.sha256(blob).digest(), blob
        with self._specs_lock:
            entry = self._specs.get(id(problem))
            if entry is not None and entry[0] is problem:
                self._specs.move_to_end(id(problem))
                return entry[1], entry[2]
        blob = judge_wire.encode(JudgeSpec.of(problem))
        digest = hashlib.sha256(blob).digest()
        with self._specs_lock:
            self._specs[id(problem)] = (problem, digest, blob)  # the problem kept, so that its id stays its own
            while len(self._specs) > SPECS_KEPT:
                self._specs.popitem(last=False)
        return digest, blob

    def _call(self, op: str, problem: ProblemSpec | None, args: tuple[Any, ...]) -> dict[str, Any]:
        digest, blob = self._spec(problem)
        try:
            answer = self._ask(op, digest, blob, args)
        except JudgeStopped:
            log.warning("a judge process was stopped from outside during %s: asked again in a fresh one", op)
            answer = self._ask(op, digest, blob, args)  # stopped again: JudgeStopped, the judge's failure
        if "error" in answer:
            log.warning("a judge process failed on %s: %.100s", op, answer["error"])
        return answer

    def _ask(self, op: str, digest: bytes, blob: bytes, args: tuple[Any, ...]) -> dict[str, Any]:
        with self._process() as process:
            sent = blob if digest not in process.specs else None
            answer = process.ask(judge_wire.encode((op, digest, sent, args)), self.timeout_s)
            if answer.get("need_spec"):
                answer = process.ask(judge_wire.encode((op, digest, blob, args)), self.timeout_s)
            process.specs.add(digest)
        return answer

    @contextmanager
    def _process(self) -> Iterator[JudgeProcess]:
        deadline = time.monotonic() + WAIT_S
        with self._cond:
            while not self._idle and self._count >= self.size:
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    raise JudgeUnavailable("no judge process is free")
                self._cond.wait(left)
            if self._closed:
                raise JudgeUnavailable("the judge is closed")
            process = self._idle.pop() if self._idle else None
            discarded = None
            if process is not None and not process.healthy():  # died or stopped while idle: a fresh one
                discarded, process = process, None
                self._count -= 1
            if process is None:
                self._count += 1
        if discarded is not None:
            log.warning("a judge process died or was stopped while idle: replaced")
            discarded.kill()
            discarded.close()
        if process is None:
            try:
                process = JudgeProcess(self.memory_mb, self.cpu_s)
            except OSError as exc:
                with self._cond:
                    self._count -= 1
                    self._cond.notify()
                raise JudgeUnavailable(f"cannot start a judge process: {exc}") from None
        try:
            yield process
        finally:
            self._hand_back(process)

    def _hand_back(self, process: JudgeProcess) -> None:
        with self._cond:
            keep = process.alive and not self._closed
            if keep:
                self._idle.append(process)
            else:
                self._count -= 1
            self._cond.notify()
        if not keep:
            process.close()

    def start(self, count: int = 1) -> None:
        """Starts up to `count` processes ahead of the first request (their imports take a few hundred ms)."""
        with self._cond:
            count = max(0, min(count, self.size - self._count))
            self._count += count
        for _ in range(count):
            try:
                process = JudgeProcess(self.memory_mb, self.cpu_s)
            except OSError as exc:
                log.warning("cannot start a judge process: %s", exc)
                with self._cond:
                    self._count -= 1
                continue
            self._hand_back(process)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._count -= len(idle)
            self._cond.notify_all()
        for process in idle:
            process.close()

    def status(self) -> dict[str, int]:
        with self._cond:
            return {"size": self.size, "started": self._count, "idle": len(self._idle), "limits_hit": self.limits_hit}


def _result(problem: ProblemSpec, index: int, run: TestRun, answer: dict[str, Any]) -> TestResult:
    """A returned value's result from a judge process's answer (read as hostile)."""
    result = base_result(problem, index, run.header)  # name, time, output: from here, never from a process
    judged = _judged(answer)
    if judged is None:
        message = "what this test returned could not be judged"
        return result.model_copy(update={"status": TestStatus.ERROR, "message": message})
    return result.model_copy(update=judged) if judged else result


def _some_answers(found: object, asked: int) -> bool:
    """A "tests" request's results: a list of one answer each for the first of the tests asked, at least one."""
    return isinstance(found, list) and 0 < len(found) <= asked and all(type(one) is dict for one in found)


def _limited(problem: ProblemSpec, index: int, run: TestRun, exc: JudgeLimit) -> TestResult:
    result = base_result(problem, index, run.header)
    message = f"judging what this test returned took {exc}"
    return result.model_copy(update={"status": TestStatus.ERROR, "message": message})


def _bodies(expected: Expected, count: int) -> Iterator[bytes | None]:
    return (expected.body(index) for index in range(count))


def _judged(answer: dict[str, Any]) -> dict[str, Any] | None:
    """What a judge process found of a test: {} (passed) or its status, message and details, each checked;
    None for an answer that is not one."""
    if not answer:
        return {}
    status, message, details = answer.get("status"), answer.get("message"), answer.get("details")
    if set(answer) - {"status", "message", "details"} or status not in (TestStatus.FAILED, TestStatus.ERROR):
        return None
    if not (message is None or isinstance(message, str)) or not (details is None or isinstance(details, dict)):
        return None
    message = cap(message, MAX_MESSAGE)
    return {"status": TestStatus(status), "message": message, "details": cap_details(details) if details else None}
