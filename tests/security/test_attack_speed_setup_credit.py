"""Attack on speed grading's setup charge (grader/grading/speed_stats.py setup_charge_ns), in real sandboxes.

Every call's inputs are in the child's memory from the start (execute_bench.py keeps them in `bench_main`'s
`inputs`, reachable from the timed function through its caller's frames), so a module can compute the results of
timed calls ahead, during an untimed-as-such call. The judge charges that work, but only the part of it that
exceeds what the *baseline* spent on its own import, first and warm-up calls, less a 2 ms grace. The baseline is
slow on purpose, so its first and warm-up calls are a large credit (here about 2 x (4 + 15 + 41) ms), and the
warm-up calls' values are never checked: a module can skip their work entirely, or do it, and spend that credit on
computing 8 of each size's 15 timed calls ahead (8 is enough: the score is the median of the paired ratios). The
timed calls then only look their results up.

Measured on problems/pairwise-distances.yaml (threshold 5x) with a loop over every pair that is honestly about 3x
the baseline (`HONEST`): time_limit_exceeded at 3.19x; the same loop computing ahead (`AHEAD`): accepted at 11.81x
(16 x 16: 14.2x, 32 x 32: 34.3x where the honest loop gets 2.9x and 3.4x; setup charge 0.0 ms). With the loop that
is 1.67x honestly (one torch.dist per pair, stored into `out`): 6.41x, accepted. When fixed, a module that computes
ahead gains nothing it did not earn: its score stays near the honest loop's (below the threshold)."""

from __future__ import annotations

import math

import pytest

from tests.security.conftest import Submit
from tests.speed_verdicts import speed_seen

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

PROBLEM = "pairwise-distances"

LOOP = """def _loop(x, y):  # still one Python iteration per pair: about 3x the baseline's loop, under the 5x threshold
    ys = y.unbind(0)
    return torch.stack([torch.stack([torch.dist(xi, yj) for yj in ys]) for xi in x.unbind(0)])
"""

HONEST = "import torch\n\n\n" + LOOP + "\n\ndef pairwise_distances(x, y):\n    return _loop(x, y)\n"

AHEAD = (
    "import sys\n\nimport torch\n\nWARMUP = 2\nAHEAD = {0: 8, 1: 8}  # size -> timed calls computed ahead (8 of 15)\n"
    "_cache, _done = {}, []\n\n\n"
    + LOOP
    + """

def _bench():
    frame = sys._getframe(2)
    while frame is not None:
        if "inputs" in frame.f_locals and "command" in frame.f_locals:
            return frame.f_locals["inputs"], frame.f_locals["command"]
        frame = frame.f_back
    return None, None


def _attack(x, y):
    inputs, command = _bench()
    if command is None:  # a test, not the benchmark
        return _loop(x, y)
    if 1 <= command.call <= WARMUP:  # a warm-up call
        if not _done:
            _done.append(True)
            for size, count in AHEAD.items():
                for call in range(1 + WARMUP, 1 + WARMUP + count):
                    args, kwargs = inputs[size][call]
                    _cache[(size, call)] = _loop(*args, **kwargs)
        return {SKIP}
    kept = _cache.pop((command.size, command.call), None)
    return kept if kept is not None else _loop(x, y)


# Where the inputs of later calls cannot be reached (each call's come with its command), the attack has nothing
# to work with, and the module computes honestly: it must gain nothing either way.
def pairwise_distances(x, y):
    try:
        return _attack(x, y)
    except Exception:
        return _loop(x, y)
"""
)
SKIPS_WARMUP = AHEAD.replace("{SKIP}", "torch.empty(x.shape[0], y.shape[0])  # never checked")
DOES_WARMUP = AHEAD.replace("{SKIP}", "_loop(x, y)  # right, should warm-up calls ever be checked")


# The gain that fails: the attack unfixed gained 3.7x (11.81x against 3.19x). Under runc calls are timed on each
# child's CPU clock, which another process on the machine leaves alone; under gVisor on the wall clock, which a
# loaded machine tilts call by call (one grading each, with four CPU-bound processes beside the suite on 2 cores:
# 2.37x against 1.33x, the honest loop's 32 x 32 at 0.71x). So two rounds, interleaved, and their geometric mean;
# and a wider bound under gVisor that the unfixed attack's gain still clears (SECURITY.md, residual risks).
BOUND = {"runc": 1.5, "runsc": 2.0}
ROUNDS = 2


@pytest.mark.parametrize("source", [SKIPS_WARMUP, DOES_WARMUP], ids=["skips its warm-up", "does its warm-up"])
def test_results_computed_ahead_with_the_baselines_setup_as_credit_earn_nothing(
    submit: Submit, source: str, sandbox_runtime: str
) -> None:
    rounds, seen = [], []
    for _ in range(ROUNDS):  # interleaved: the host's own noise drifts
        honest, verdict = submit(HONEST, PROBLEM), submit(source, PROBLEM)
        assert honest["status"] == "time_limit_exceeded", speed_seen(honest)  # the loop alone is not fast enough
        fair, speed = honest["speed"], verdict["speed"]
        assert fair is not None and fair["speedup"] is not None, speed_seen(honest)
        assert speed is not None and speed["speedup"] is not None, speed_seen(verdict)
        gained = {
            size["name"]: (size["speedup"], was["speedup"])
            for size, was in zip(speed["sizes"], fair["sizes"], strict=True)
        }
        seen.append((speed["speedup"], fair["speedup"], gained, speed["setup_charge_ms"]))
        assert verdict["status"] != "accepted", seen
        rounds.append(speed["speedup"] / fair["speedup"])
    gain = math.prod(rounds) ** (1 / len(rounds))
    assert gain <= BOUND[sandbox_runtime], (gain, seen)
