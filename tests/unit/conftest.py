"""Shared helpers for the unit tests of the trusted side (grader/): no Docker, no torch.

Everything a sandbox would send is built here by hand, byte by byte, so that the tests depend only
on the documented wire formats and never on the encoder that runs inside the sandbox.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from grader.containers.frames import PREFIX
from grader.containers.protocol import MAGIC


# -- values: u32 (big-endian) manifest length | JSON manifest | raw little-endian array bytes ----------
def _make_body(manifest: Any, *arrays: np.ndarray | bytes, manifest_bytes: bytes | None = None) -> bytes:
    """A value body: `manifest` as the judge writes it (compact JSON; or `manifest_bytes` verbatim), then each
    array's raw bytes in order.

    Arrays are written little-endian whatever their byte order; `bytes` are appended as they are.
    """
    head = manifest_bytes if manifest_bytes is not None else json.dumps(manifest, separators=(",", ":")).encode()
    blobs = []
    for array in arrays:
        if isinstance(array, bytes):
            blobs.append(array)
        else:
            array = np.ascontiguousarray(array)
            blobs.append(array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes())
    return struct.pack(">I", len(head)) + head + b"".join(blobs)


@pytest.fixture
def make_body() -> Callable[..., bytes]:
    return _make_body


def _tensor_node(dtype: str, shape: list[Any] | Any) -> dict[str, Any]:
    return {"t": "tensor", "dtype": dtype, "shape": shape}


@pytest.fixture
def tensor_node() -> Callable[..., dict[str, Any]]:
    return _tensor_node


# -- frames: b"TJ" | kind | u32 header length | u32 body length | header | body ------------------------
def _raw_frame(
    kind: bytes,
    header: dict[str, Any] | bytes,
    body: bytes = b"",
    *,
    magic: bytes = MAGIC,
    head_len: int | None = None,
    body_len: int | None = None,
) -> bytes:
    """A frame built by hand; lengths may be overridden to lie about what follows."""
    head = header if isinstance(header, bytes) else json.dumps(header).encode()
    prefix = PREFIX.pack(
        magic,
        kind,
        len(head) if head_len is None else head_len,
        len(body) if body_len is None else body_len,
    )
    return prefix + head + body


@pytest.fixture
def raw_frame() -> Callable[..., bytes]:
    return _raw_frame


# -- problems -----------------------------------------------------------------------------------------
TINY_PROBLEM = """\
id: tiny-problem
title: Tiny Problem
difficulty: easy
tags: [demo]
statement: |
  Return twice the input.
starter_code: |
  def double(x):
      pass
entry_points: [double]
reference: |
  def double(x):
      return 2 * x
tests:
  - name: first
    visible: true
    weight: 1
    code: |
      return {"out": double(torch.ones(3))}
    check: {out: {rtol: 1.0e-5, atol: 1.0e-6}}
    trivial: its answer is one number everywhere
  - name: second
    weight: 2
    seed: fixed
    code: |
      return {"out": double(torch.zeros(2))}
    trivial: its answer is all zeros
pitfalls:
  - name: identity
    hint: Multiply by two.
    code: |
      def double(x):
          return x
"""


@pytest.fixture
def problem_yaml() -> str:
    """A minimal valid problem file (two tests, one pitfall, no limits)."""
    return TINY_PROBLEM


def _mutate(text: str, old: str, new: str) -> str:
    """`text` with the single occurrence of `old` replaced; fails loudly if the fixture drifted."""
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in the fixture"
    return text.replace(old, new)


@pytest.fixture
def mutate() -> Callable[[str, str, str], str]:
    return _mutate


def _line_of(text: str, needle: str, occurrence: int = 1) -> int:
    """1-based number of the line holding the `occurrence`-th line that contains `needle`."""
    hits = [number for number, line in enumerate(text.splitlines(), start=1) if needle in line]
    assert len(hits) >= occurrence, f"{needle!r} is not in the text {occurrence} times"
    return hits[occurrence - 1]


@pytest.fixture
def line_of() -> Callable[..., int]:
    return _line_of
