"""grader/containers/frames.py: what comes out of a sandbox is hostile bytes until every field is checked."""

from __future__ import annotations

import json

import pytest

from grader.containers.frames import PREFIX, Frame, FrameDecoder, FrameError, encode
from grader.containers.protocol import (
    DONE,
    HELLO,
    JOB,
    LOAD,
    MAGIC,
    MAX_MESSAGE,
    MAX_TRACEBACK,
    TEST,
    TRUNCATED,
    DoneHeader,
    HelloHeader,
    LoadHeader,
)
from grader.containers.protocol import MAX_HEADER_BYTES as MAX_HEADER
from grader.containers.protocol import (
    TestHeader as ResultHeader,
)

MAX_BODY = 1024

HELLO_HEADER = {"torch": "2.13.0", "python": "3.11.2"}
LOAD_HEADER = {"status": "compile_error", "message": "invalid syntax", "error_type": "SyntaxError", "line": 3}
TEST_HEADER = {"index": 2, "status": "ok", "time_ms": 1.25}
DONE_HEADER = {"clean": True}

VALID = [
    pytest.param(HELLO, HELLO_HEADER, b"", HelloHeader, id="hello"),
    pytest.param(LOAD, LOAD_HEADER, b"", LoadHeader, id="load"),
    pytest.param(TEST, TEST_HEADER, b"opaque \x00\xff body", ResultHeader, id="test-with-body"),
    pytest.param(
        TEST,
        {
            **TEST_HEADER,
            "status": "error",
            "message": "boom",
            "error_type": "ValueError",
            "traceback": "Traceback ...",
            "line": 0,
        },
        b"",
        ResultHeader,
        id="test-error",
    ),
    pytest.param(DONE, DONE_HEADER, b"", DoneHeader, id="done"),
]


def decoder() -> FrameDecoder:
    return FrameDecoder(MAX_BODY)


def stream() -> tuple[bytes, list[tuple[bytes, dict, bytes]]]:
    """A whole conversation: hello, compile ok, two tests (one with a body), done."""
    parts = [
        (HELLO, HELLO_HEADER, b""),
        (LOAD, {"status": "ok"}, b""),
        (TEST, {"index": 0, "status": "ok", "time_ms": 0}, b"abc"),
        (TEST, {"index": 1, "status": "timeout", "time_ms": 2000.5}, b""),
        (DONE, {"clean": False}, b""),
    ]
    return b"".join(encode(kind, header, body) for kind, header, body in parts), parts


def assert_frames(frames: list[Frame], parts: list[tuple[bytes, dict, bytes]]) -> None:
    assert [f.kind for f in frames] == [kind for kind, _, _ in parts]
    for frame, (_, header, body) in zip(frames, parts, strict=True):
        assert frame.header.model_dump(exclude_unset=True) == header
        assert frame.body == body


# -- valid frames ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("kind", "header", "body", "model"), VALID)
def test_valid_frame_decodes(raw_frame, kind, header, body, model) -> None:
    dec = decoder()
    frames = dec.feed(raw_frame(kind, header, body))
    assert len(frames) == 1
    frame = frames[0]
    assert frame.kind == kind
    assert type(frame.header) is model
    assert frame.header.model_dump(exclude_unset=True) == header
    assert frame.body == body
    assert dec.pending == 0


def test_optional_fields_default_to_none(raw_frame) -> None:
    (frame,) = decoder().feed(raw_frame(TEST, TEST_HEADER))
    assert frame.header.message is None
    assert frame.header.traceback is None
    assert frame.header.line is None


def test_encode_matches_the_documented_layout() -> None:
    data = encode(TEST, {"index": 0}, b"xy")
    head = b'{"index":0}'
    assert data[:2] == b"TJ"
    assert data[2:3] == b"T"
    assert data[3:7] == len(head).to_bytes(4, "big")
    assert data[7:11] == (2).to_bytes(4, "big")
    assert data[11:] == head + b"xy"


def test_many_frames_in_one_feed_come_out_in_order() -> None:
    data, parts = stream()
    dec = decoder()
    assert_frames(dec.feed(data), parts)
    assert dec.pending == 0


