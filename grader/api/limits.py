"""Request bodies bounded while they are read, whatever their framing.

A pure ASGI middleware (no BaseHTTPMiddleware, which would buffer): it refuses a Content-Length over the
route's cap before the app runs, and otherwise counts the body's bytes as the app receives them and
answers 413 the moment the cap is passed, without reading the rest. uvicorn reads a body only as fast as
the app asks for it (it stops reading the socket past 64 KiB buffered), so nothing more is held than one
cap's worth. Every answer to a request whose body was not read to its end says `Connection: close`: the
server then closes the connection instead of reading (and discarding) the rest of the body to reach the
next request.

Starlette's own RequestBodyLimitMiddleware is not used: it answers in plain text, lets the app run on a
Content-Length it will refuse anyway, and keeps the connection open.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from grader.config_grading import LimitsSettings
from grader.problems.registry import MAX_PROBLEM_BYTES

log = logging.getLogger(__name__)

# Room for the JSON envelope around a source whose characters are all escaped (\uXXXX: 6 bytes per byte,
# rounded up to 8), and for the other fields.
SUBMISSION_BODY_FACTOR = 8
SUBMISSION_BODY_SLACK = 4096
# A problem file is checked against MAX_PROBLEM_BYTES after decoding; the slack lets the admin API name
# that limit itself for a file just over it.
PROBLEM_BODY_SLACK = 64 * 1024
# More digits than any cap has: refused as too large without converting it to an int.
_MAX_LENGTH_DIGITS = 18

CLOSE = (b"connection", b"close")


def submission_body_cap(limits: LimitsSettings) -> int:
    return limits.max_source_bytes * SUBMISSION_BODY_FACTOR + SUBMISSION_BODY_SLACK


def problem_body_cap() -> int:
    return MAX_PROBLEM_BYTES + PROBLEM_BODY_SLACK


def route_caps(limits: LimitsSettings) -> Callable[[str, str], int]:
    """The body cap of a request by its method and path: problem uploads (POST /api/problems and
    PUT /api/problems/{id}) may carry a whole problem file, a batch GRADER_MAX_BATCH_BYTES; every other
    request a submission's worth."""
    default, upload = submission_body_cap(limits), problem_body_cap()

    def cap(method: str, path: str) -> int:
        if method == "POST" and path == "/api/problems":
            return upload
        if method == "POST" and path == "/api/submissions/batch":
            return limits.max_batch_bytes
        if method == "PUT" and path.startswith("/api/problems/") and "/" not in path[len("/api/problems/") :]:
            return upload
        return default

    return cap


class BodyTooLarge(HTTPException):
    """Raised from receive() once the body passes the cap. An HTTPException so that code between the
    middleware and the read (FastAPI's body parsing turns other exceptions into 400) lets it through."""

    def __init__(self, cap: int) -> None:
        super().__init__(413, f"request body over {cap} bytes")


async def json_answer(send: Send, status: int, detail: str) -> None:
    """A JSON `{"detail": ...}` answer that closes the connection (the request's body is left unread)."""
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), CLOSE]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _content_length(scope: Scope) -> tuple[bool, int | None]:
    """(valid, length) from the Content-Length headers: absent is (True, None); several must agree."""
    values = {value.strip() for name, value in scope["headers"] if name.lower() == b"content-length"}
    if not values:
        return True, None
    if len(values) > 1:
        return False, None
    [value] = values
    # bytes.isdigit() is ASCII only: no sign, no spaces, no Unicode digits that int() would accept.
    if not value or not value.isdigit():
        return False, None
    return True, int(value) if len(value) <= _MAX_LENGTH_DIGITS else 10**_MAX_LENGTH_DIGITS


def _has_body(scope: Scope, length: int | None) -> bool:
    if length is not None:
        return length > 0
    return any(name.lower() == b"transfer-encoding" for name, _ in scope["headers"])


def has_body(scope: Scope) -> bool:
    """Whether the request announces a body: a Content-Length other than 0 (an invalid one included), or
    a Transfer-Encoding."""
    valid, length = _content_length(scope)
    return not valid or _has_body(scope, length)


class BodyLimitMiddleware:
    """Caps every HTTP request's body at `cap_for(method, path)` bytes, while it is read."""

    def __init__(self, app: ASGIApp, cap_for: Callable[[str, str], int]) -> None:
        self.app = app
        self.cap_for = cap_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cap = self.cap_for(scope["method"], scope["path"])
        valid, length = _content_length(scope)
        if not valid:
            await json_answer(send, 400, "invalid Content-Length")
            return
        if length is not None and length > cap:
            await json_answer(send, 413, f"request body over {cap} bytes")
            return
        guard = _BodyGuard(cap, receive, send, body_done=not _has_body(scope, length))
        try:
            await self.app(scope, guard.receive, guard.send)
        except ClientDisconnect:
            # The client left mid-body (or was cut off for being too slow): nobody is left to answer.
            if guard.started:
                raise
            log.debug("%s %s: the client left before sending its whole body", scope["method"], scope["path"])
            return
        except Exception:
            if not guard.tripped or guard.started:
                raise
            # Whatever the app made of the exception it got from receive(), the answer is the 413.
        if guard.tripped and not guard.started:
            await json_answer(send, 413, f"request body over {cap} bytes")


class _BodyGuard:
    """One request's receive and send: the body counted as it arrives, the app's answer held back once
    the cap is passed, and the connection closed when the body is left unread."""

    def __init__(self, cap: int, receive: Receive, send: Send, body_done: bool) -> None:
        self.cap = cap
        self._receive = receive
        self._send = send
        self.received = 0
        self.body_done = body_done
        self.tripped = False
        self.started = False

    async def receive(self) -> Message:
        if self.tripped:
            raise BodyTooLarge(self.cap)
        message = await self._receive()
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self.cap:
                self.tripped = True
                raise BodyTooLarge(self.cap)
            if not message.get("more_body", False):
                self.body_done = True
        return message

    async def send(self, message: Message) -> None:
        if self.tripped and not self.started:
            return  # the app's answer to a body it did not get: the 413 goes out instead
        if message["type"] == "http.response.start":
            self.started = True
            headers = list(message.get("headers", []))
            if not self.body_done and CLOSE not in headers:
                # The rest of the body is unread: close rather than read it through to the next request.
                message = {**message, "headers": [*headers, CLOSE]}
        await self._send(message)
