"""grader/containers/values.py: a test's returned value, decoded from hostile bytes into plain data.

Bodies are built by hand (tests/unit/conftest.py: make_body), following the node format of
sandbox/runner/values.py, which is not imported here (it needs torch).
"""

from __future__ import annotations

import math
import struct
import tracemalloc

import numpy as np
import pytest

from grader.containers import protocol
from grader.containers.values import (
    DTYPES,
    FLOAT_DTYPES,
    MAX_DEPTH,
    MAX_INT_DIGITS,
    MAX_NODES,
    MAX_RANK,
    MAX_STR,
    MalformedValue,
    Tensor,
    decode_value,
    wire_name,
)


def nested_lists(depth: int) -> dict:
    """`depth` list nodes around a none node: the none sits at depth `depth`."""
    node: dict = {"t": "none"}
    for _ in range(depth):
        node = {"t": "list", "items": [node]}
    return node


def sample_array(dtype_name: str, shape: tuple[int, ...]) -> np.ndarray:
    dtype = DTYPES[dtype_name]
    count = math.prod(shape)
    base = np.arange(count, dtype=np.float64) - count // 2
    if dtype_name == "bool":
        data = base.astype(np.int64) % 3 == 0
    elif dtype_name.startswith("complex"):
        data = base * 0.5 - 1j * base
    elif dtype_name == "float8_e8m0fnu":  # powers of two only
        data = 2.0 ** (base % 8 - 3)
    elif dtype_name in FLOAT_DTYPES:
        data = base * 0.25
    elif dtype_name.startswith("uint"):
        data = base + count
    else:
        data = base
    return data.astype(dtype).reshape(shape)


# -- scalars -----------------------------------------------------------------------------------------------
def test_none(make_body) -> None:
    assert decode_value(make_body({"t": "none"})) is None


@pytest.mark.parametrize("value", [True, False])
def test_bool(make_body, value: bool) -> None:
    assert decode_value(make_body({"t": "bool", "v": value})) is value


@pytest.mark.parametrize(
    "value",
    [0, 1, -1, 7, 2**31, -(2**63), 2**64 + 1, 3**500, -(10 ** (MAX_INT_DIGITS - 2))],
    ids=["zero", "one", "minus-one", "seven", "2^31", "-2^63", "2^64+1", "3^500", "huge-negative"],
)
def test_int(make_body, value: int) -> None:
    got = decode_value(make_body({"t": "int", "v": str(value)}))
    assert type(got) is int
    assert got == value


def test_int_with_the_maximum_number_of_digits(make_body) -> None:
    text = "9" * MAX_INT_DIGITS
    assert decode_value(make_body({"t": "int", "v": text})) == int(text)


@pytest.mark.parametrize(
    "value",
    [0.0, 1.5, -2.75, 0.1, 1e300, -1e-300, 5e-324, 1.7976931348623157e308, math.pi, math.inf, -math.inf],
)
def test_float(make_body, value: float) -> None:
    got = decode_value(make_body({"t": "float", "v": float.hex(value)}))
    assert type(got) is float
    assert got == value


def test_float_negative_zero_keeps_its_sign(make_body) -> None:
    got = decode_value(make_body({"t": "float", "v": float.hex(-0.0)}))
    assert got == 0.0
    assert math.copysign(1.0, got) == -1.0


def test_float_nan(make_body) -> None:
    got = decode_value(make_body({"t": "float", "v": float.hex(math.nan)}))
    assert type(got) is float
    assert math.isnan(got)


@pytest.mark.parametrize("value", ["", "hello", "ünïcødé ☃ \U0001f600", "a\x00b", "x" * MAX_STR])
def test_str(make_body, value: str) -> None:
    assert decode_value(make_body({"t": "str", "v": value})) == value


# -- containers ------------------------------------------------------------------------------------------
def test_list_and_tuple_keep_their_type(make_body) -> None:
    items = [{"t": "int", "v": "1"}, {"t": "str", "v": "a"}, {"t": "none"}]
    as_list = decode_value(make_body({"t": "list", "items": items}))
    as_tuple = decode_value(make_body({"t": "tuple", "items": items}))
    assert type(as_list) is list and as_list == [1, "a", None]
    assert type(as_tuple) is tuple and as_tuple == (1, "a", None)


