"""Attack on the benchmark's one-at-a-time rule (sandbox/runner/timing.py `freeze`), in real sandboxes: the submission
wakes itself up while the baseline is timed.

The runner keeps the subject off the CPU it shares with the baseline by sending it SIGSTOP (and waiting until every
thread has stopped) and SIGCONT when its turn comes. But a SIGCONT need not come from the runner: a POSIX timer of the
subject's own (`timer_create` with SIGEV_SIGNAL and SIGCONT, a plain system call the seccomp filter lets through) has
the kernel send it, and the kernel resumes a stopped process on any SIGCONT, whoever sends it (prepare_signal). No
handler is needed (the signal being ignored does not stop the resumption). So the module arms a one-shot timer when
each of its calls returns, 1.5-2 ms later, by which time the runner has seen it stopped and started the baseline's
call; the timer fires, the subject's background threads run beside the baseline on the one CPU, and park themselves
when its own next call comes. (`test_speed_attacks.py`'s background threads, which that test shows harmless, are the
same threads without the timer.) A variant stops itself (SIGSTOP to its own pid, allowed) every 1.6 ms and arms a
0.4 ms timer first, so that the runner, whenever it looks, sees it stopped.

Measured on problems/pairwise-distances.yaml (through SpeedGrader, /tmp/sp/run.py):
- torch.cdist, honestly 41.0x-42.9x; with two background threads and the one-shot timer (`CDIST_WAKES_UP`) 96.4x,
  96.1x, 91.8x: the baseline's median at 48 x 48 from 43-50 ms to 153-159 ms, the submission's own calls unchanged
  (0.46-0.59 ms honest, 0.56-0.66 ms);
- a loop over every pair, honestly 3.12x-3.27x (time_limit_exceeded), with four background threads and the
  self-stopping timer (`LOOP_WAKES_UP`): accepted at 11.33x, the baseline's medians 25.7 / 140.9 / 302.6 ms where
  they were 6.6 / 23.4 / 50.8 ms, the submission's 3.0 / 8.7 / 16.4 ms where they were 2.3 / 7.3 / 14.7 ms.
Fixed (the subject kept off the CPU whatever it does, or caught running when it should not), neither gains anything:
the baseline's times stay where they are beside the honest module."""

from __future__ import annotations

import pytest

from tests.security.conftest import Submit

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

PROBLEM = "pairwise-distances"
CDIST = "    return torch.cdist(x, y)\n"
LOOP = (  # one Python iteration per pair: about 3x the baseline honestly, under the 5x threshold
    "    ys = y.unbind(0)\n"
    "    return torch.stack([torch.stack([torch.dist(xi, yj) for yj in ys]) for xi in x.unbind(0)])\n"
)


def honest(body: str) -> str:
    return "import torch\n\n\ndef _work(x, y):\n" + body + "\n\ndef pairwise_distances(x, y):\n    return _work(x, y)\n"


