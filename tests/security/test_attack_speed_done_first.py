"""Attack on the DONE/sending split of a timed call (sandbox/runner/timing.py `_call`, grader/grading/speed_stats.py
`work_ns`), in real sandboxes.

A call's work is counted to the child's DONE, plus whatever its value's sending then took beyond the "usual" sending:
the median of the *baseline's* sending at that size. The submission's module runs in the child that says DONE, so it
can say it first: it replaces `runner.execute_bench._call` (bench_main looks it up at every call) with one that writes
the DONE frame as soon as the call is asked for, and only then calls the function and encodes its value. Its work then
sits in the sending window, and is free up to the baseline's usual sending; the baseline's sending is also slower than
a fast submission's own (measured: about 0.35-0.65 ms a call against 0.01-0.3 ms), so even the encoding costs nothing.
What is left counted is the bare round trip to DONE.

Measured with torch.cdist on problems/pairwise-distances.yaml (through SpeedGrader, /tmp/sp/run.py), two rounds:
honest 45.3x and 49.7x; the same function saying DONE first 71.9x and 73.6x (48 x 48: 96x and 99x honest, 229x and
172x with DONE first; its median call 0.59-0.66 ms honest, 0.25-0.26 ms). A 1.5x unearned gain on the leaderboard,
where the fast submissions are. Fixed, saying DONE before the work gains nothing: the score stays near the honest
one's."""

from __future__ import annotations

import math

import pytest

from tests.security.conftest import Submit
from tests.speed_verdicts import speed_seen, timed

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

PROBLEM = "pairwise-distances"
FAST = "import torch\n\n\ndef pairwise_distances(x, y):\n    return torch.cdist(x, y)\n"
DONE_FIRST = """import sys

import torch

_eb = sys.modules.get("runner.execute_bench")
_code = getattr(getattr(_eb, "_call", None), "__code__", None)
if _code is not None and "done" in _code.co_varnames[: _code.co_argcount]:
    # The benchmark's child, whose _call says DONE once the function returns: say it as soon as the call is asked
    # for, then do the work (a judge without DONE leaves this module as it is)
    _protocol = sys.modules["runner.protocol"]

    def _call(function, arguments, device, max_result, done, res_w):
        _protocol.write_all(res_w, done)
        args, kwargs = arguments
        return _eb._encode_result(function(*args, **kwargs), max_result)

    _eb._call = _call


def pairwise_distances(x, y):
    return torch.cdist(x, y)
"""


def test_saying_done_before_the_work_earns_nothing(submit: Submit, sandbox_runtime: str) -> None:
    # Under gVisor calls are timed on the wall clock, and a value's sending there (0.6-0.7 ms a call, widely spread)
    # is charged against the baseline's median sending: saying DONE first gained 1.26-1.45x in one run of the suite
    # (SECURITY.md, residual risks, speed grading (f)). The bound there catches only the larger gains of the attack
    # unfixed (1.5x overall, 2.4x at 48 x 48 under runc): the property itself is checked under runc.
    bound = 1.2 if sandbox_runtime == "runc" else 1.6
    rounds = []
    for _ in range(2):  # interleaved: the host's own noise drifts
        honest, early = submit(FAST, PROBLEM), submit(DONE_FIRST, PROBLEM)
        # Correct and timed to the end, either side of the threshold: whether a score reaches 5x is the machine's
        # (4.4x under gVisor on a slow one), and the gain is a ratio of two scores
        assert timed(honest) and timed(early), (speed_seen(honest), speed_seen(early))
        rounds.append((honest["speed"], early["speed"]))
    gain = math.prod(e["speedup"] / h["speedup"] for h, e in rounds) ** (1 / len(rounds))
    seen = [
        (
            h["speedup"],
            e["speedup"],
            [(a["submission_ms"], b["submission_ms"]) for a, b in zip(h["sizes"], e["sizes"], strict=True)],
        )
        for h, e in rounds
    ]
    assert gain <= bound, (gain, seen)  # (honest score, DONE-first score, [(honest median ms, DONE-first's)])