def test_feeding_byte_by_byte_gives_the_same_frames() -> None:
    data, parts = stream()
    dec = decoder()
    frames: list[Frame] = []
    for i in range(len(data)):
        frames += dec.feed(data[i : i + 1])
    assert_frames(frames, parts)
    assert dec.pending == 0


@pytest.mark.parametrize("chunk", [2, 3, 7, 11, 64])
def test_feeding_in_odd_chunks_gives_the_same_frames(chunk: int) -> None:
    data, parts = stream()
    dec = decoder()
    frames: list[Frame] = []
    for i in range(0, len(data), chunk):
        frames += dec.feed(data[i : i + chunk])
    assert_frames(frames, parts)


def test_empty_feed_yields_nothing() -> None:
    dec = decoder()
    assert dec.feed(b"") == []
    assert dec.pending == 0


# -- truncation ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("cut", [1, PREFIX.size - 1, PREFIX.size, PREFIX.size + 5, -1])
def test_truncated_frame_yields_nothing_and_keeps_the_bytes(raw_frame, cut: int) -> None:
    data = raw_frame(TEST, TEST_HEADER, b"0123456789")
    part = data[:cut]
    dec = decoder()
    assert dec.feed(part) == []
    assert dec.pending == len(part)
    (frame,) = dec.feed(data[len(part) :])
    assert frame.body == b"0123456789"
    assert dec.pending == 0


def test_a_whole_frame_then_a_partial_one(raw_frame) -> None:
    first = raw_frame(DONE, DONE_HEADER)
    second = raw_frame(TEST, TEST_HEADER, b"body")
    dec = decoder()
    frames = dec.feed(first + second[:-2])
    assert [f.kind for f in frames] == [DONE]
    assert dec.pending == len(second) - 2


# -- size caps, checked on the prefix alone ------------------------------------------------------------
def test_body_at_the_cap_is_accepted(raw_frame) -> None:
    (frame,) = decoder().feed(raw_frame(TEST, TEST_HEADER, b"x" * MAX_BODY))
    assert len(frame.body) == MAX_BODY


@pytest.mark.parametrize("body_len", [MAX_BODY + 1, 2**32 - 1])
def test_oversized_body_is_refused_before_it_arrives(body_len: int) -> None:
    prefix = PREFIX.pack(MAGIC, TEST, 10, body_len)
    with pytest.raises(FrameError, match="body"):
        decoder().feed(prefix)


@pytest.mark.parametrize("head_len", [MAX_HEADER + 1, 2**32 - 1])
def test_oversized_header_is_refused_before_it_arrives(head_len: int) -> None:
    prefix = PREFIX.pack(MAGIC, TEST, head_len, 0)
    with pytest.raises(FrameError, match="header"):
        decoder().feed(prefix)


def test_header_at_the_cap_is_not_refused_for_its_size() -> None:
    # A header of exactly MAX_HEADER bytes: the prefix alone is accepted (waits for the rest).
    dec = decoder()
    assert dec.feed(PREFIX.pack(MAGIC, TEST, MAX_HEADER, 0)) == []
    assert dec.pending == PREFIX.size


# -- prefix errors -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("magic", [b"XX", b"tj", b"JT", b"\x00\x00"])
def test_bad_magic(raw_frame, magic: bytes) -> None:
    with pytest.raises(FrameError, match="magic"):
        decoder().feed(raw_frame(DONE, DONE_HEADER, magic=magic))


def test_bad_magic_is_refused_on_the_prefix_alone() -> None:
    with pytest.raises(FrameError):
        decoder().feed(b"HTTP/1.1 20")  # exactly a prefix's worth of junk


@pytest.mark.parametrize("kind", [b"X", b"t", b"\x00", JOB])
def test_unknown_kind(raw_frame, kind: bytes) -> None:
    # JOB frames go to the sandbox, never come from it.
    with pytest.raises(FrameError, match="kind"):
        decoder().feed(raw_frame(kind, {}))