def test_empty_containers(make_body) -> None:
    assert decode_value(make_body({"t": "list", "items": []})) == []
    assert decode_value(make_body({"t": "tuple", "items": []})) == ()
    assert decode_value(make_body({"t": "dict", "items": []})) == {}


def test_dict_keeps_keys_values_and_order(make_body) -> None:
    manifest = {
        "t": "dict",
        "items": [["z", {"t": "int", "v": "1"}], ["a", {"t": "bool", "v": False}], ["", {"t": "none"}]],
    }
    got = decode_value(make_body(manifest))
    assert got == {"z": 1, "a": False, "": None}
    assert list(got) == ["z", "a", ""]


def test_nesting_up_to_the_limit_is_accepted(make_body) -> None:
    got = decode_value(make_body(nested_lists(MAX_DEPTH)))
    for _ in range(MAX_DEPTH):
        assert isinstance(got, list) and len(got) == 1
        got = got[0]
    assert got is None


def test_node_count_up_to_the_limit_is_accepted(make_body) -> None:
    manifest = {"t": "list", "items": [{"t": "none"}] * (MAX_NODES - 1)}  # plus the list itself
    assert decode_value(make_body(manifest)) == [None] * (MAX_NODES - 1)


# -- tensors ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 3), (), (0,), (3, 0, 2), (1,) * MAX_RANK], ids=str)
@pytest.mark.parametrize("dtype_name", sorted(DTYPES))
def test_tensor_round_trip(make_body, tensor_node, dtype_name: str, shape: tuple[int, ...]) -> None:
    array = sample_array(dtype_name, shape)
    got = decode_value(make_body(tensor_node(dtype_name, list(shape)), array))
    assert isinstance(got, Tensor)
    assert got.dtype == dtype_name
    assert got.shape == shape
    assert got.array.dtype == DTYPES[dtype_name]
    assert got.array.tobytes() == array.tobytes()  # bit for bit (NaN included)


def test_every_dtype_is_tested() -> None:
    # The parametrisation above covers DTYPES as it is; this pins the wire names the runner sends.
    assert set(DTYPES) == {
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e4m3fnuz",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "complex64",
        "complex128",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "bool",
    }
    assert {name: DTYPES[name].itemsize for name in DTYPES} == protocol.WIRE_DTYPES


def test_tensor_bytes_are_little_endian(make_body, tensor_node) -> None:
    body = make_body(tensor_node("int32", [2]), b"\x01\x00\x00\x00\x00\x01\x00\x00")
    np.testing.assert_array_equal(decode_value(body).array, [1, 256])


def test_float_tensor_special_values(make_body, tensor_node) -> None:
    array = np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45], dtype="<f4")
    got = decode_value(make_body(tensor_node("float32", [5]), array)).array
    assert np.isnan(got[0]) and got[1] == np.inf and got[2] == -np.inf
    assert np.signbit(got[3]) and got[4] == array[4]


def test_several_tensors_take_their_bytes_in_manifest_order(make_body, tensor_node) -> None:
    first = np.arange(6, dtype="<i8").reshape(2, 3)
    second = np.array([True, False, True])
    third = np.array([[1.5]], dtype="<f8")
    manifest = {
        "t": "dict",
        "items": [
            ["a", tensor_node("int64", [2, 3])],
            ["b", {"t": "list", "items": [tensor_node("bool", [3]), {"t": "int", "v": "5"}]}],
            ["c", {"t": "tuple", "items": [tensor_node("float64", [1, 1])]}],
        ],
    }
    got = decode_value(make_body(manifest, first, second, third))
    np.testing.assert_array_equal(got["a"].array, first)
    np.testing.assert_array_equal(got["b"][0].array, second)
    assert got["b"][1] == 5
    np.testing.assert_array_equal(got["c"][0].array, third)


# -- every dtype arrives as itself -----------------------------------------------------------------------
def test_each_wire_name_is_one_numpy_dtype_and_no_two_share_one() -> None:
    for name, dtype in DTYPES.items():
        assert wire_name(dtype) == name
        assert [other for other in DTYPES if DTYPES[other] == dtype] == [name]
    assert wire_name(np.dtype("q")) == wire_name(np.dtype("l")) == "int64"  # two spellings of one dtype
    assert wire_name(np.dtype("<U4")) is None and wire_name(np.dtype("float128")) is None


