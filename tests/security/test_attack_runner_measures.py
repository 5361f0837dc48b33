"""The runner's own measures of a child (sandbox/runner/peak.py), read from the kernel and never from the child,
attacked through what the child controls in them. No Docker: the status files are written here as each kernel
words them.

What must hold:
- a child's name, which it sets itself (prctl PR_SET_NAME, 15 bytes) and which gVisor prints unescaped on the
  status file's first line, never reads as a memory field: a name "\\nVmRSS:\\t0" once made every test of the
  submission report 0 MB under gVisor, and a name "\\nVmHWM:..." hid a test's peak (a white-box review);
- the high-water mark is reset through one descriptor, opened once, for every test of the child;
- a child that lets go of its command pipe after writing its result (it ends, or closes the pipe) has the next
  test charged with that, never told as a timeout that skips the rest (the same review)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox.runner import peak
from tests.unit.runner_harness import HostRunner, job

REAL_FIELDS = b"Umask:\t0022\nState:\tS (sleeping)\nVmPeak:\t  900000 kB\nVmHWM:\t  400000 kB\nVmRSS:\t  300000 kB\n"


class Held(peak.PeakMemory):
    def __init__(self, status: Path) -> None:
        self.pid, self.exit_status, self.memory_mb, self.graced = 1, None, 1024, False
        self.peak_reset, self.rss_seen, self.peak_at_kill = True, None, None
        self._status_fd = os.open(status, os.O_RDONLY)
        self._refs_fd = None


def status_file(tmp_path: Path, name: bytes, fields: bytes = REAL_FIELDS) -> Path:
    path = tmp_path / "status"
    path.write_bytes(b"Name:\t" + name + b"\n" + fields)
    return path


@pytest.mark.parametrize(
    "name",
    [
        b"\nVmRSS:\t0",  # gVisor: the name as set, newline and all
        b"\nVmHWM:\t1",
        b"x\nVmRSS:\t99999",
        b"\nVmRSS:\t0\nVmHWM",
        b"python3",
    ],
)
def test_a_childs_name_never_reads_as_its_memory(tmp_path: Path, name: bytes) -> None:
    assert len(name) <= 15  # what PR_SET_NAME lets a process name itself
    held = Held(status_file(tmp_path, name))
    try:
        assert held._memory() == (400000 // 1024, 300000 // 1024)
        assert held.test_peak_mb() == 400000 // 1024
    finally:
        held.close_memory()


def test_a_name_that_looks_like_a_field_reads_as_nothing_where_the_kernel_has_no_such_field(tmp_path: Path) -> None:
    # gVisor has no VmHWM: a name that spells one must not stand in for the missing field.
    held = Held(status_file(tmp_path, b"\nVmHWM:\t1", b"Umask:\t0022\nVmRSS:\t  300000 kB\n"))
    try:
        assert held._memory() == (None, 300000 // 1024)
    finally:
        held.close_memory()


def test_the_mark_is_reset_through_one_descriptor_for_every_test(tmp_path: Path) -> None:
    if not Path("/proc/self/clear_refs").exists():
        pytest.skip("this kernel has no clear_refs")  # gVisor: the largest VmRSS seen stands for the peak
    held = Held(status_file(tmp_path, b"python3"))
    held.pid = os.getpid()
    try:
        held.reset_peak()
        first = held._refs_fd
        assert held.peak_reset and first is not None
        held.reset_peak()
        assert held.peak_reset and held._refs_fd == first
    finally:
        held.close_memory()
    assert held._refs_fd is None and held._status_fd is None


# A child that writes its test's result itself, then lets go of its command pipe and ends a moment later: the
# runner's next command meets a pipe with no reader before the zygote has reported the end (in a container the
# report comes through the zygote's socket: a child that simply exits at once makes the same race, by chance).
# That was once told as the next test's timeout ("stopped taking commands"), and with skip_after_timeout every
# test after it was skipped.
# The same child that lets go only after a pause ("late") makes the other order certain: the next command is already
# in the pipe when its last reader goes, so nothing fails to be sent and only the pipe's error tells it.
def result_then(then: str, pause: float = 0.0) -> str:
    return (
        "from sandbox.runner import protocol as P\n"
        "from sandbox.runner.messages import Report as R\n"
        "os.write(RES, P.encode(P.CHILD_RESULT, R(P.Outcome.OK, index=INDEX).header(), b'early'))\n"
        f"time.sleep({pause})\n"
        "os.closerange(0, RES)\n"  # its command pipe among them (and its output)
        "os.closerange(RES + 1, 1024)\n" + then
    )


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("then", "pause", "words"),
    [
        ("time.sleep(0.3)\nos._exit(3)", 0.0, "exited (code 3) during test 2"),
        ("time.sleep(30)", 0.0, "closed its command channel during test 2"),
        ("time.sleep(30)", 0.5, "closed its command channel during test 2"),
        ("time.sleep(0.3)\nos._exit(3)", 0.5, "exited (code 3) during test 2"),
    ],
    ids=["ends", "lives-on", "lets-go-late-lives-on", "lets-go-late-ends"],
)
def test_a_child_that_lets_go_of_its_commands_after_a_result_is_charged_with_it_not_timed_out(
    host: HostRunner, then: str, pause: float, words: str
) -> None:
    source = "def f(x):\n    return x\n"
    done = host.run(job(source, result_then(then, pause), "result = 2", "result = 3", skip_after_timeout=True))
    assert done.statuses() == ["ok", "error", "ok"], [frame.header for frame in done.tests]
    assert done.tests[0].body == b"early"
    assert words in done.tests[1].header.message  # type: ignore[union-attr]
    assert done.done is not None and done.done.header.clean  # type: ignore[union-attr]