@pytest.mark.parametrize(("kind", "header"), [(HELLO, HELLO_HEADER), (LOAD, {"status": "ok"}), (DONE, DONE_HEADER)])
def test_body_on_a_non_test_frame(raw_frame, kind: bytes, header: dict) -> None:
    with pytest.raises(FrameError, match="body"):
        decoder().feed(raw_frame(kind, header, b"x"))


def test_body_on_a_non_test_frame_is_refused_before_it_arrives(raw_frame) -> None:
    prefix = raw_frame(DONE, DONE_HEADER, body_len=1)  # claims one byte of body, sends none
    with pytest.raises(FrameError):
        decoder().feed(prefix)


def test_frames_after_a_good_one_are_still_checked(raw_frame) -> None:
    with pytest.raises(FrameError):
        decoder().feed(raw_frame(DONE, DONE_HEADER) + raw_frame(DONE, DONE_HEADER, magic=b"XX"))


# -- headers -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "head",
    [b"", b"{", b"\xff\xfe", b"{'index': 0}", b'{"index": 0,}', b"\x00" * 10],
    ids=["empty", "unclosed", "not-utf8", "single-quotes", "trailing-comma", "nul-bytes"],
)
def test_header_that_is_not_json(raw_frame, head: bytes) -> None:
    with pytest.raises(FrameError, match="header"):
        decoder().feed(raw_frame(TEST, head))


def test_deeply_nested_header_is_refused_without_crashing(raw_frame) -> None:
    head = b"[" * 50_000 + b"]" * 50_000
    with pytest.raises(FrameError):
        decoder().feed(raw_frame(DONE, head))


@pytest.mark.parametrize("head", [b"[]", b'"index"', b"0", b"null", b"true", b'[{"clean": true}]'])
def test_header_that_is_not_an_object(raw_frame, head: bytes) -> None:
    with pytest.raises(FrameError, match="invalid D header"):
        decoder().feed(raw_frame(DONE, head))


BAD_HEADERS = [
    # unknown fields
    pytest.param(TEST, {**TEST_HEADER, "passed": True}, id="test-unknown-field"),
    pytest.param(DONE, {"clean": True, "verdict": "accepted"}, id="done-unknown-field"),
    pytest.param(HELLO, {**HELLO_HEADER, "status": "ok"}, id="hello-unknown-field"),
    # missing required fields
    pytest.param(TEST, {"status": "ok", "time_ms": 1}, id="test-no-index"),
    pytest.param(TEST, {"index": 0, "time_ms": 1}, id="test-no-status"),
    pytest.param(TEST, {"index": 0, "status": "ok"}, id="test-no-time"),
    pytest.param(DONE, {}, id="done-empty"),
    pytest.param(LOAD, {"message": "hi"}, id="compile-no-status"),
    # wrong types (strict: no coercion)
    pytest.param(TEST, {**TEST_HEADER, "index": "0"}, id="index-as-string"),
    pytest.param(TEST, {**TEST_HEADER, "index": 1.0}, id="index-as-float"),
    pytest.param(TEST, {**TEST_HEADER, "index": True}, id="index-as-bool"),
    pytest.param(TEST, {**TEST_HEADER, "index": -1}, id="negative-index"),
    pytest.param(TEST, {**TEST_HEADER, "time_ms": "1.0"}, id="time-as-string"),
    pytest.param(TEST, {**TEST_HEADER, "time_ms": -0.5}, id="negative-time"),
    pytest.param(TEST, {**TEST_HEADER, "line": -3}, id="negative-line"),
    pytest.param(TEST, {**TEST_HEADER, "message": 5}, id="message-not-string"),
    pytest.param(TEST, {**TEST_HEADER, "line": 2**70}, id="line-beyond-any-column"),
    pytest.param(LOAD, {"status": "error", "line": 10**6 + 1}, id="load-line-too-large"),
    pytest.param(TEST, {**TEST_HEADER, "index": 1000}, id="index-beyond-any-problem"),
    pytest.param(TEST, {**TEST_HEADER, "time_ms": 1e300}, id="time-beyond-any-limit"),
    pytest.param(DONE, {"clean": "yes"}, id="clean-as-string"),
    pytest.param(DONE, {"clean": 1}, id="clean-as-int"),
    pytest.param(HELLO, {"torch": 2.13, "python": "3.11"}, id="torch-as-number"),
    pytest.param(HELLO, {"torch": "x" * 65, "python": "3.11"}, id="torch-too-long"),
    # status outside the list
    pytest.param(TEST, {**TEST_HEADER, "status": "passed"}, id="test-status-passed"),
    pytest.param(TEST, {**TEST_HEADER, "status": "accepted"}, id="test-status-accepted"),
    pytest.param(TEST, {**TEST_HEADER, "status": "OK"}, id="test-status-case"),
    pytest.param(TEST, {**TEST_HEADER, "status": "compile_error"}, id="test-status-compile-only"),
    pytest.param(LOAD, {"status": "accepted"}, id="compile-status-accepted"),
    pytest.param(LOAD, {"status": None}, id="compile-status-null"),
]