# The bit pattern torch gives 1.0 in each dtype, and a pattern that only that dtype reads so (torch 2.13).
KNOWN_BITS = {
    "bfloat16": (b"\x80\x3f", {b"\x80\x7f": math.inf, b"\xc1\x7f": math.nan, b"\x80\x3d": 0.0625}),
    "float8_e4m3fn": (b"\x38", {b"\x7e": 448.0, b"\x7f": math.nan, b"\x80": -0.0}),
    "float8_e5m2": (b"\x3c", {b"\x7c": math.inf, b"\x7b": 57344.0, b"\x7f": math.nan}),
    "float8_e4m3fnuz": (b"\x40", {b"\x7f": 240.0, b"\x80": math.nan}),
    "float8_e5m2fnuz": (b"\x40", {b"\x7f": 57344.0, b"\x80": math.nan}),
    "float8_e8m0fnu": (b"\x7f", {b"\x00": 2.0**-127, b"\x80": 2.0, b"\xff": math.nan}),
}


@pytest.mark.parametrize("dtype_name", sorted(KNOWN_BITS))
def test_a_dtype_numpy_lacks_arrives_as_itself_from_its_bit_pattern(make_body, tensor_node, dtype_name: str) -> None:
    one, others = KNOWN_BITS[dtype_name]
    body = make_body(tensor_node(dtype_name, [1 + len(others)]), one + b"".join(others))
    got = decode_value(body)
    assert got.dtype == dtype_name and got.array.dtype == DTYPES[dtype_name]
    assert got.array.dtype not in (np.dtype("f2"), np.dtype("f4"), np.dtype("f8"))
    values = got.array.astype(np.float64)
    assert values[0] == 1.0
    for value, want in zip(values[1:], others.values(), strict=True):
        assert (math.isnan(value) and math.isnan(want)) or (
            value == want and math.copysign(1, value) == math.copysign(1, want)
        )


@pytest.mark.parametrize("dtype_name", sorted(KNOWN_BITS))
def test_every_bit_pattern_of_a_dtype_numpy_lacks_survives(make_body, tensor_node, dtype_name: str) -> None:
    size = protocol.WIRE_DTYPES[dtype_name]
    assert size <= 2  # every pattern of a narrow dtype: 65,536 at most
    patterns = np.arange(256**size, dtype=f"<u{size}")
    got = decode_value(make_body(tensor_node(dtype_name, [patterns.size]), patterns))
    assert got.array.view(f"<u{size}").tobytes() == patterns.tobytes()


@pytest.mark.parametrize("dtype_name", sorted(DTYPES))
def test_the_bytes_of_a_tensor_are_exactly_shape_times_its_itemsize(make_body, tensor_node, dtype_name: str) -> None:
    itemsize = protocol.WIRE_DTYPES[dtype_name]
    decode_value(make_body(tensor_node(dtype_name, [3]), b"\x00" * 3 * itemsize))
    for wrong in (3 * itemsize - 1, 3 * itemsize + 1, 3 * 4 if itemsize != 4 else 3 * 8):
        with pytest.raises(MalformedValue):
            decode_value(make_body(tensor_node(dtype_name, [3]), b"\x00" * wrong))


def test_a_bfloat16_is_not_a_float32(make_body, tensor_node) -> None:
    got = decode_value(make_body(tensor_node("bfloat16", [2]), b"\x80\x3f\x20\xc0"))
    assert got.dtype == "bfloat16" and got.array.dtype != np.dtype("float32")
    assert got.array.astype(np.float64).tolist() == [1.0, -2.5]
    # The body of the old format (bfloat16 widened to float32 bytes) is refused, not read as other numbers.
    with pytest.raises(MalformedValue):
        decode_value(make_body(tensor_node("bfloat16", [2]), np.array([1.0, -2.5], dtype="<f4")))


def test_a_tensor_holds_only_an_array_of_its_own_dtype() -> None:
    Tensor("bfloat16", np.zeros(2, DTYPES["bfloat16"]))
    for name, array in [("bfloat16", np.zeros(2, "f4")), ("float32", np.zeros(2, DTYPES["bfloat16"])),
                        ("uint8", np.zeros(2, bool)), ("complex32", np.zeros(2, "c8"))]:  # fmt: skip
        with pytest.raises(TypeError):
            Tensor(name, array)


