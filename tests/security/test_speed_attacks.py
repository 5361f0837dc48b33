"""Attacks on speed grading (sandbox/runner/timing.py, grader/grading/speed.py), in real sandboxes, once per
runtime: a submission that tries to slow the baseline it is timed against, to run on more CPUs than it, to
stop the clock before its work is done, or to hold the benchmark with calls that never end or return too
much. Each ends in a verdict that credits nothing it did not compute in its timed calls. On
problems/pairwise-distances.yaml (at least 5x a loop over every pair of points)."""

from __future__ import annotations

import pytest

from tests.security.conftest import Submit
from tests.speed_verdicts import speed_seen, timed

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

PROBLEM = "pairwise-distances"
FAST = "import torch\n\n\ndef pairwise_distances(x, y):\n    return torch.cdist(x, y)\n"
# Only at the benchmark's largest size (48 points): the tests have other shapes.
AT_48 = (
    "import torch\n\n\ndef pairwise_distances(x, y):\n    if x.shape[0] == 48:\n{body}\n    return torch.cdist(x, y)\n"
)

# Four threads of work that lets go of the interpreter's lock: on the one CPU the two modules share, a
# baseline running beside them would get a fifth of it. Their matrix draws nothing from torch's generator: a
# thread that started late (a loaded machine) would otherwise take values from a test's seeded inputs, and the
# module would be wrong for that, not refused for its threads.
SPINNER = """import threading

import torch


def _spin():
    a = torch.full((200, 200), 0.01)
    while True:
        a @ a


for _ in range(4):
    threading.Thread(target=_spin, daemon=True).start()


def pairwise_distances(x, y):
    return torch.cdist(x, y)
"""
WIDENS_ITS_CPUS = """import os

import torch

if len(os.sched_getaffinity(0)) == 1:  # pinned: the benchmark's child
    try:
        os.sched_setaffinity(0, range(os.cpu_count() or 1))
    except OSError:
        pass
    else:
        if len(os.sched_getaffinity(0)) > 1:
            os._exit(9)


def pairwise_distances(x, y):
    return torch.cdist(x, y)
"""
SIGNALS_EVERYONE = """import os
import signal

import torch

try:
    pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
except OSError:  # Landlock: /proc is not to be listed; every pid the container's processes may have so far
    pids = list(range(1, 4096))
for pid in pids:
    if pid != os.getpid():
        for number in (signal.SIGSTOP, signal.SIGKILL):
            try:
                os.kill(pid, number)
            except OSError:
                pass


def pairwise_distances(x, y):
    return torch.cdist(x, y)
"""
# Writes a result for the call on its own result pipe before doing the work, to stop the runner's clock early.
FORGES_AHEAD = """import sys

import torch


def pairwise_distances(x, y):
    frame = sys._getframe(1)
    while frame is not None and "res_w" not in frame.f_locals:
        frame = frame.f_back
    command = frame.f_locals.get("command") if frame is not None else None
    if type(command).__name__ == "CallCommand":
        protocol, values = sys.modules["runner.protocol"], sys.modules["runner.values"]
        body = values.encode_value(torch.zeros(x.shape[0], y.shape[0]), 1 << 20)
        header = {"status": "ok", "index": command.call}
        protocol.write_all(frame.f_locals["res_w"], protocol.encode(b"r", header, body))
    return torch.cdist(x, y)
"""


# Does the work on one timed call in two and returns a plausible value without it on the other (a region holds
# many calls and only some of their values are checked): the values it skips are the reference's shape, not its.
SKIPS_HALF = """import torch

_calls = [0]


def pairwise_distances(x, y):
    _calls[0] += 1
    if _calls[0] > 40 and _calls[0] % 2 == 0:  # past its tests and its first calls
        return torch.full((x.shape[0], y.shape[0]), 1.5)
    return torch.cdist(x, y)
"""


# Returns, at every benchmark call, a value of a length the judge's null module has not made yet (slices of one
# buffer made at import): a null module that kept a buffer of each length would run out of memory, and the
# benchmark would end as the judge's failure (internal_error) instead of the submission's wrong answer.
FRESH_LENGTHS = """import torch

_buffer = torch.zeros(16 << 20, dtype=torch.uint8)
_calls = [0]


def softmax(x):
    if x.dim() == 3 and x.numel() >= 1 << 20:  # the benchmark's calls only: every test is smaller
        _calls[0] += 1
        return _buffer[: (16 << 20) - 4096 - _calls[0]]
    return torch.softmax(x, dim=-1)
"""


