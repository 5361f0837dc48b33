"""A timed module's shared area (sandbox/runner/shared.py), both sides in this process and in a forked child:
the runner's inputs read back where it placed them, a value in many parts read back whole, the file's size
sealed against a child that would shrink it under the runner's reads, and every length a child gives checked."""

from __future__ import annotations

import fcntl
import mmap
import os
import struct
from array import array

import pytest

from sandbox.runner import shared
from sandbox.runner.shared import INPUTS_BYTES, AreaError, ChildArea, SharedArea


@pytest.fixture
def area() -> SharedArea:
    made = SharedArea(1 << 20)
    yield made  # type: ignore[misc]
    made.close()


def _child_side(area: SharedArea) -> ChildArea:
    """The child's mapping, from a descriptor of its own (as the zygote passes it)."""
    assert area.fd is not None
    return ChildArea(os.dup(area.fd))


def test_inputs_placed_by_the_runner_are_read_where_the_command_says(area: SharedArea) -> None:
    child = _child_side(area)
    placed = area.put_inputs([b"first", b"", b"third input"])
    assert placed == [(0, 5), (5, 0), (5, 11)]
    assert [bytes(child.inputs(at, length)) for at, length in placed] == [b"first", b"", b"third input"]
    for at, length in ((-1, 4), (0, -1), (INPUTS_BYTES - 3, 4), (INPUTS_BYTES, 1)):
        with pytest.raises(AreaError):
            child.inputs(at, length)


def test_a_value_in_many_parts_reads_back_whole_and_only_as_long_as_said(area: SharedArea) -> None:
    child = _child_side(area)
    parts: list = [b"head", b"", memoryview(bytearray(b"xyz")), memoryview(array("d", [1.5, -2.0]))]
    parts += [bytes([i % 251]) * (i % 7) for i in range(3000)]
    expected = b"".join(bytes(memoryview(part).cast("B")) for part in parts)
    body = child.put_value(parts)
    length = area.value_length(body)
    assert length == len(expected) and area.value(length) == expected
    with pytest.raises(AreaError):  # more than the area holds: never written
        child.put_value([bytes(area.value_bytes + 1)])


@pytest.mark.parametrize(
    "body",
    [b"", b"1234567", b"123456789", struct.pack("<Q", (1 << 20) + 1), struct.pack("<Q", 1 << 63)],
    ids=["empty", "short", "long", "one past the area", "huge"],
)
def test_a_length_that_is_not_one_within_the_area_is_refused(area: SharedArea, body: bytes) -> None:
    with pytest.raises(AreaError):
        area.value_length(body)


def test_the_area_cannot_be_resized_by_whoever_holds_it(area: SharedArea) -> None:
    """A child that shrank it would make the runner's next read of its value fault (SIGBUS), a larger one would
    hold more memory than it was given: its size is sealed before the child has it."""
    fd = os.dup(area.fd)  # type: ignore[arg-type]
    try:
        for size in (0, INPUTS_BYTES, area.size + mmap.PAGESIZE):
            with pytest.raises(PermissionError):
                os.ftruncate(fd, size)
        with pytest.raises(PermissionError):  # nor can the seals be taken off or others added
            fcntl.fcntl(fd, shared.F_ADD_SEALS, 0x0008)  # F_SEAL_WRITE
    finally:
        os.close(fd)


def test_the_runners_descriptor_is_closed_once_the_child_has_its_own(area: SharedArea) -> None:
    fd = area.fd
    assert fd is not None
    area.forked()
    assert area.fd is None
    with pytest.raises(OSError):
        os.fstat(fd)
    area.put_inputs([b"still mapped"])
    assert area.map[:12] == b"still mapped"


def test_a_child_sees_what_the_runner_wrote_and_the_runner_the_childs_value(area: SharedArea) -> None:
    """Across a fork, as the zygote forks a module's child: one mapping of one file, not copies."""
    placed = area.put_inputs([b"inputs of call 7"])
    child_fd = os.dup(area.fd)  # type: ignore[arg-type]
    read_r, read_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            child = ChildArea(child_fd)
            seen = bytes(child.inputs(*placed[0]))
            os.write(read_w, child.put_value([seen.upper()]))
        finally:
            os._exit(0)
    os.close(child_fd)
    os.close(read_w)
    body = os.read(read_r, 8)
    os.close(read_r)
    os.waitpid(pid, 0)
    assert area.value(area.value_length(body)) == b"INPUTS OF CALL 7"
