"""One webhook attempt on the wire: a POST to addresses already checked, within one deadline.

Every socket operation gets the time left until the deadline as its timeout, recomputed before each
call, so a receiver that trickles a byte a second (of its TLS handshake, status line, headers or body),
or never closes, is cut at the deadline: the timeout of one call bounds only that call, and Python's
`sendall` on a TLS socket would restart it for every piece sent. HTTP/1.1 is h11's (status line and
headers capped at 16 KiB); the body of the answer is read up to MAX_ANSWER_BODY and no further.
Redirects are not followed: the status is the answer.
"""

from __future__ import annotations

import socket
import ssl
import time

import h11

from grader.submissions.callbacks import Callback

MAX_ANSWER_BODY = 4 * 1024
MAX_ANSWER_HEADERS = 16 * 1024
_CHUNK = 16 * 1024


class AttemptTimeout(TimeoutError):
    """The deadline passed before the receiver had answered in full."""


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise AttemptTimeout("the receiver did not answer in full within the deadline")
    return left


def _connect(callback: Callback, deadline: float) -> socket.socket:
    """A TCP connection to the first of the checked addresses that accepts one (no lookup here)."""
    failure: OSError | None = None
    for address in callback.addresses:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.settimeout(_left(deadline))
            sock.connect((address, callback.port))
            return sock
        except AttemptTimeout:
            sock.close()
            raise
        except OSError as exc:
            sock.close()
            failure = exc
    if isinstance(failure, TimeoutError):
        raise AttemptTimeout(f"connecting to {callback.host} took longer than the deadline")
    raise failure or OSError("no address to connect to")


def _send(sock: socket.socket, data: bytes, deadline: float) -> None:
    view = memoryview(data)
    while view:
        sock.settimeout(_left(deadline))
        sent = sock.send(view[:_CHUNK])
        view = view[sent:]


def _receive(sock: socket.socket, deadline: float) -> bytes:
    sock.settimeout(_left(deadline))
    try:
        return sock.recv(_CHUNK)
    except TimeoutError:
        raise AttemptTimeout("the receiver did not answer in full within the deadline") from None


def _answer(connection: h11.Connection, sock: socket.socket, deadline: float) -> int:
    """The answer's status, once its headers and its body (or MAX_ANSWER_BODY of it) are in."""
    status = None
    body = 0
    while True:
        event = connection.next_event()
        if event is h11.NEED_DATA:
            connection.receive_data(_receive(sock, deadline))
        elif isinstance(event, h11.InformationalResponse):
            continue  # 100 Continue and the like: the answer is still to come
        elif isinstance(event, h11.Response):
            status = event.status_code
        elif isinstance(event, h11.Data):
            body += len(event.data)
            if status is not None and body >= MAX_ANSWER_BODY:
                return status
        elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed) and status is not None:
            return status
        else:
            raise h11.RemoteProtocolError(f"the receiver closed the connection before answering ({event!r:.60})")


def post(callback: Callback, headers: list[tuple[str, str]], body: bytes, deadline: float, tls: ssl.SSLContext) -> int:
    """POSTs body once and returns the answer's status. AttemptTimeout past the deadline; OSError,
    ssl.SSLError or h11.ProtocolError for a receiver that does not answer HTTP."""
    sock = _connect(callback, deadline)
    try:
        if callback.scheme == "https":
            # The name checked in the certificate and sent as SNI is the URL's host, whatever address
            # was connected to; for an IP literal, ssl checks the certificate's IP addresses instead.
            sock = tls.wrap_socket(sock, server_hostname=callback.host, do_handshake_on_connect=False)
            sock.settimeout(_left(deadline))
            try:
                sock.do_handshake()  # one call, bounded as a whole by its timeout
            except TimeoutError:
                raise AttemptTimeout("the receiver's TLS handshake did not end within the deadline") from None
        connection = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_ANSWER_HEADERS)
        request = h11.Request(
            method="POST",
            target=callback.target,
            headers=[("Host", callback.host_header), ("Content-Length", str(len(body))), *headers],
        )
        events = (request, h11.Data(data=body), h11.EndOfMessage())
        data = b"".join(connection.send(event) or b"" for event in events)
        try:
            _send(sock, data, deadline)
        except TimeoutError:
            raise AttemptTimeout("the receiver did not take the request within the deadline") from None
        return _answer(connection, sock, deadline)
    finally:
        sock.close()
