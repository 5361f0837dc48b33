"""A test's peak memory: the runner's measurement (sandbox/runner/child.py, against a real process of this
host's kernel), the bounds the grader decodes it within (a hostile value refused), and how it is shown."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

from grader.client import _test_line
from grader.containers.frames import FrameDecoder, FrameError, encode
from grader.containers.protocol import MAX_MEMORY_MB, TEST
from grader.web.numbers import fmt_mb

RUNNER = Path(__file__).resolve().parents[2] / "sandbox" / "runner"
TEST_HEADER = {"index": 0, "status": "ok", "time_ms": 1.5}


# -- decoding --------------------------------------------------------------------------------------------
def decode(header: dict) -> object:
    (frame,) = FrameDecoder(1024).feed(encode(TEST, header))
    return frame.header


@pytest.mark.parametrize("memory", [0, 412, MAX_MEMORY_MB])
def test_a_memory_within_its_bounds_decodes(memory: int) -> None:
    assert decode({**TEST_HEADER, "memory_mb": memory}).memory_mb == memory  # type: ignore[attr-defined]


def test_a_test_without_a_memory_is_none() -> None:
    assert decode(TEST_HEADER).memory_mb is None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "memory",
    [-1, MAX_MEMORY_MB + 1, 2**70, 10**400, 412.0, "412", True, [412], {"mb": 412}],
    ids=["negative", "over-the-cap", "huge", "beyond-any-integer", "float", "string", "bool", "list", "object"],
)
def test_a_hostile_memory_is_refused(memory: object) -> None:
    with pytest.raises(FrameError, match="invalid T header"):
        decode({**TEST_HEADER, "memory_mb": memory})


# -- the runner's measurement ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def child_module() -> ModuleType:
    """sandbox/runner/child.py: the runner's hold on a child imports without torch or a container."""
    from sandbox.runner import child

    return child


ALLOCATES = """\
import mmap, sys
sys.stdin.readline()
block = mmap.mmap(-1, 300 << 20)
for offset in range(0, 300 << 20, 4096):
    block[offset] = 1
block.close()
print("freed", flush=True)
sys.stdin.readline()
"""


def held_child(child_module: ModuleType, pid: int) -> object:
    proc = object.__new__(child_module.Child)
    proc.pid, proc.exit_status = pid, None
    proc.peak_reset, proc.rss_seen, proc.peak_at_kill = False, None, None
    proc._status_fd = proc._refs_fd = None
    return proc


def test_the_peak_is_the_tests_own_once_the_high_water_mark_is_reset(child_module: ModuleType) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", ALLOCATES], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        proc = held_child(child_module, process.pid)
        time.sleep(0.2)
        proc.reset_peak()
        if not proc.peak_reset:
            pytest.skip("this kernel does not let a process reset its child's high-water mark")
        before = proc.test_peak_mb()
        process.stdin.write("go\n")
        process.stdin.flush()
        assert process.stdout.readline().strip() == "freed"
        during = proc.test_peak_mb()  # allocated and freed: the high-water mark remembers it
        assert before is not None and during is not None and during >= before + 290, (before, during)
        proc.reset_peak()  # the next test: from what the process holds now
        after = proc.test_peak_mb()
        assert after is not None and after < during - 250, (during, after)
    finally:
        process.kill()
        process.wait()
    proc.exit_status = 0  # it ended by itself: nothing honest to report
    assert proc.test_peak_mb() is None


def test_without_a_reset_there_is_no_peak_rather_than_the_process_s(child_module: ModuleType) -> None:
    proc = held_child(child_module, 1)
    proc._memory = lambda: (900, 300)  # a high-water mark that could not be reset: the process's since it began
    assert proc.test_peak_mb() is None


def test_without_a_high_water_mark_the_largest_resident_size_seen_stands_for_it(child_module: ModuleType) -> None:
    proc = held_child(child_module, 1)  # gVisor: VmRSS only, no clear_refs
    readings = iter([(None, 500), (None, 800), (None, 450)])
    proc._memory = lambda: next(readings)
    proc._sample_memory()
    proc._sample_memory()
    assert proc.test_peak_mb() == 800  # sampled 500 and 800, now 450
    proc._memory = lambda: (None, None)  # ended
    assert proc.test_peak_mb() is None


# -- shown -----------------------------------------------------------------------------------------------
def test_the_page_and_the_terminal_show_the_memory_with_its_limit() -> None:
    assert fmt_mb(412, 1024) == "412 MB of 1024 MB"
    assert fmt_mb(412) == "412 MB"
    assert fmt_mb(None, 1024) == fmt_mb(-1, 1024) == fmt_mb(True, 1024) == fmt_mb(1.5, 1024) == ""
    line = _test_line({"name": "a", "status": "passed", "time_ms": 12.0, "memory_mb": 412, "memory_limit_mb": 1024})
    assert "12 ms · 412 MB of 1024 MB" in line
    assert "MB" not in _test_line({"name": "a", "status": "passed", "time_ms": 12.0, "memory_mb": None})