TIMER = '''import ctypes
import os
import select
import signal
import sys
import threading
import time

import torch


class _SigEvent(ctypes.Structure):  # struct sigevent (glibc, 64-bit)
    _fields_ = [("value", ctypes.c_void_p), ("signo", ctypes.c_int), ("notify", ctypes.c_int),
                ("pad", ctypes.c_byte * 48)]


class _ITimerSpec(ctypes.Structure):
    _fields_ = [("interval_s", ctypes.c_long), ("interval_ns", ctypes.c_long), ("value_s", ctypes.c_long),
                ("value_ns", ctypes.c_long)]


_libc = ctypes.CDLL(None, use_errno=True)
_timer = ctypes.c_void_p()
_go = threading.Event()  # cleared while this module's own call runs
_after = [0.0]  # the background threads wait until its value is sent and the runner has stopped it
_cmd = [None]  # the runner's command pipe: a call about to come


def _arm(seconds):
    """One SIGCONT, sent by the kernel in `seconds`: a SIGSTOP of the runner's lasts no longer."""
    _libc.timer_settime(_timer, 0, ctypes.byref(_ITimerSpec(0, 0, 0, int(seconds * 1e9))), None)


def _call_pending():
    return _cmd[0] is not None and bool(select.select([_cmd[0]], [], [], 0)[0])


def _burn(first):
    a = torch.randn(96, 96)
    while True:
        _go.wait()
        if time.monotonic() < _after[0]:
            time.sleep(0.0002)
            continue
        end = time.monotonic() + (BURN_S or 3600.0)
        while _go.is_set() and time.monotonic() < end:
            a @ a
        if BURN_S and first and _go.is_set() and not _call_pending():
            _arm(STOP_S)  # stopped for STOP_S, so that the runner, whenever it looks, sees it stopped
            os.kill(os.getpid(), signal.SIGSTOP)


# The benchmark's child (pinned to the CPU it shares with the baseline) with a timer of its own: else nothing.
_pinned = len(os.sched_getaffinity(0)) == 1 and _libc.timer_create(
    1, ctypes.byref(_SigEvent(None, signal.SIGCONT, 0)), ctypes.byref(_timer)) == 0  # CLOCK_MONOTONIC, SIGEV_SIGNAL
if _pinned:
    sys.setswitchinterval(0.0002)
    for i in range(BURNERS):
        threading.Thread(target=_burn, args=(i == 0,), daemon=True).start()


def _work(x, y):
WORK

def pairwise_distances(x, y):
    _go.clear()
    if _pinned and _cmd[0] is None:
        frame = sys._getframe(1)
        while frame is not None and "cmd_r" not in frame.f_locals:
            frame = frame.f_back
        _cmd[0] = frame.f_locals["cmd_r"] if frame is not None else None
    try:
        return _work(x, y)
    finally:
        if _pinned:
            _after[0] = time.monotonic() + DELAY_S
            _arm(DELAY_S)
            _go.set()
'''


def wakes_up(body: str, burners: int, delay_s: float, burn_s: float, stop_s: float) -> str:
    settings = f"BURNERS = {burners}\nDELAY_S = {delay_s}\nBURN_S = {burn_s}\nSTOP_S = {stop_s}\n"
    return TIMER.replace("_libc = ", settings + "_libc = ", 1).replace("WORK\n", body)


# The same with torch.cdist (one background thread) took the baseline from 5.4 / 13.0 / 49.9 ms to 13.5 / 52.1 /
# 120.9 ms, 40.4x to 71.6x; on a busy host the honest score moves as much, so it is not a test here.
CDIST_WAKES_UP = wakes_up(CDIST, burners=1, delay_s=0.0015, burn_s=0.0016, stop_s=0.0004)
LOOP_WAKES_UP = wakes_up(LOOP, burners=4, delay_s=0.0015, burn_s=0.0016, stop_s=0.0004)


def _compare(verdict: dict, fair: dict) -> list:
    return [
        (size["name"], size["baseline_ms"], was["baseline_ms"], size["submission_ms"], was["submission_ms"])
        for size, was in zip(verdict["speed"]["sizes"], fair["speed"]["sizes"], strict=True)
    ]


def test_a_timer_that_wakes_the_submission_earns_no_accepted_verdict(submit: Submit) -> None:
    fair = submit(honest(LOOP), PROBLEM)
    assert fair["status"] == "time_limit_exceeded", fair  # the loop alone is not fast enough
    verdict = submit(LOOP_WAKES_UP, PROBLEM)
    seen = (verdict["status"], verdict["speed"]["speedup"], fair["speed"]["speedup"])
    assert verdict["status"] != "accepted", (*seen, _compare(verdict, fair))
    if verdict["speed"]["speedup"] is not None:
        assert verdict["speed"]["speedup"] <= 1.5 * fair["speed"]["speedup"], (*seen, _compare(verdict, fair))
