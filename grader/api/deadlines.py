"""uvicorn's h11 protocol with deadlines on reading a request.

uvicorn times out only idle kept-alive connections: a client that opens a connection and sends nothing,
or sends headers a byte at a time, or a body a byte a second, holds the connection (and its slot under
uvicorn's connection limit) for as long as it likes. Here:

- a request's headers must be complete within `header_timeout_s` of the connection being made, or, on a
  kept-alive connection, of the next request's first byte (the idle time before it is uvicorn's
  keep-alive timeout); otherwise the connection is closed;
- its body must be complete within `body_timeout_s` of its headers; otherwise the server answers 408
  (unless the app has begun its answer) and closes the connection, and the app sees the client gone.

Nothing resets a clock: bytes trickling in do not buy more time. The deadlines follow h11's view of the
client (IDLE: headers pending; SEND_BODY: body pending), checked after every batch of bytes.
This relies on uvicorn's H11Protocol and RequestResponseCycle internals (uvicorn is pinned).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)


class BoundedH11Protocol(H11Protocol):
    header_timeout_s: float = 5.0
    body_timeout_s: float = 30.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_deadline: asyncio.TimerHandle | None = None
        self._body_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_deadline = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_deadline()
        self._cancel_body_deadline()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._header_deadline is None and self.conn.their_state is h11.IDLE:
            # The first bytes of a kept-alive connection's next request.
            self._header_deadline = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)
        super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        if self.transport.get_protocol() is not self:  # upgraded (WebSocket): no longer an HTTP request
            self._cancel_header_deadline()
            self._cancel_body_deadline()
            return
        state = self.conn.their_state
        if state is h11.IDLE:  # headers still pending, or idle between requests: the header clock runs
            return
        self._cancel_header_deadline()
        if state is h11.SEND_BODY:
            if self._body_deadline is None:
                self._body_deadline = self.loop.call_later(self.body_timeout_s, self._body_too_slow)
        else:  # the whole request is in (or the connection is ending)
            self._cancel_body_deadline()

    def _cancel_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _cancel_body_deadline(self) -> None:
        if self._body_deadline is not None:
            self._body_deadline.cancel()
            self._body_deadline = None

    def _client(self) -> str:
        return f"{self.client[0]}:{self.client[1]}" if self.client else "a client"

    def _headers_too_slow(self) -> None:
        self._header_deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            log.info(
                "%s: request headers not complete within %g s; connection closed", self._client(), self.header_timeout_s
            )
            self.transport.close()

    def _body_too_slow(self) -> None:
        self._body_deadline = None
        if self.conn.their_state is not h11.SEND_BODY or self.transport.is_closing():
            return
        log.info("%s: request body not complete within %g s; connection closed", self._client(), self.body_timeout_s)
        cycle = self.cycle
        if cycle is not None and not cycle.response_started:
            body = json.dumps({"detail": f"the request body did not arrive within {self.body_timeout_s:g} s"}).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ]
            # Taken from the app: its receive() now says the client left, and whatever it sends is dropped.
            cycle.response_started = cycle.response_complete = cycle.disconnected = True
            cycle.message_event.set()
            response = h11.Response(status_code=408, headers=headers, reason=b"Request Timeout")
            events: list[h11.Event] = [response, h11.Data(data=body), h11.EndOfMessage()]
            self.transport.write(b"".join(self.conn.send(event) or b"" for event in events))
        self.transport.close()


def bounded_h11(header_timeout_s: float, body_timeout_s: float) -> type[BoundedH11Protocol]:
    """The protocol class to hand to uvicorn (`http=`), with these deadlines."""
    return type(
        "BoundedH11Protocol",
        (BoundedH11Protocol,),
        {"header_timeout_s": header_timeout_s, "body_timeout_s": body_timeout_s},
    )
