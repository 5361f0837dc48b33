"""Turns what a test returned into plain data: a JSON manifest plus raw little-endian array bytes.

Body layout: manifest length (u32, big-endian) | manifest (UTF-8 JSON) | array bytes, in the order
the manifest names the arrays. Nodes:
  {"t": "none"} {"t": "bool", "v": b} {"t": "int", "v": "123"} {"t": "float", "v": "0x1.8p+1"}
  {"t": "str", "v": s} {"t": "list"|"tuple", "items": [...]} {"t": "dict", "items": [[key, node]]}
  {"t": "tensor", "dtype": name, "shape": [..]}   (its elements' own bit patterns follow in the array
                                                   section: protocol.WIRE_DTYPES names the dtypes)
  {"t": "opaque", "type": name}      (anything else: only its type's name)
The trusted side checks every count again; nothing here is taken on trust there.
"""

from __future__ import annotations

import json
import struct

import numpy as np
import torch

from . import protocol

# torch dtype -> (wire name, NumPy dtype of the bytes sent). Every tensor goes as its own bit pattern, never
# widened: those NumPy cannot hold (bfloat16, fp8) as a view of the integer type of their size, which the
# trusted side reads back as the dtype itself (ml_dtypes), so that a bfloat16 never passes for a float32.
DTYPES: dict[torch.dtype, tuple[str, str]] = {
    torch.float8_e4m3fn: ("float8_e4m3fn", "<u1"),
    torch.float8_e5m2: ("float8_e5m2", "<u1"),
    torch.float8_e4m3fnuz: ("float8_e4m3fnuz", "<u1"),
    torch.float8_e5m2fnuz: ("float8_e5m2fnuz", "<u1"),
    torch.float8_e8m0fnu: ("float8_e8m0fnu", "<u1"),
    torch.float16: ("float16", "<f2"),
    torch.bfloat16: ("bfloat16", "<i2"),
    torch.float32: ("float32", "<f4"),
    torch.float64: ("float64", "<f8"),
    torch.complex64: ("complex64", "<c8"),
    torch.complex128: ("complex128", "<c16"),
    torch.int8: ("int8", "<i1"),
    torch.int16: ("int16", "<i2"),
    torch.int32: ("int32", "<i4"),
    torch.int64: ("int64", "<i8"),
    torch.uint8: ("uint8", "<u1"),
    torch.uint16: ("uint16", "<u2"),
    torch.uint32: ("uint32", "<u4"),
    torch.uint64: ("uint64", "<u8"),
    torch.bool: ("bool", "|b1"),
}
# The dtypes sent as bits, and the torch integer type of the same size that they are viewed as.
BITS: dict[torch.dtype, torch.dtype] = {
    torch.bfloat16: torch.int16,
    **{dtype: torch.uint8 for dtype in DTYPES if DTYPES[dtype][0].startswith("float8_")},
}
NUMPY_DTYPES = {
    np.dtype(np.float16): "float16",
    np.dtype(np.float32): "float32",
    np.dtype(np.float64): "float64",
    np.dtype(np.complex64): "complex64",
    np.dtype(np.complex128): "complex128",
    np.dtype(np.int8): "int8",
    np.dtype(np.int16): "int16",
    np.dtype(np.int32): "int32",
    np.dtype(np.int64): "int64",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.uint16): "uint16",
    np.dtype(np.uint32): "uint32",
    np.dtype(np.uint64): "uint64",
    np.dtype(np.bool_): "bool",
}
if {name for name, _ in DTYPES.values()} != set(protocol.WIRE_DTYPES) or any(
    np.dtype(bits).itemsize != protocol.WIRE_DTYPES[name] for name, bits in DTYPES.values()
):
    raise ImportError("values.DTYPES disagrees with protocol.WIRE_DTYPES")

MAX_DEPTH = protocol.MAX_VALUE_DEPTH
MAX_NODES = protocol.MAX_VALUE_NODES
MAX_STR = protocol.MAX_STR
MAX_INT_DIGITS = protocol.MAX_INT_DIGITS


class Unencodable(Exception):
    """The returned value cannot be sent: the test fails with this message."""


class TooLarge(Exception):
    """The returned value is larger than the result limit."""