@pytest.mark.parametrize("byte", [2, 0x80, 0xFF])
def test_a_bool_byte_other_than_0_or_1_is_malformed(make_body, tensor_node, byte: int) -> None:
    # NumPy would keep the byte: True to its operations, and 2 to a view of the bytes.
    with pytest.raises(MalformedValue, match="neither 0 nor 1"):
        decode_value(make_body(tensor_node("bool", [3]), bytes([1, byte, 0])))
    assert decode_value(make_body(tensor_node("bool", [3]), bytes([1, 1, 0]))).array.tolist() == [True, True, False]


# -- malformed: every one raises MalformedValue, never anything else ---------------------------------------
def raw_manifest(text: bytes, tail: bytes = b"") -> bytes:
    return struct.pack(">I", len(text)) + text + tail


MALFORMED_BODIES = [
    pytest.param(b"", id="empty"),
    pytest.param(b"\x00\x00\x00", id="shorter-than-length"),
    pytest.param(struct.pack(">I", 100) + b'{"t": "none"}', id="manifest-truncated"),
    pytest.param(struct.pack(">I", 2**32 - 1), id="manifest-length-huge"),
    pytest.param(struct.pack(">I", 0), id="manifest-empty"),
    pytest.param(raw_manifest(b'{"t": "none"'), id="manifest-unclosed"),
    pytest.param(raw_manifest(b"not json"), id="manifest-not-json"),
    pytest.param(raw_manifest(b'\xff{"t": "none"}'), id="manifest-not-utf8"),
    pytest.param(raw_manifest(b"[" * 100_000 + b"]" * 100_000), id="manifest-json-nested-too-deep"),
    pytest.param(raw_manifest(b'{"t":"none"}', b"\x00"), id="leftover-byte-without-tensor"),
    # Valid JSON, but not as the judge writes it: padding would lengthen a value without its bytes (a benchmark's
    # null module returns as many bytes as a module's value has).
    pytest.param(raw_manifest(b'{"t": "none"}'), id="manifest-not-compact"),
    pytest.param(raw_manifest(b'{"t":"none"}' + b" " * 4096), id="manifest-padded"),
    pytest.param(raw_manifest(b'{"t":"str","v":"\\u0041"}'), id="manifest-escaped-otherwise"),
]


@pytest.mark.parametrize("body", MALFORMED_BODIES)
def test_malformed_body(body: bytes) -> None:
    with pytest.raises(MalformedValue):
        decode_value(body)


