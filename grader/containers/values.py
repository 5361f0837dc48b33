"""Decodes a test's returned value from a sandbox into plain Python and numpy data.

Every count is checked before an array is built: dtypes from a fixed list (protocol.WIRE_DTYPES), each
arriving as itself, shapes of bounded rank, byte counts that must match exactly. No pickle, no object
from the sandbox is ever called.
"""

from __future__ import annotations

import json
import math
import re
import struct
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from grader.containers import protocol

# wire name -> the NumPy dtype its bytes are read as: each name its own dtype, and no two names one dtype,
# so that nothing on this side can take one for another (a bfloat16 tensor is not a float32 one). NumPy has
# no bfloat16 or fp8: ml_dtypes supplies them, bit-exact. Its types take the machine's byte order; the
# wire's is little-endian, as is every machine the service runs on (x86-64, arm64).
DTYPES: dict[str, np.dtype] = {
    "float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
    "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "float8_e4m3fnuz": np.dtype(ml_dtypes.float8_e4m3fnuz),
    "float8_e5m2fnuz": np.dtype(ml_dtypes.float8_e5m2fnuz),
    "float8_e8m0fnu": np.dtype(ml_dtypes.float8_e8m0fnu),
    "float16": np.dtype("<f2"),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float32": np.dtype("<f4"),
    "float64": np.dtype("<f8"),
    "complex64": np.dtype("<c8"),
    "complex128": np.dtype("<c16"),
    "int8": np.dtype("i1"),
    "int16": np.dtype("<i2"),
    "int32": np.dtype("<i4"),
    "int64": np.dtype("<i8"),
    "uint8": np.dtype("u1"),
    "uint16": np.dtype("<u2"),
    "uint32": np.dtype("<u4"),
    "uint64": np.dtype("<u8"),
    "bool": np.dtype("?"),
}
FLOAT_DTYPES = frozenset(name for name in DTYPES if name.startswith(("float", "bfloat", "complex")))
COMPLEX_DTYPES = frozenset(name for name in DTYPES if name.startswith("complex"))
# The machine epsilon of each floating dtype (the gap between 1 and the next value): default tolerances
# scale with it. From ml_dtypes' finfo, which knows NumPy's dtypes too (torch.finfo says 2**-3 for
# float8_e5m2fnuz, whose two mantissa bits make it 2**-2).
EPS: dict[str, float] = {name: float(ml_dtypes.finfo(DTYPES[name]).eps) for name in sorted(FLOAT_DTYPES)}


def wire_name(dtype: np.dtype) -> str | None:
    """The wire name of a NumPy dtype, None for one that no tensor has (by equality: NumPy has several
    spellings of one dtype, 'l' and 'q' for int64)."""
    return next((name for name, wire in DTYPES.items() if wire == dtype), None)


MAX_RANK = protocol.MAX_RANK
MAX_DEPTH = protocol.MAX_VALUE_DEPTH
MAX_NODES = protocol.MAX_VALUE_NODES
MAX_STR = protocol.MAX_STR
MAX_INT_DIGITS = protocol.MAX_INT_DIGITS
MAX_DIM = protocol.MAX_DIM
# Every node costs at most six brackets ({"t": "dict", "items": [[key, {...}]]}).
MAX_MANIFEST_BRACKETS = 6 * MAX_NODES + 16
INT_TEXT = re.compile(r"-?[0-9]+")


class MalformedValue(Exception):
    """The value is malformed: the sandbox broke the format."""


@dataclass(frozen=True, eq=False)
class Tensor:
    """A tensor as data: its wire dtype's name, and an array of exactly that name's NumPy dtype."""

    dtype: str
    array: np.ndarray

    def __post_init__(self) -> None:
        if DTYPES.get(self.dtype) != self.array.dtype:
            raise TypeError(f"a {self.dtype[:40]} tensor cannot hold an array of dtype {self.array.dtype}")

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)


@dataclass(frozen=True, eq=False)
class Opaque:
    """Something a test returned that is not data; it never equals anything."""

    type_name: str


