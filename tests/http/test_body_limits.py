"""Request bodies are bounded while they are read, chunked or not: the server answers 413 as soon as a body
passes its route's cap, while the client is still sending, and never holds the rest in memory."""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass, field

from grader.config import Settings
from grader.problems.registry import MAX_PROBLEM_BYTES
from tests.http.conftest import ADMIN_TOKEN, Server

MiB = 1024 * 1024
SUBMISSION_CAP = Settings().limits.max_source_bytes * 8 + 4096
CHUNK = 64 * 1024


@dataclass
class Exchange:
    """What came back while a body was being sent: the raw response, and how much had been sent when its
    first byte arrived."""

    response: bytes = b""
    sent: int = 0
    sent_when_answered: int | None = None
    answered: threading.Event = field(default_factory=threading.Event)
    closed: threading.Event = field(default_factory=threading.Event)

    @property
    def status(self) -> int:
        assert self.response.startswith(b"HTTP/1.1 "), self.response[:200]
        return int(self.response.split(b" ", 2)[1])

    @property
    def headers(self) -> dict[str, str]:
        head = self.response.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")[1:]
        return {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in head)}

    @property
    def json(self) -> dict[str, object]:
        return json.loads(self.response.split(b"\r\n\r\n", 1)[1])  # type: ignore[no-any-return]


def _read(sock: socket.socket, exchange: Exchange) -> None:
    """Reads until the server closes the connection (or resets it, which is how a refused upload ends)."""
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                break
            if exchange.sent_when_answered is None:
                exchange.sent_when_answered = exchange.sent
            exchange.response += data
            exchange.answered.set()
    except OSError:
        pass
    finally:
        exchange.answered.set()
        exchange.closed.set()


def send_chunked(
    server: Server, path: str, total: int, content_type: str, headers: str = "", *, finish: bool = True
) -> Exchange:
    """POSTs up to `total` bytes of body in 64 KiB chunks, stopping early once the server answers or resets,
    then waits for the server to close. With finish=False the body is left unfinished: only an answer that
    does not need the rest of it can come."""
    exchange = Exchange()
    sock = server.connect()
    reader = threading.Thread(target=_read, args=(sock, exchange), daemon=True)
    reader.start()
    try:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: {content_type}\r\n{headers}"
            "Transfer-Encoding: chunked\r\n\r\n".encode()
        )
        chunk = f"{CHUNK:x}\r\n".encode() + b"#" * CHUNK + b"\r\n"
        while exchange.sent < total and not exchange.answered.is_set():
            try:
                sock.sendall(chunk)
            except OSError:  # reset by the server once it has answered
                break
            exchange.sent += CHUNK
        if finish and exchange.sent >= total and not exchange.answered.is_set():
            sock.sendall(b"0\r\n\r\n")
        assert exchange.closed.wait(10), f"no answer and no close within 10 s of sending {exchange.sent} bytes"
    finally:
        sock.close()
        reader.join(5)
    return exchange


def test_a_chunked_submission_is_answered_413_with_only_the_cap_and_1_mib_sent(server: Server) -> None:
    """The client sends a little more than the cap and then nothing: the answer comes anyway."""
    exchange = send_chunked(server, "/api/submissions", SUBMISSION_CAP + MiB, "application/json", finish=False)
    assert exchange.status == 413, exchange.response[:300]
    assert exchange.json == {"detail": f"request body over {SUBMISSION_CAP} bytes"}
    assert exchange.headers["connection"] == "close"


def test_a_64_mib_chunked_submission_is_cut_while_it_is_sent_and_never_held(server: Server) -> None:
    peak_before = server.status("VmHWM")
    exchange = send_chunked(server, "/api/submissions", 64 * MiB, "application/json")
    assert exchange.status == 413, exchange.response[:300]
    # Answered mid-body. What had been sent by then is the cap plus what the kernel's socket buffers took
    # in meanwhile (several MiB on loopback, where they grow up to net.ipv4.tcp_rmem's maximum).
    assert exchange.sent_when_answered is not None
    assert exchange.sent_when_answered < 16 * MiB, exchange.sent_when_answered
    # The body was never held: the server's peak memory did not grow by anything like its size.
    grew = server.status("VmHWM") - peak_before
    assert grew < 16 * MiB, f"the server's peak RSS grew by {grew / MiB:.0f} MiB"


def send(server: Server, request: bytes) -> Exchange:
    """Sends a whole request and reads the response until the server closes the connection."""
    exchange = Exchange()
    with server.connect(timeout=30) as sock:
        sock.sendall(request)
        _read(sock, exchange)
    return exchange


def test_a_problem_upload_may_be_larger_than_a_submission(server: Server) -> None:
    # 1 MiB of YAML comment: past the submission cap, within the upload cap, so the admin API reads it all
    # and refuses it for its content.
    body = b"#" * MiB
    for framing in (
        f"Content-Length: {len(body)}\r\n\r\n".encode() + body,
        b"Transfer-Encoding: chunked\r\n\r\n" + f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n",
    ):
        exchange = send(
            server,
            b"POST /api/problems HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/yaml\r\nConnection: close\r\n"
            + f"Authorization: Bearer {ADMIN_TOKEN}\r\n".encode()
            + framing,
        )
        assert exchange.status == 422, exchange.response[:300]
        assert "mapping" in str(exchange.json["detail"])


def test_a_chunked_problem_upload_is_cut_at_its_own_cap(server: Server) -> None:
    exchange = send_chunked(
        server,
        "/api/problems",
        16 * MiB,
        "application/yaml",
        headers=f"Authorization: Bearer {ADMIN_TOKEN}\r\n",
    )
    assert exchange.status == 413, exchange.response[:300]
    assert str(exchange.json["detail"]).startswith("request body over ")
    cap = int(str(exchange.json["detail"]).split()[3])
    assert MAX_PROBLEM_BYTES < cap < MAX_PROBLEM_BYTES + 1 * MiB
    assert exchange.sent < 8 * MiB


def test_a_content_length_over_the_cap_is_413_before_any_body(server: Server) -> None:
    # No body follows the headers: the answer and the close come anyway.
    exchange = send(
        server,
        b"POST /api/submissions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Content-Length: 104857600\r\n\r\n",
    )
    assert exchange.status == 413
    assert exchange.json == {"detail": f"request body over {SUBMISSION_CAP} bytes"}
    assert exchange.headers["connection"] == "close"


def test_a_normal_submission_still_goes_through(server: Server) -> None:
    body = json.dumps({"problem_id": "embedding-layer", "source": "def f():\n    return 1\n"}).encode()
    exchange = send(
        server,
        b"POST /api/submissions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nConnection: close\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body,
    )
    assert exchange.status == 202, exchange.response[:300]
