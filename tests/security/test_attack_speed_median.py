"""Attack on speed grading's statistic (grader/grading/speed_stats.py `size_speed`: a size's speed-up is the median of
the paired ratios, the baseline's call over the submission's call made beside it), in real sandboxes.

A median ignores what happens in fewer than half of the calls, and the submission decides how its work is spread over
its calls: every call's inputs are in its child's memory from the start (execute_bench.py `bench_main`'s `inputs`,
reachable through the caller's frames). So at the first timed call of each size it computes the results of the next
ten timed calls as well, and returns those kept results when their calls come. Its total work is exactly what it
was; the one slow call is one ratio out of fifteen, which the median drops, and ten of fifteen ratios are the
baseline's call over a bare round trip. No setup charge applies: nothing was moved out of the timed calls. The values
are right (each computed on its own call's inputs), so every checked call passes.

Measured on problems/pairwise-distances.yaml (threshold 5x; through SpeedGrader, /tmp/sp/run.py):
- the baseline's own pair loop, honestly 0.988x (time_limit_exceeded), with its work moved (AHEAD = 8): accepted at
  15.44x (48 x 48: 83.95x, its median call 0.62 ms against 51.2 ms honestly);
- a loop over every pair that is honestly about 3x: 48.35x, above torch.cdist's honest 41-43x on the same host: the
  top of the leaderboard for a loop in Python.
Fixed (a statistic that moving work between calls cannot change, such as the ratio of the sizes' total times, or
inputs the module cannot reach before their call), the moved work earns nothing: the score stays near the honest
one's, below the threshold."""

from __future__ import annotations

import pytest

from tests.security.conftest import Submit
from tests.speed_verdicts import refused_as_slow, speed_seen

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

PROBLEM = "pairwise-distances"

PAIR_LOOP = """def _loop(x, y):  # the baseline's own loop over every pair: 1x honestly
    out = torch.empty(x.shape[0], y.shape[0], dtype=x.dtype)
    for i in range(x.shape[0]):
        for j in range(y.shape[0]):
            out[i, j] = torch.sqrt(((x[i] - y[j]) ** 2).sum())
    return out
"""
HONEST = "import torch\n\n\n" + PAIR_LOOP + "\n\ndef pairwise_distances(x, y):\n    return _loop(x, y)\n"
MOVED = (
    "import sys\n\nimport torch\n\nWARMUP, AHEAD = 2, 10  # at the first timed call, the next ten timed calls' too\n"
    "_kept = {}\n\n\n"
    + PAIR_LOOP
    + """

def _attack(x, y):
    frame = sys._getframe(1)
    while frame is not None and not ("command" in frame.f_locals and "inputs" in frame.f_locals):
        frame = frame.f_back
    if frame is None:  # a test, not the benchmark
        return _loop(x, y)
    inputs, command = frame.f_locals["inputs"], frame.f_locals["command"]
    kept = _kept.pop((command.size, command.call), None)
    if kept is not None:
        return kept
    if command.call == 1 + WARMUP:  # a timed call: one ratio out of fifteen, which the median drops
        for call in range(command.call + 1, command.call + 1 + AHEAD):
            args, kwargs = inputs[command.size][call]
            _kept[(command.size, call)] = _loop(*args, **kwargs)
    return _loop(x, y)


# Where the inputs of later calls cannot be reached (each call's come with its command), the attack has nothing
# to work with, and the module computes honestly: it must gain nothing either way.
def pairwise_distances(x, y):
    try:
        return _attack(x, y)
    except Exception:
        return _loop(x, y)
"""
)


def test_work_moved_between_timed_calls_earns_nothing(submit: Submit) -> None:
    honest = submit(HONEST, PROBLEM)
    assert refused_as_slow(honest), speed_seen(honest)  # 1x: far from the threshold
    verdict = submit(MOVED, PROBLEM)
    assert verdict["status"] != "accepted", speed_seen(verdict)
    # On a slow machine the benchmark may stop a 1x module early, before its score is made (speed_verdicts.py):
    # the moved work then earned nothing either, and there are no two scores to compare
    assert refused_as_slow(verdict), speed_seen(verdict)
    speed, fair = verdict["speed"], honest["speed"]
    if speed["speedup"] is None or fair["speedup"] is None:
        return
    seen = (
        verdict["status"],
        speed["speedup"],
        fair["speedup"],
        [
            (s["name"], s["speedup"], s["submission_ms"], f["submission_ms"])
            for s, f in zip(speed["sizes"], fair["sizes"], strict=True)
        ],
    )
    assert verdict["status"] != "accepted", seen
    assert speed["speedup"] <= 1.5 * fair["speedup"], seen
