"""Slow requests are cut: headers must be complete within GRADER_HEADER_TIMEOUT_S of the connection (or of a
keep-alive request's first byte), and a body within GRADER_BODY_TIMEOUT_S of its headers. The server under
test runs with 1 s and 3 s (tests/http/conftest.py); normal requests, keep-alive included, still work."""

from __future__ import annotations

import json
import socket
import time

from tests.http.conftest import BODY_TIMEOUT_S, HEADER_TIMEOUT_S, Server

GRACE_S = 2.0  # how late after its deadline a close may come on a loaded machine
GET = b"GET /api/problems HTTP/1.1\r\nHost: localhost\r\n\r\n"


def wait_for_close(sock: socket.socket, limit: float) -> tuple[float, bytes]:
    """Seconds until the server closed (EOF or reset) and what it sent before; fails after `limit` s."""
    started = time.monotonic()
    received = b""
    sock.settimeout(0.1)
    while time.monotonic() - started < limit:
        try:
            data = sock.recv(65536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            return time.monotonic() - started, received
        if not data:
            return time.monotonic() - started, received
        received += data
    raise AssertionError(f"the connection was still open after {limit} s (received {received[:200]!r})")


def read_response(sock: socket.socket) -> tuple[int, bytes]:
    """One response with a Content-Length body, from a keep-alive connection."""
    sock.settimeout(10)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed mid-response: {data!r}"
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "closed mid-body"
        body += chunk
    assert len(body) == length, "more than one response arrived"
    return int(head.split(b" ")[1]), body


def test_headers_that_never_complete_are_closed(server: Server) -> None:
    with server.connect() as sock:
        sock.sendall(b"POST /api/submissions HTTP/1.1\r\nHost: localhost\r\n")
        took, _ = wait_for_close(sock, HEADER_TIMEOUT_S + GRACE_S)
    assert took >= HEADER_TIMEOUT_S - 0.2


def test_a_connection_that_sends_nothing_is_closed(server: Server) -> None:
    with server.connect() as sock:
        took, received = wait_for_close(sock, HEADER_TIMEOUT_S + GRACE_S)
    assert received == b""


def test_headers_sent_a_byte_at_a_time_are_closed_at_the_deadline(server: Server) -> None:
    """Each byte arriving does not restart the clock."""
    request = b"GET /api/problems HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"a" * 100
    with server.connect() as sock:
        started = time.monotonic()
        for byte in request:
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                break
            time.sleep(0.1)
            if time.monotonic() - started > HEADER_TIMEOUT_S + GRACE_S:
                raise AssertionError("the server still reads headers sent a byte at a time past the deadline")
        wait_for_close(sock, HEADER_TIMEOUT_S + GRACE_S)
    assert time.monotonic() - started < HEADER_TIMEOUT_S + GRACE_S + 0.5


def test_keep_alive_requests_work_and_each_gets_its_own_header_deadline(server: Server) -> None:
    with server.connect() as sock:
        sock.sendall(GET)
        status, body = read_response(sock)
        assert status == 200 and any(p["id"] == "embedding-layer" for p in json.loads(body))
        # Idle between requests for longer than the header timeout (the keep-alive timeout governs idling).
        time.sleep(HEADER_TIMEOUT_S + 0.5)
        sock.sendall(GET)
        assert read_response(sock)[0] == 200
        # The next request's headers start but never end: cut one header timeout after its first byte.
        sock.sendall(b"GET /api/problems HTTP/1.1\r\n")
        took, received = wait_for_close(sock, HEADER_TIMEOUT_S + GRACE_S)
    assert received == b""
    assert took >= HEADER_TIMEOUT_S - 0.2


def submission_body() -> bytes:
    return json.dumps({"problem_id": "embedding-layer", "source": "def f():\n    return 1\n" + "#" * 20}).encode()


def test_a_body_trickling_in_is_cut_with_408(server: Server) -> None:
    body = submission_body()
    with server.connect() as sock:
        sock.sendall(
            b"POST /api/submissions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
        )
        started = time.monotonic()
        received = b""
        for byte in body:  # one byte a second: the whole body would take a minute
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                break
            sock.settimeout(1.0)
            try:
                data = sock.recv(65536)
            except TimeoutError:
                data = None
            if data is not None:
                received += data
                break
            assert time.monotonic() - started < BODY_TIMEOUT_S + GRACE_S, "the trickling body was not cut"
        took, rest = wait_for_close(sock, GRACE_S)
        received += rest
    assert received.startswith(b"HTTP/1.1 408 "), received[:200]
    assert b"connection: close" in received.lower()
    assert json.loads(received.split(b"\r\n\r\n", 1)[1]) == {
        "detail": f"the request body did not arrive within {BODY_TIMEOUT_S:g} s"
    }
    assert BODY_TIMEOUT_S - 0.5 <= time.monotonic() - started < BODY_TIMEOUT_S + GRACE_S + 1


def test_a_chunked_body_trickling_in_is_cut(server: Server) -> None:
    with server.connect() as sock:
        sock.sendall(
            b"POST /api/submissions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        started = time.monotonic()
        sock.settimeout(0.5)
        received = b""
        while time.monotonic() - started < BODY_TIMEOUT_S + GRACE_S:
            try:
                sock.sendall(b"1\r\n \r\n")  # one byte of JSON whitespace at a time
                received += sock.recv(65536)
                break
            except TimeoutError:
                continue
            except OSError:
                break
        else:
            raise AssertionError("the trickling chunked body was not cut")
    assert received == b"" or received.startswith(b"HTTP/1.1 408 "), received[:200]


def test_a_slow_body_that_arrives_in_time_is_accepted(server: Server) -> None:
    body = submission_body()
    half = len(body) // 2
    with server.connect() as sock:
        sock.sendall(
            b"POST /api/submissions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body[:half]
        )
        time.sleep(BODY_TIMEOUT_S / 2)
        sock.sendall(body[half:])
        status, _ = read_response(sock)
    assert status == 202