class _Encoder:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.total = 0
        self.nodes = 0
        self.arrays: list[memoryview] = []

    def add_array(self, data: memoryview) -> None:
        self.total += data.nbytes
        if self.total > self.max_bytes:
            raise TooLarge(self.total)
        self.arrays.append(data)

    def node(self, value: object, depth: int) -> dict:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise Unencodable(f"the returned value has more than {MAX_NODES} parts")
        if depth > MAX_DEPTH:
            raise Unencodable(f"the returned value is nested deeper than {MAX_DEPTH}")
        kind = type(value)  # exact types only: a subclass may lie about itself
        scalar = _scalar(value, kind)
        if scalar is not None:
            return scalar
        # A tuple, list or dict of a subclass (a namedtuple, torch.return_types, torch.Size, an OrderedDict)
        # is taken as what it is made of: read through the base type's own methods, which no subclass can
        # change, it travels as a plain tuple, list or dict.
        if isinstance(value, (list, tuple)) and not isinstance(value, torch.Tensor):
            is_list = isinstance(value, list)
            iterator = list.__iter__(value) if is_list else tuple.__iter__(value)  # type: ignore[arg-type]
            items = [self.node(item, depth + 1) for item in iterator]
            return {"t": "list" if is_list else "tuple", "items": items}
        if isinstance(value, dict):
            pairs = []
            for key, item in dict.items(value):  # type: ignore[arg-type]
                if type(key) is not str:
                    raise Unencodable("dictionary keys in the returned value must be strings")
                pairs.append([str.__str__(key), self.node(item, depth + 1)])
            return {"t": "dict", "items": pairs}
        if isinstance(value, torch.Tensor):
            return self.tensor(value)
        if kind is np.ndarray and np.ndarray.__getattribute__(value, "ndim") == 0:  # type: ignore[arg-type]
            number = _numpy_number(np.ndarray.item(value))  # type: ignore[arg-type]
            if number is not None:
                return number
        if kind is np.ndarray:
            return self.ndarray(value)  # type: ignore[arg-type]
        number = _numpy_number(value)
        if number is not None:
            return number
        if isinstance(value, np.generic) and type(value) in {np.dtype(t).type for t in NUMPY_DTYPES}:
            return self.ndarray(np.asarray(value))
        return _opaque(kind)

    def tensor(self, value: torch.Tensor) -> dict:
        with torch._C.DisableTorchFunction():
            tensor = torch.Tensor.detach(value)
            if tensor.is_nested:  # its parts' shapes differ: no one shape to send
                return {"t": "opaque", "type": "nested tensor"}
            if tensor.is_meta or tensor.device.type != "cpu":
                return {"t": "opaque", "type": "tensor without data (meta or non-CPU)"}
            if tensor.layout != torch.strided:  # sparse, mkldnn: a layout the wire does not carry, never densified
                return {"t": "opaque", "type": f"tensor of layout {str(tensor.layout)[:40]}"}
            if tensor.dtype not in DTYPES:
                return {"t": "opaque", "type": f"tensor of dtype {str(tensor.dtype)[:40]}"}
            name, np_dtype = DTYPES[tensor.dtype]
            shape = [int(size) for size in tensor.shape]
            itemsize = np.dtype(np_dtype).itemsize
            numel = 1
            for size in shape:
                numel *= size
            # Checked before anything is materialised: an expanded view can claim 10**12 elements.
            if self.total + numel * itemsize > self.max_bytes:
                raise TooLarge(numel * itemsize)
            _check_shape(shape)
            if tensor.is_conj():
                tensor = tensor.resolve_conj()
            if tensor.is_neg():
                tensor = tensor.resolve_neg()
            if tensor.dtype in BITS:
                tensor = tensor.view(BITS[tensor.dtype])
            array = tensor.contiguous().numpy()
        self.add_array(_wire_buffer(array, np_dtype))
        return {"t": "tensor", "dtype": name, "shape": shape}

    def ndarray(self, value: np.ndarray) -> dict:
        dtype = np.dtype(value.dtype)
        if dtype.newbyteorder("=") not in NUMPY_DTYPES and dtype not in NUMPY_DTYPES:
            return {"t": "opaque", "type": "numpy array of an unsupported dtype"}
        name = NUMPY_DTYPES.get(dtype) or NUMPY_DTYPES[dtype.newbyteorder("=")]
        if self.total + value.nbytes > self.max_bytes:
            raise TooLarge(value.nbytes)
        _check_shape([int(s) for s in value.shape])
        self.add_array(_wire_buffer(np.ascontiguousarray(value), dtype.newbyteorder("<").str))
        return {"t": "tensor", "dtype": name, "shape": [int(s) for s in value.shape]}


def _wire_buffer(array: np.ndarray, wire_dtype: str) -> memoryview:
    """The array's bytes as the wire carries them (little-endian, and a bool as exactly 0 or 1: a torch bool
    viewed from a uint8 can hold a 2, which would equal True on the trusted side and yet fail all()), as a view
    of a C-contiguous array: the array itself where it is already so (no copy is made of a value to send it)."""
    if array.dtype == np.bool_:
        array = array.view(np.uint8).astype(np.bool_)
    else:
        array = np.ascontiguousarray(array.astype(wire_dtype, copy=False))
    return memoryview(array.reshape(-1)).cast("B")


def _scalar(value: object, kind: type) -> dict | None:
    """None, a bool, an int, a float or a str as a node; None for anything else."""
    if value is None:
        return {"t": "none"}
    if kind is bool:
        return {"t": "bool", "v": bool(value)}
    if kind is int:
        text = int.__repr__(value)  # type: ignore[arg-type]
        if len(text) > MAX_INT_DIGITS:
            raise Unencodable("an integer in the returned value is too large")
        return {"t": "int", "v": text}
    if kind is float:
        return {"t": "float", "v": float.hex(value)}  # type: ignore[arg-type]
    if kind is str:
        if len(value) > MAX_STR:  # type: ignore[arg-type]
            raise Unencodable("a string in the returned value is too long")
        return {"t": "str", "v": str.__str__(value)}  # type: ignore[arg-type]
    return None


