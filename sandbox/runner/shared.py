"""A benchmark module's shared area: where the runner puts a region's inputs and the child its values.

Each timed module's child (the subject's, the baseline's, the null module's: timing.py) is forked with one
memory file (memfd) that the runner made, sized once and sealed (it can neither grow nor shrink: a child that
tried could otherwise make the runner's reads fault), mapped by both and closed by both once mapped (no
descriptor of it is left to pass on). Two parts:

    [0, MAX_BENCH_INPUT_BYTES)                      the coming region's inputs, each call's at its own offset,
                                                    written by the runner while the child is stopped;
    [MAX_BENCH_INPUT_BYTES, + max_result_bytes)     a call's value, written by the child before its result frame.

So neither an input nor a value goes through a pipe on the child's clock: a call reads its inputs into arrays
of its own (one copy, as a process given its arguments in memory would) and writes its value (one copy); its
command and its result are a few bytes each. The runner reads a value only when it keeps it, and treats it as
any byte from a sandbox: its length is checked against the area, its bytes are copied out once and decoded on
the trusted side. The child is single-threaded and stopped whenever the runner writes, so a region's inputs are
never in the area before the region starts (execute_bench.py).
"""

from __future__ import annotations

import fcntl
import mmap
import os
import struct

from . import protocol

INPUTS_BYTES = protocol.MAX_BENCH_INPUT_BYTES
LENGTH = struct.Struct("<Q")  # a result frame's body: the length of the value in the area
# fcntl's seals (Linux >= 3.17; the constants are not in every Python's fcntl module).
F_ADD_SEALS, F_SEAL_SEAL, F_SEAL_SHRINK, F_SEAL_GROW = 1033, 0x0001, 0x0002, 0x0004


class AreaError(Exception):
    """A length or an offset outside the area (the child's word about its value, or a bad command)."""


class SharedArea:
    """The runner's side: made before the child is forked (`fd`, passed to it), mapped, then the descriptor closed
    once the child has its copy (forked())."""

    def __init__(self, max_result_bytes: int) -> None:
        self.value_bytes = max_result_bytes
        self.size = INPUTS_BYTES + max_result_bytes
        self.fd: int | None = os.memfd_create("bench-area", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(self.fd, self.size)  # sparse: a page costs memory only once written
            fcntl.fcntl(self.fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
            self.map = mmap.mmap(self.fd, self.size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(self.fd)
            raise

    def forked(self) -> None:
        """The child has its descriptor: the runner's is closed (the mapping stays)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def put_inputs(self, bodies: list[bytes]) -> list[tuple[int, int]]:
        """A region's inputs, one after another from the start; each one's (offset, length). Their sum is bounded
        where they are fetched (MAX_BENCH_INPUT_BYTES); AreaError if it is not."""
        placed, at = [], 0
        for body in bodies:
            if at + len(body) > INPUTS_BYTES:
                raise AreaError(f"a region's inputs come to more than {INPUTS_BYTES} bytes")
            self.map[at : at + len(body)] = body
            placed.append((at, len(body)))
            at += len(body)
        return placed

    def value_length(self, body: bytes) -> int:
        """The length a child's result frame gives for its value (hostile bytes); AreaError if it is not one."""
        if len(body) != LENGTH.size:
            raise AreaError("a result without its value's length")
        (length,) = LENGTH.unpack(body)
        if length > self.value_bytes:
            raise AreaError(f"a value's length of {length} bytes, beyond the area's {self.value_bytes}")
        return length

    def value(self, length: int) -> bytes:
        """A copy of the value a child left in the area (value_length checked it)."""
        return self.map[INPUTS_BYTES : INPUTS_BYTES + length]

    def close(self) -> None:
        self.forked()
        try:
            self.map.close()
        except (BufferError, ValueError):
            pass


class ChildArea:
    """The child's side, mapped from the descriptor it was forked with (which it closes at once)."""

    def __init__(self, fd: int) -> None:
        try:
            size = os.fstat(fd).st_size
            if size <= INPUTS_BYTES:
                raise AreaError("an area too small for a value")
            self.map = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        self.view = memoryview(self.map)
        self.value_bytes = size - INPUTS_BYTES

    def inputs(self, at: int, length: int) -> memoryview:
        """A call's inputs where the runner put them (to be decoded into values of their own: values.decode_value)."""
        if at < 0 or length < 0 or at + length > INPUTS_BYTES:
            raise AreaError(f"inputs at {at} of {length} bytes: outside the area")
        return self.view[at : at + length]

    def put_value(self, parts: list[bytes | memoryview]) -> bytes:
        """A call's value (values.encode_parts) written into the area, one copy; the result frame's body."""
        views = [memoryview(part).cast("B") for part in parts]
        total = sum(view.nbytes for view in views)
        if total > self.value_bytes:
            raise AreaError(f"a value of {total} bytes, beyond the area's {self.value_bytes}")
        at = INPUTS_BYTES
        for view in views:
            self.view[at : at + view.nbytes] = view
            at += view.nbytes
        return LENGTH.pack(total)
