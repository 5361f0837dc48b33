"""Webhook receivers for tests: real servers on this machine's loopback.

`Receiver` is an ordinary HTTP server that records each POST and answers with the next status of a
list; `Trickler` is a raw TCP server that reads the request and then sends its answer one byte at a
time (or nothing at all), recording when the client cut the connection.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    """Records every POST (headers, body, time); answers each with the next of `statuses` (the last one
    from then on), with `headers` added to the answer."""

    def __init__(
        self, statuses: Iterable[int] = (200,), headers: dict[str, str] | None = None, tls: ssl.SSLContext | None = None
    ) -> None:
        self.statuses = list(statuses)
        self.received: list[tuple[dict[str, str], bytes, float]] = []
        self.server_names: list[str | None] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the name http.server dispatches to)
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                receiver.received.append((dict(self.headers), body, time.monotonic()))
                status = receiver.statuses[min(len(receiver.received), len(receiver.statuses)) - 1]
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        if tls is not None:
            tls.sni_callback = lambda _sock, name, _context: self.server_names.append(name)  # type: ignore[assignment]
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.port = int(self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, host: str = "127.0.0.1", path: str = "/hook?from=torchjudge", scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Trickler:
    """Reads a request's head and body (unless told not to), sends `prefix` at once, then `answer` one
    byte every `interval` seconds, and never closes by itself. Records, per connection, when it was
    accepted and when the client cut it (a send failed, or the client's end was seen closed)."""

    def __init__(self, answer: bytes, interval: float = 1.0, read_request: bool = True, prefix: bytes = b"") -> None:
        self.answer = answer
        self.prefix = prefix
        self.interval = interval
        self.read_request = read_request
        self.accepted: list[float] = []
        self.cut: list[float] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._closing = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def url(self, host: str = "127.0.0.1", path: str = "/slow", scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port}{path}"

    def _serve(self) -> None:
        while not self._closing.is_set():
            try:
                connection, _address = self._listener.accept()
            except OSError:
                return
            self.accepted.append(time.monotonic())
            threading.Thread(target=self._trickle, args=(connection,), daemon=True).start()

    def _read(self, connection: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = connection.recv(65536)
            if not chunk:
                return
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lengths = [
            line.split(b":", 1)[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
        ]
        length = int(lengths[0]) if lengths else 0
        while len(body) < length:
            chunk = connection.recv(65536)
            if not chunk:
                return
            body += chunk

    def _trickle(self, connection: socket.socket) -> None:
        with connection:
            try:
                if self.read_request:
                    self._read(connection)
                connection.sendall(self.prefix)
                connection.settimeout(self.interval)
                sent = 0
                while not self._closing.is_set():
                    if sent < len(self.answer):
                        connection.sendall(self.answer[sent : sent + 1])
                        sent += 1
                    try:  # waits out the interval; an empty read means the client has gone
                        if connection.recv(65536) == b"":
                            break
                    except TimeoutError:
                        continue
            except OSError:
                pass
            self.cut.append(time.monotonic())

    def close(self) -> None:
        self._closing.set()
        self._listener.close()