class _Decoder:
    def __init__(self, blob: memoryview) -> None:
        self.blob = blob
        self.offset = 0
        self.nodes = 0

    def node(self, node: Any, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES or depth > MAX_DEPTH:
            raise MalformedValue("value is too large or too deeply nested")
        if not isinstance(node, dict) or not isinstance(node.get("t"), str):
            raise MalformedValue("value node is not an object with a type")
        kind = node["t"]
        if kind in _SCALARS:
            fields, read = _SCALARS[kind]
            _keys(node, fields)
            return read(node)
        if kind in ("list", "tuple"):
            _keys(node, {"t", "items"})
            items = [self.node(item, depth + 1) for item in _items(node, "list")]
            return items if kind == "list" else tuple(items)
        if kind == "dict":
            _keys(node, {"t", "items"})
            return self.mapping(_items(node, "dict"), depth)
        if kind == "tensor":
            return self.tensor(node)
        raise MalformedValue(f"unknown value node type {kind[:40]!r}")

    def mapping(self, pairs: list[Any], depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for pair in pairs:
            if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[0], str):
                raise MalformedValue("dict item is not a [key, value] pair")
            if pair[0] in result or len(pair[0]) > MAX_STR:
                raise MalformedValue("duplicate or oversized dict key")
            result[pair[0]] = self.node(pair[1], depth + 1)
        return result

    def tensor(self, node: dict) -> Tensor:
        _keys(node, {"t", "dtype", "shape"})
        dtype_name, shape = node["dtype"], node["shape"]
        if not isinstance(dtype_name, str) or dtype_name not in DTYPES:
            raise MalformedValue("tensor with a dtype outside the allowed list")
        if (
            not isinstance(shape, list)
            or len(shape) > MAX_RANK
            or not all(type(size) is int and 0 <= size <= MAX_DIM for size in shape)
        ):
            raise MalformedValue("tensor with an invalid shape")
        # numpy refuses a shape whose dimensions multiply past its index type even when one of them is
        # zero (the array would be empty): the non-zero ones are bounded as well.
        if math.prod(size for size in shape if size) > protocol.MAX_ELEMENTS:
            raise MalformedValue("tensor with too many elements")
        dtype = DTYPES[dtype_name]
        numel = math.prod(shape)
        nbytes = numel * dtype.itemsize  # exact Python integers: no overflow
        if nbytes > len(self.blob) - self.offset:
            raise MalformedValue("tensor shape disagrees with the bytes sent")
        array = np.frombuffer(self.blob, dtype=dtype, count=numel, offset=self.offset).reshape(shape)
        # A bool is one byte, 0 or 1: NumPy would keep a 2 as it is, True to its operations and 2 to a view
        # (`mask.view(np.uint8).sum()`), so that one value would answer two ways.
        if dtype_name == "bool" and numel and int(array.view(np.uint8).max()) > 1:
            raise MalformedValue("bool tensor with a byte that is neither 0 nor 1")
        self.offset += nbytes
        return Tensor(dtype_name, array)


def _keys(node: dict, allowed: set[str]) -> None:
    if set(node) != allowed:
        raise MalformedValue("value node with unexpected fields")


def _items(node: dict, kind: str) -> list[Any]:
    if not isinstance(node["items"], list):
        raise MalformedValue(f"{kind} node without items")
    return node["items"]


def _bool(node: dict) -> bool:
    if not isinstance(node["v"], bool):
        raise MalformedValue("bool node without a bool")
    return node["v"]


def _int(node: dict) -> int:
    text = node["v"]
    if not isinstance(text, str) or len(text) > MAX_INT_DIGITS or not INT_TEXT.fullmatch(text):
        raise MalformedValue("int node without digits")
    return int(text)


def _float(node: dict) -> float:
    text = node["v"]
    if not isinstance(text, str) or len(text) > 64:
        raise MalformedValue("float node without a hex float")
    try:
        return float.fromhex(text)
    except (ValueError, OverflowError):
        raise MalformedValue("float node without a hex float") from None


def _str(node: dict) -> str:
    if not isinstance(node["v"], str) or len(node["v"]) > MAX_STR:
        raise MalformedValue("str node without a string")
    return node["v"]


def _opaque(node: dict) -> Opaque:
    if not isinstance(node["type"], str) or len(node["type"]) > 200:
        raise MalformedValue("opaque node without a type name")
    return Opaque(protocol.bounded_text(node["type"], 200))


# kind -> (its fields, how its value is read)
_SCALARS: dict[str, tuple[set[str], Any]] = {
    "none": ({"t"}, lambda node: None),
    "bool": ({"t", "v"}, _bool),
    "int": ({"t", "v"}, _int),
    "float": ({"t", "v"}, _float),
    "str": ({"t", "v"}, _str),
    "opaque": ({"t", "type"}, _opaque),
}


def decode_value(body: bytes) -> Any:
    """The value a test returned, as plain data; MalformedValue, and nothing else, for any bytes."""
    try:
        return _decode(body)
    except MalformedValue:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever hostile bytes provoke is the sandbox's fault
        raise MalformedValue(f"value cannot be decoded ({type(exc).__name__})") from None


def _decode(body: bytes) -> Any:
    if len(body) < 4:
        raise MalformedValue("value is truncated")
    (manifest_len,) = struct.unpack_from(">I", body)
    if manifest_len > len(body) - 4:
        raise MalformedValue("value manifest is truncated")
    try:
        manifest = protocol.loads_bounded(
            body[4 : 4 + manifest_len], protocol.MAX_MANIFEST_DEPTH, max_brackets=MAX_MANIFEST_BRACKETS
        )
    except protocol.FrameError as exc:
        raise MalformedValue(f"value manifest is not valid: {exc}") from None
    # Byte for byte as the sandbox's encoder writes it (values.py: compact JSON): a value's length is the
    # judge's measure of it (a benchmark's null module returns as many bytes), so no padding may lengthen it.
    if json.dumps(manifest, separators=(",", ":")).encode() != body[4 : 4 + manifest_len]:
        raise MalformedValue("value manifest is not in the form the judge writes")
    decoder = _Decoder(memoryview(body)[4 + manifest_len :])
    value = decoder.node(manifest, 0)
    if decoder.offset != len(decoder.blob):
        raise MalformedValue("value has bytes that no tensor claims")
    return value