def _node_cases() -> list:
    t = lambda dtype, shape: {"t": "tensor", "dtype": dtype, "shape": shape}  # noqa: E731
    pair = lambda key, node: [key, node]  # noqa: E731
    cases = [
        # not a node
        ([1, 2], "manifest-is-a-list"),
        ("none", "manifest-is-a-string"),
        (None, "manifest-is-null"),
        ({}, "node-without-type"),
        ({"t": 1}, "type-not-a-string"),
        ({"t": None}, "type-null"),
        # unknown types
        ({"t": "object"}, "unknown-type-object"),
        ({"t": "pickle", "v": "gASV"}, "unknown-type-pickle"),
        ({"t": "ndarray", "dtype": "float32", "shape": []}, "unknown-type-ndarray"),
        ({"t": "NONE"}, "type-wrong-case"),
        # extra or missing fields
        ({"t": "none", "v": None}, "none-with-value"),
        ({"t": "bool", "v": True, "x": 1}, "bool-extra-field"),
        ({"t": "int", "v": "1", "base": 16}, "int-extra-field"),
        ({"t": "str", "v": "a", "encoding": "utf-8"}, "str-extra-field"),
        ({"t": "list", "items": [], "len": 0}, "list-extra-field"),
        ({**t("float32", []), "strides": [4]}, "tensor-extra-field"),
        ({"t": "bool"}, "bool-without-value"),
        ({"t": "list"}, "list-without-items"),
        ({"t": "tensor", "dtype": "float32"}, "tensor-without-shape"),
        ({"t": "tensor", "shape": []}, "tensor-without-dtype"),
        # wrong value types
        ({"t": "bool", "v": 1}, "bool-as-int"),
        ({"t": "bool", "v": "true"}, "bool-as-string"),
        ({"t": "str", "v": 5}, "str-not-a-string"),
        ({"t": "str", "v": "x" * (MAX_STR + 1)}, "str-too-long"),
        ({"t": "float", "v": 1.5}, "float-as-json-number"),
        ({"t": "float", "v": "1.5x"}, "float-not-hex"),
        ({"t": "float", "v": "0x1p99999"}, "float-overflows"),
        ({"t": "float", "v": "0x1p0" + " " * 64}, "float-text-too-long"),
        ({"t": "list", "items": {"a": 1}}, "list-items-not-a-list"),
        ({"t": "tuple", "items": "ab"}, "tuple-items-a-string"),
        ({"t": "list", "items": [5]}, "list-item-not-a-node"),
        # int nodes with non-digits
        ({"t": "int", "v": 5}, "int-as-json-number"),
        ({"t": "int", "v": ""}, "int-empty"),
        ({"t": "int", "v": "-"}, "int-only-minus"),
        ({"t": "int", "v": "12a"}, "int-letters"),
        ({"t": "int", "v": "1.5"}, "int-decimal-point"),
        ({"t": "int", "v": "0x10"}, "int-hex"),
        ({"t": "int", "v": "1e5"}, "int-exponent"),
        ({"t": "int", "v": " 12"}, "int-space"),
        ({"t": "int", "v": "1_000"}, "int-underscore"),
        ({"t": "int", "v": "+5"}, "int-plus"),
        ({"t": "int", "v": "9" * (MAX_INT_DIGITS + 1)}, "int-too-many-digits"),
        # dicts
        ({"t": "dict", "items": {"a": {"t": "none"}}}, "dict-items-an-object"),
        ({"t": "dict", "items": [["a"]]}, "dict-item-not-a-pair"),
        ({"t": "dict", "items": [["a", {"t": "none"}, 1]]}, "dict-item-triple"),
        ({"t": "dict", "items": [[1, {"t": "none"}]]}, "dict-key-not-a-string"),
        ({"t": "dict", "items": [{"k": "a", "v": {"t": "none"}}]}, "dict-item-an-object"),
        ({"t": "dict", "items": [pair("a", {"t": "none"}), pair("a", {"t": "int", "v": "1"})]}, "duplicate-dict-keys"),
        ({"t": "dict", "items": [pair("k" * (MAX_STR + 1), {"t": "none"})]}, "dict-key-too-long"),
        # dtypes outside the list
        (t("object", [0]), "dtype-object"),
        (t("float128", [0]), "dtype-float128"),
        (t("complex32", [0]), "dtype-complex32"),
        (t("float4_e2m1fn_x2", [0]), "dtype-float4"),
        (t("float8_e4m3b11fnuz", [0]), "dtype-fp8-torch-lacks"),
        (t("int4", [0]), "dtype-int4"),
        (t("qint8", [0]), "dtype-quantized"),
        (t("<f4", [0]), "dtype-numpy-spelling"),
        (t("torch.float32", [0]), "dtype-torch-spelling"),
        (t("FLOAT32", [0]), "dtype-wrong-case"),
        (t(None, [0]), "dtype-null"),
        (t(["float32"], [0]), "dtype-a-list"),
        # nesting and size limits
        (nested_lists(MAX_DEPTH + 1), "nested-too-deep"),
        ({"t": "dict", "items": [pair("a", nested_lists(MAX_DEPTH))]}, "dict-nested-too-deep"),
        ({"t": "list", "items": [{"t": "none"}] * MAX_NODES}, "too-many-nodes"),
    ]
    return [pytest.param(manifest, id=name) for manifest, name in cases]


@pytest.mark.parametrize("manifest", _node_cases())
def test_malformed_node(make_body, manifest) -> None:
    with pytest.raises(MalformedValue):
        decode_value(make_body(manifest))


# Each bad shape comes with the bytes that would satisfy it if it were taken at face value (one
# float32 = 4 bytes, or 16 bytes for the wrong-sign pair), so only the shape check can refuse it.
@pytest.mark.parametrize(
    ("shape", "nbytes"),
    [
        pytest.param([-1], 4, id="negative"),
        pytest.param([-2, -2], 16, id="two-negatives-multiply-positive"),
        pytest.param([1.0], 4, id="float"),
        pytest.param(["1"], 4, id="string"),
        pytest.param([True], 4, id="bool-true"),
        pytest.param([False], 0, id="bool-false"),
        pytest.param([None], 4, id="null"),
        pytest.param([[1]], 4, id="nested"),
        pytest.param(1, 4, id="int-not-a-list"),
        pytest.param("1", 4, id="string-not-a-list"),
        pytest.param({"0": 1}, 4, id="object"),
        pytest.param(None, 4, id="shape-null"),
        pytest.param([1] * (MAX_RANK + 1), 4, id="rank-too-high"),
    ],
)
def test_malformed_shape(make_body, tensor_node, shape, nbytes: int) -> None:
    with pytest.raises(MalformedValue):
        decode_value(make_body(tensor_node("float32", shape), b"\x00" * nbytes))