@pytest.fixture(scope="module")
def honest(submit: Submit) -> dict:
    verdict = submit(FAST, PROBLEM)
    assert timed(verdict), speed_seen(verdict)
    return verdict


def test_a_thread_spinning_in_the_background_is_refused(submit: Submit, honest: dict) -> None:
    """A benchmark's child has one thread (seccomp refuses another): threads that would work beside the baseline,
    or hide work from the clock, cannot start. Its tests ran with threads (they are not timed)."""
    verdict = submit(SPINNER, PROBLEM)
    assert verdict["status"] == "runtime_error", speed_seen(verdict)
    assert "loading it for the benchmark" in verdict["message"] and "thread" in verdict["message"], verdict
    assert verdict["speed"]["passed"] is False


def test_more_cpus_than_the_one_it_is_pinned_to_are_refused(submit: Submit) -> None:
    verdict = submit(WIDENS_ITS_CPUS, PROBLEM)
    assert timed(verdict), speed_seen(verdict)  # it did not exit: the widening was refused
    assert verdict["speed"]["cpu"] is not None


def test_signals_to_the_baseline_and_the_judge_are_refused(submit: Submit) -> None:
    """A killed baseline would make the benchmark the judge's failure (internal_error); a stopped one would
    wait for its time limit. Its import's cost, thousands of system calls, is charged: it may be too slow."""
    verdict = submit(SIGNALS_EVERYONE, PROBLEM)
    assert verdict["status"] in ("accepted", "time_limit_exceeded"), verdict
    speed = verdict["speed"]
    assert speed["speedup"] is not None and all(size["baseline_ms"] < 1000 for size in speed["sizes"]), speed


def test_a_result_forged_ahead_of_the_work_is_not_credited(submit: Submit) -> None:
    verdict = submit(FORGES_AHEAD, PROBLEM)
    assert verdict["status"] in ("wrong_answer", "runtime_error"), verdict
    assert verdict["speed"] is not None and verdict["speed"]["passed"] is False


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ("        while True:\n            pass", "time_limit_exceeded", "time limit"),
        ("        return torch.zeros(4000, 4000)", "output_limit_exceeded", "larger than"),
        ("        return torch.ones(1 << 30, dtype=torch.float64)", "memory_limit_exceeded", "memory"),
        ("        import os\n        os._exit(0)", "runtime_error", "exited"),
    ],
    ids=["never returns", "a huge result", "a memory bomb", "exits"],
)
def test_a_call_that_fails_is_the_submissions_own_verdict(
    submit: Submit, honest: dict, body: str, status: str, words: str
) -> None:
    verdict = submit(AT_48.format(body=body), PROBLEM)
    assert verdict["status"] == status, verdict
    assert "the benchmark, call 1 at size '48 x 48'" in verdict["message"]
    assert words in verdict["message"], verdict["message"]
    assert verdict["speed"]["passed"] is False
    assert timed(submit(FAST, PROBLEM))  # the next is graded as before


def test_skipping_the_work_on_some_calls_of_a_region_is_caught(submit: Submit) -> None:
    """Only 8 of a size's timed values are checked, drawn as they come: a module that skips half its calls' work
    cannot tell which, and escapes 24 draws with a chance of 2**-24."""
    verdict = submit(SKIPS_HALF, PROBLEM)
    assert verdict["status"] == "wrong_answer", speed_seen(verdict)
    assert "the benchmark, call" in verdict["message"] and "a wrong result" in verdict["message"], verdict


def test_values_of_ever_new_lengths_leave_the_null_module_standing(submit: Submit) -> None:
    """The judge's null module returns values of the sizes a module's took: one buffer, grown to the largest, never
    one a size. Values of a new length at every call are the submission's wrong answer, not the judge's failure
    (which a batch's fast_p would count apart)."""
    verdict = submit(FRESH_LENGTHS, "fused-softmax")
    # Its values (16 MB against the reference's 4-8) are wrong, or, kept, more than the job's bytes allow: the
    # submission's own verdict either way, naming the call.
    assert verdict["status"] in ("wrong_answer", "output_limit_exceeded"), speed_seen(verdict)
    assert "the benchmark, call" in verdict["message"], verdict
