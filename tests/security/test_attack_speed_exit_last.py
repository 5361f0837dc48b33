"""Attack on the benchmark's CPU clock (sandbox/runner/timing.py `Benchmark._clock`, at commit 2a09fca): a child that
is gone when its call's time is read.

Each call is timed on the child's CPU time, read from /proc/<pid>/task/*/schedstat before the call and after the
child is stopped again. When that second reading fails because the child is no longer there, `_clock` returns the
child's *last* reading, which is the one taken at the start of that very call: the call is counted as taking no time
at all (only the CPU it had while stopped). A module can arrange that for its last call: it wraps the child's
`_send` (execute_bench.py looks it up at every call) so that, once the last call's value is written, the process
leaves with os._exit(0). The value arrives whole and right; the zygote reaps the child at once; the benchmark ends
`ok`, since no call is left to notice the child is gone.

Only the benchmark's last call can be made free this way (a later call would find the child gone), but whatever it
does is free: here 300 ms of busy work in a call that the honest module makes in about 0.4 ms. Measured at 2a09fca
(through SpeedGrader, /tmp/sp/run.py): accepted, 48 x 48 at 66.9x with a mean of 0.77 ms a call, where the 300 ms
counted would have made it 46 ms a call and about 1.1x. With a problem of one size and 5 repetitions, a fifth of the
timed work goes uncounted. Fixed (the last reading taken while the child is still there, or its CPU read from its
exit status, or a child that leaves mid-benchmark the subject's error), the 300 ms are counted. Since a timed region
holds as many calls as make about 10 ms (autorange), the module makes its warm-up calls at the last size slower
than that, so that its regions there hold one call each and it knows which call is the benchmark's last."""

from __future__ import annotations

import pytest

from tests.security.conftest import Submit

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

PROBLEM = "pairwise-distances"
LEAVES_AFTER_ITS_LAST_CALL = """import os
import sys
import time

import torch

_eb = sys.modules.get("runner.execute_bench")
_last = [False]
if _eb is not None:  # the benchmark's child: leave right after the last call's value is written
    _protocol = sys.modules["runner.protocol"]
    _send = _eb._send

    def _send_then_leave(res_w, kind, header, body=b""):
        _send(res_w, kind, header, body)
        if _last[0] and kind == _protocol.CHILD_RESULT:
            os._exit(0)

    _eb._send = _send_then_leave


def pairwise_distances(x, y):
    frame = sys._getframe(1)
    while frame is not None and not ("bench" in frame.f_locals and "command" in frame.f_locals):
        frame = frame.f_back
    if frame is not None:
        bench, command = frame.f_locals["bench"], frame.f_locals["command"]
        if command.size == len(bench.sizes) - 1 and 0 < command.call <= bench.warmup:
            # Slow warm-up calls at the last size (over the 10 ms a timed region aims at): its timed regions
            # then hold one call each, and the benchmark's last call is the last size's call bench.calls - 1.
            end = time.process_time() + 0.012
            while time.process_time() < end:
                pass
        if command.size == len(bench.sizes) - 1 and command.call == bench.calls - 1:  # the benchmark's last call
            _last[0] = True
            end = time.process_time() + 0.3
            while time.process_time() < end:  # 300 ms of CPU the clock should count
                pass
    return torch.cdist(x, y)
"""


def test_a_call_after_which_the_child_leaves_is_still_counted(submit: Submit) -> None:
    verdict = submit(LEAVES_AFTER_ITS_LAST_CALL, PROBLEM)
    speed = verdict["speed"]
    if verdict["status"] != "accepted":  # a child that left mid-benchmark: its own failure, nothing gained
        assert speed is None or not speed["passed"], verdict
        return
    last = speed["sizes"][-1]
    # 300 ms of one of its 15 timed calls: at least 20 ms a call on average, whatever the rest took.
    assert last["submission_ms"] >= 20.0, (last, speed["speedup"], speed.get("clock"))