NUMPY_INTS = {np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64}
NUMPY_FLOATS = {np.float16, np.float32, np.float64, np.longdouble}


def _numpy_number(value: object) -> dict | None:
    """A NumPy bool, integer or real float scalar (or the Python number a 0-d array's item() gives) as the
    Python number node of the same value: numbers are numbers, whichever library computed them. Exact
    types only, so that no subclass's __int__ or __float__ runs."""
    kind = type(value)
    if kind in (bool, int, float):
        return _scalar(value, kind)
    if kind is np.bool_:
        return {"t": "bool", "v": bool(value)}
    if kind in NUMPY_INTS:
        return _scalar(int(value), int)  # type: ignore[call-overload]
    if kind in NUMPY_FLOATS:
        return _scalar(float(value), float)  # type: ignore[arg-type]  # float16/32/64 widen exactly
    return None


def _check_shape(shape: list[int]) -> None:
    """The bounds the trusted side enforces on a shape, checked here so that the test fails clearly."""
    if len(shape) > protocol.MAX_RANK:
        raise Unencodable(f"a returned tensor has more than {protocol.MAX_RANK} dimensions")
    elements = 1
    for size in shape:
        if size > protocol.MAX_DIM:
            raise Unencodable("a returned tensor has a dimension that is too long")
        elements *= max(size, 1)
    if elements > protocol.MAX_ELEMENTS:
        raise Unencodable("a returned tensor has too many elements")


def _opaque(kind: type) -> dict:
    """A value that is not data (an arbitrary object): sent as its type's name only, never inspected
    further, so the trusted side sees a type mismatch and the test fails as a wrong answer."""
    try:
        name = type.__getattribute__(kind, "__qualname__")
        name = name if type(name) is str else "object"
    except BaseException:  # noqa: BLE001 - a hostile metaclass
        name = "object"
    return {"t": "opaque", "type": name[:200]}


def encode_parts(value: object, max_bytes: int) -> list[bytes | memoryview]:
    """The value's encoding in parts, to be written in a row: its manifest, then each array's bytes as a view of
    the array itself. Nothing is copied: a benchmark's call pays for its value's writing once (one copy into its
    shared area: shared.py), as any process that hands its result on would."""
    encoder = _Encoder(max_bytes)
    manifest = json.dumps(encoder.node(value, 0), separators=(",", ":")).encode()
    if len(manifest) + encoder.total > max_bytes:
        raise TooLarge(len(manifest) + encoder.total)
    return [struct.pack(">I", len(manifest)) + manifest, *encoder.arrays]


def encode_value(value: object, max_bytes: int) -> bytes:
    """The value's encoding, whole (encode_parts, joined): the bytes are the value's as it was when encoded."""
    return b"".join(encode_parts(value, max_bytes))


# -- back to values: a benchmark's inputs, made in the inputs' child, decoded in the child of each module ------
_BY_NAME = {name: (dtype, np_dtype) for dtype, (name, np_dtype) in DTYPES.items()}


def decode_value(body: bytes | memoryview) -> object:
    """What encode_value made, back as Python values and torch tensors (each its own, writable). For the judge's
    own bytes only: a benchmark's inputs, passed by the runner from the child that made them."""
    (length,) = struct.unpack_from(">I", body)
    data = memoryview(body)[4 + length :]
    offset = 0

    def take(np_dtype: str, shape: list[int]) -> np.ndarray:
        nonlocal offset
        size = (int(np.prod(shape)) if shape else 1) * np.dtype(np_dtype).itemsize
        array = np.frombuffer(data[offset : offset + size], dtype=np_dtype).reshape(shape).copy()
        offset += size
        return array

    return _decoded(json.loads(bytes(body[4 : 4 + length])), take)


def _decoded(manifest: dict, take) -> object:  # type: ignore[no-untyped-def]
    """The value a manifest names, each tensor's array from take(NumPy dtype, shape), in the manifest's order."""

    def node(item: dict) -> object:
        kind = item["t"]
        if kind in ("list", "tuple"):
            items = [node(each) for each in item["items"]]
            return items if kind == "list" else tuple(items)
        if kind == "dict":
            return {key: node(each) for key, each in item["items"]}
        if kind == "tensor":
            dtype, np_dtype = _BY_NAME[item["dtype"]]
            tensor = torch.from_numpy(take(np_dtype, [int(size) for size in item["shape"]]))
            return tensor.view(dtype) if dtype in BITS else tensor
        scalars = {"none": lambda: None, "bool": lambda: bool(item["v"]), "int": lambda: int(item["v"])}
        scalars.update({"float": lambda: float.fromhex(item["v"]), "str": lambda: str(item["v"])})
        if kind in scalars:
            return scalars[kind]()
        raise ValueError(f"a value of kind {kind!r} cannot be decoded")

    return node(manifest)