@pytest.mark.parametrize(("kind", "header"), BAD_HEADERS)
def test_invalid_header_is_refused(raw_frame, kind: bytes, header: dict) -> None:
    with pytest.raises(FrameError, match=f"invalid {kind.decode()} header"):
        decoder().feed(raw_frame(kind, header))


def test_nan_time_is_refused(raw_frame) -> None:
    with pytest.raises(FrameError):
        decoder().feed(raw_frame(TEST, b'{"index": 0, "status": "ok", "time_ms": NaN}'))


def test_infinite_time_is_refused(raw_frame) -> None:
    with pytest.raises(FrameError):
        decoder().feed(raw_frame(TEST, b'{"index": 0, "status": "ok", "time_ms": Infinity}'))


@pytest.mark.parametrize(
    ("field", "length", "cap"),
    [("message", 8193, MAX_MESSAGE), ("traceback", 20001, MAX_TRACEBACK), ("error_type", 5000, 200)],
)
def test_long_strings_are_cut_to_their_cap_with_the_cut_shown(raw_frame, field: str, length: int, cap: int) -> None:
    (frame,) = decoder().feed(raw_frame(TEST, {**TEST_HEADER, "status": "error", field: "m" * length}))
    text = getattr(frame.header, field)
    assert len(text) == cap and text.endswith(TRUNCATED)


def test_nul_characters_are_replaced_before_any_database_sees_them(raw_frame) -> None:
    (frame,) = decoder().feed(raw_frame(LOAD, {"status": "error", "message": "a\u0000b"}))
    assert frame.header.message == "a\ufffdb"


def test_error_message_does_not_echo_the_whole_header(raw_frame) -> None:
    secret = "S" * 5000
    with pytest.raises(FrameError) as info:
        decoder().feed(raw_frame(DONE, {"clean": True, "x": secret}))
    assert secret not in str(info.value)


def test_encode_round_trips_through_the_decoder() -> None:
    header = {"index": 7, "status": "memory", "time_ms": 12.5, "message": "out of memory \u2603"}
    (frame,) = decoder().feed(encode(TEST, header, b"\x00\x01"))
    assert frame.header.model_dump(exclude_unset=True) == header
    assert frame.body == b"\x00\x01"


def test_header_is_exactly_the_declared_length(raw_frame) -> None:
    # A header length one byte short cuts the JSON (its last byte would count as body): refused.
    head = json.dumps(TEST_HEADER).encode()
    with pytest.raises(FrameError, match="invalid T header"):
        decoder().feed(raw_frame(TEST, head, head_len=len(head) - 1, body_len=1))


def test_the_error_for_a_bad_header_is_bounded_whatever_its_keys(raw_frame) -> None:
    """The error names where the header is wrong, and the sandbox chooses the keys' names: it reaches the
    grader's log (a sandbox lost) cut to a few hundred characters, not the header's 64 KiB."""
    key = "k" * (MAX_HEADER - 100)
    with pytest.raises(FrameError) as raised:
        decoder().feed(raw_frame(DONE, {**DONE_HEADER, key: 1}))
    assert len(str(raised.value)) < 500, len(str(raised.value))