def test_rank_at_the_limit_is_accepted(make_body, tensor_node) -> None:
    got = decode_value(make_body(tensor_node("float32", [1] * MAX_RANK), b"\x00" * 4))
    assert got.shape == (1,) * MAX_RANK


@pytest.mark.parametrize(
    "text",
    ["--5", "---1", "\u00b2", "-\u00b9\u00b2"],
    ids=["double-minus", "triple-minus", "superscript", "minus-superscripts"],
)
def test_int_node_with_extra_minus_signs_or_digit_like_characters(make_body, text: str) -> None:
    with pytest.raises(MalformedValue):
        decode_value(make_body({"t": "int", "v": text}))


def test_tensor_with_too_few_bytes(make_body, tensor_node) -> None:
    body = make_body(tensor_node("float32", [2, 3]), np.zeros(5, dtype="<f4"))
    with pytest.raises(MalformedValue):
        decode_value(body)


def test_tensor_with_bytes_that_are_not_a_whole_element(make_body, tensor_node) -> None:
    body = make_body(tensor_node("float64", [1]), b"\x00" * 7)
    with pytest.raises(MalformedValue):
        decode_value(body)


def test_tensor_with_leftover_bytes(make_body, tensor_node) -> None:
    body = make_body(tensor_node("float32", [2, 3]), np.zeros(7, dtype="<f4"))
    with pytest.raises(MalformedValue):
        decode_value(body)


def test_tensor_with_one_leftover_byte(make_body, tensor_node) -> None:
    body = make_body(tensor_node("int8", [4]), b"\x01\x02\x03\x04\x05")
    with pytest.raises(MalformedValue):
        decode_value(body)


def test_second_tensor_short_of_bytes(make_body, tensor_node) -> None:
    manifest = {"t": "list", "items": [tensor_node("int8", [2]), tensor_node("int8", [2])]}
    with pytest.raises(MalformedValue):
        decode_value(make_body(manifest, b"\x01\x02\x03"))


def test_zero_d_tensor_needs_one_element(make_body, tensor_node) -> None:
    with pytest.raises(MalformedValue):
        decode_value(make_body(tensor_node("float32", [])))
    got = decode_value(make_body(tensor_node("float32", []), np.array(2.5, dtype="<f4")))
    assert got.shape == () and float(got.array) == 2.5


def test_empty_tensor_takes_no_bytes(make_body, tensor_node) -> None:
    with pytest.raises(MalformedValue):
        decode_value(make_body(tensor_node("float32", [0, 4]), b"\x00" * 4))


@pytest.mark.parametrize(
    "shape",
    [[10**6] * 6, [2**62, 2**62], [10**4000], [2**64, 1, 1]],
    ids=["1e36-elements", "2^124-elements", "4000-digit-dim", "2^64-dim"],
)
def test_astronomical_shape_is_refused_without_allocating(make_body, tensor_node, shape) -> None:
    body = make_body(tensor_node("complex128", shape), np.zeros(4, dtype="<c16"))
    tracemalloc.start()
    try:
        with pytest.raises(MalformedValue):
            decode_value(body)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024, f"decoding a refused value allocated {peak} bytes"


@pytest.mark.parametrize("shape", [[0, 2**63], [0, 10**30], [2**70, 0]], ids=["0x2^63", "0x1e30", "2^70x0"])
def test_zero_element_shape_with_a_huge_dimension(make_body, tensor_node, shape) -> None:
    with pytest.raises(MalformedValue):
        decode_value(make_body(tensor_node("float32", shape)))


def test_decoded_arrays_are_read_only(make_body, tensor_node) -> None:
    got = decode_value(make_body(tensor_node("int8", [2]), b"\x01\x02"))
    assert not got.array.flags.writeable
