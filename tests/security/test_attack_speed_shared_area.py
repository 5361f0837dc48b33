"""Attacks on a timed module's shared area (sandbox/runner/shared.py), in real sandboxes, once per runtime: the
memory where the runner puts a region's inputs and the child its values. The module can reach it (the judge's
own code in its process holds it), so it is as hostile as anything else the child writes: a value forged in it
ahead of the work, a length that lies, an area taken away, a cache keyed on where the inputs lie. Each ends in
the submission's own verdict, none credited, and the next submission is graded as before. On
problems/pairwise-distances.yaml."""

from __future__ import annotations

import pytest

from tests.security.conftest import Submit
from tests.speed_verdicts import speed_seen, timed

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

PROBLEM = "pairwise-distances"
FAST = "import torch\n\n\ndef pairwise_distances(x, y):\n    return torch.cdist(x, y)\n"

# The judge's frame around a timed call: its area, its result pipe and the command being served.
FIND = """import ctypes
import os
import struct
import sys

import torch


def _judge():
    frame = sys._getframe(2)
    while frame is not None and "area" not in frame.f_locals:
        frame = frame.f_back
    if frame is None or type(frame.f_locals.get("command")).__name__ != "CallCommand":
        return None
    return frame.f_locals


"""

# Writes the value of zeros into its area and a result frame for the call before it does the work: the runner
# takes the first frame; the work that follows is the next region's.
FORGES_IN_THE_AREA = (
    FIND
    + """def pairwise_distances(x, y):
    judge = _judge()
    if judge is not None:
        protocol, values = sys.modules["runner.protocol"], sys.modules["runner.values"]
        parts = values.encode_parts(torch.zeros(x.shape[0], y.shape[0]), 1 << 24)
        length = judge["area"].put_value(parts)
        header = {"status": "ok", "index": judge["command"].call}
        protocol.write_all(judge["res_w"], protocol.encode(b"r", header, length))
    return torch.cdist(x, y)
"""
)

# A result frame whose length is beyond the area (the runner would read past it if it believed the child).
LIES_ABOUT_ITS_LENGTH = (
    FIND
    + """def pairwise_distances(x, y):
    judge = _judge()
    if judge is not None:
        protocol = sys.modules["runner.protocol"]
        header = {"status": "ok", "index": judge["command"].call}
        protocol.write_all(judge["res_w"], protocol.encode(b"r", header, struct.pack("<Q", 1 << 40)))
        while True:
            pass
    return torch.cdist(x, y)
"""
)

# Takes the area away from its own process: its value can no longer be written.
UNMAPS_ITS_AREA = (
    FIND
    + """def pairwise_distances(x, y):
    judge = _judge()
    if judge is not None:
        area = judge["area"]
        area.view.release()
        area.map.close()
    return torch.cdist(x, y)
"""
)

# Remembers its result by where its inputs lie: each call's inputs are new arrays, but the allocator may give
# them the address the last call's had.
CACHES_BY_ADDRESS = """import torch

_seen = {}


def pairwise_distances(x, y):
    key = (x.data_ptr(), y.data_ptr(), tuple(x.shape), tuple(y.shape))
    if key not in _seen:
        _seen[key] = torch.cdist(x, y)
    return _seen[key]
"""


def test_a_value_forged_in_the_area_ahead_of_the_work_is_not_credited(submit: Submit) -> None:
    verdict = submit(FORGES_IN_THE_AREA, PROBLEM)
    assert verdict["status"] in ("wrong_answer", "runtime_error"), speed_seen(verdict)
    assert verdict["speed"] is not None and verdict["speed"]["passed"] is False


def test_a_length_beyond_the_area_is_the_submissions_fault(submit: Submit) -> None:
    verdict = submit(LIES_ABOUT_ITS_LENGTH, PROBLEM)
    assert verdict["status"] == "runtime_error", speed_seen(verdict)
    assert "beyond the area" in verdict["message"], verdict["message"]
    assert timed(submit(FAST, PROBLEM))  # the next is graded as before


def test_a_module_that_takes_its_area_away_is_the_submissions_fault(submit: Submit) -> None:
    verdict = submit(UNMAPS_ITS_AREA, PROBLEM)
    assert verdict["status"] in ("runtime_error", "wrong_answer"), speed_seen(verdict)
    assert verdict["speed"] is not None and verdict["speed"]["passed"] is False
    assert timed(submit(FAST, PROBLEM))


def test_a_cache_keyed_on_the_inputs_address_is_caught(submit: Submit) -> None:
    verdict = submit(CACHES_BY_ADDRESS, PROBLEM)
    assert verdict["status"] == "wrong_answer", speed_seen(verdict)
