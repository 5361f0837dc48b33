"""grader/api/limits.py, driven as plain ASGI: the caps per route, Content-Length checks before the app runs,
bodies counted as they are received, and `Connection: close` whenever a body is left unread. Through a real
server, with chunked bodies on a socket: tests/http/test_body_limits.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from starlette.requests import Request

from grader.api.limits import BodyLimitMiddleware, problem_body_cap, route_caps, submission_body_cap
from grader.config import Settings
from grader.problems.registry import MAX_PROBLEM_BYTES

CAP = 100
CLOSE = (b"connection", b"close")


def run(app: Any, headers: list[tuple[bytes, bytes]], chunks: list[bytes], *, complete: bool = True) -> dict[str, Any]:
    """Sends `chunks` as the body through BodyLimitMiddleware(app, cap CAP) (with complete=False, the client
    leaves after them); returns what was answered and how many times the body was asked for."""
    last = len(chunks) - 1
    pending = [
        {"type": "http.request", "body": chunk, "more_body": i < last or not complete} for i, chunk in enumerate(chunks)
    ]
    sent: list[dict[str, Any]] = []
    asked = 0

    async def receive() -> dict[str, Any]:
        nonlocal asked
        asked += 1
        if pending:
            return pending.pop(0)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/x", "headers": headers}
    asyncio.run(BodyLimitMiddleware(app, cap_for=lambda method, path: CAP)(scope, receive, send))
    result: dict[str, Any] = {"asked": asked, "messages": sent}
    if sent:
        result["status"] = sent[0]["status"]
        result["headers"] = sent[0]["headers"]
        body = b"".join(message.get("body", b"") for message in sent[1:])
        result["body"] = json.loads(body) if body.startswith(b"{") else body
    return result


async def read_all_then_ok(scope: Any, receive: Any, send: Any) -> None:
    await Request(scope, receive).body()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def answer_without_reading(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 401, "headers": []})
    await send({"type": "http.response.body", "body": b"no"})


async def never_called(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("the app must not run")


CHUNKED = [(b"transfer-encoding", b"chunked")]


def test_a_body_within_the_cap_reaches_the_app_and_the_connection_stays_open() -> None:
    result = run(read_all_then_ok, CHUNKED, [b"a" * 60, b"b" * 40])
    assert result["status"] == 200 and result["body"] == b"ok"
    assert CLOSE not in result["headers"]


def test_a_chunked_body_is_cut_once_past_the_cap_and_the_rest_never_asked_for() -> None:
    result = run(read_all_then_ok, CHUNKED, [b"a" * 60, b"b" * 60, b"c" * 10_000, b"d" * 10_000])
    assert result["status"] == 413
    assert result["body"] == {"detail": f"request body over {CAP} bytes"}
    assert CLOSE in result["headers"]
    assert result["asked"] == 2  # the two chunks that passed the cap, nothing after
    assert len(result["messages"]) == 2  # only the 413: the app's own answer to a failed read is dropped


def test_the_app_catching_the_refusal_changes_nothing() -> None:
    async def swallows(scope: Any, receive: Any, send: Any) -> None:
        try:
            await Request(scope, receive).body()
        except Exception:
            await send({"type": "http.response.start", "status": 400, "headers": []})
            await send({"type": "http.response.body", "body": b"bad"})

    result = run(swallows, CHUNKED, [b"a" * 200])
    assert result["status"] == 413 and len(result["messages"]) == 2


@pytest.mark.parametrize(
    "value", [b"abc", b"-1", b"+5", b" ", b"", b"1e3", "１２".encode(), b"\xb2"], ids=lambda v: repr(v)
)
def test_an_invalid_content_length_is_400_before_the_app_runs(value: bytes) -> None:
    result = run(never_called, [(b"content-length", value)], [b""])
    assert result["status"] == 400
    assert result["body"] == {"detail": "invalid Content-Length"}
    assert CLOSE in result["headers"]


def test_two_different_content_lengths_are_400() -> None:
    result = run(never_called, [(b"content-length", b"5"), (b"content-length", b"6")], [b"12345"])
    assert result["status"] == 400


@pytest.mark.parametrize("value", [b"101", b"9" * 40], ids=["just-over", "forty-digits"])
def test_a_content_length_over_the_cap_is_413_before_the_app_runs(value: bytes) -> None:
    result = run(never_called, [(b"content-length", value)], [b""])
    assert result["status"] == 413
    assert result["asked"] == 0
    assert CLOSE in result["headers"]


def test_an_answer_that_leaves_the_body_unread_closes_the_connection() -> None:
    result = run(answer_without_reading, [(b"content-length", b"50")], [b"a" * 50])
    assert result["status"] == 401
    assert result["headers"] == [CLOSE]


def test_an_answer_to_a_request_without_a_body_keeps_the_connection() -> None:
    assert run(answer_without_reading, [], [b""])["headers"] == []
    assert run(answer_without_reading, [(b"content-length", b"0")], [b""])["headers"] == []


def test_a_client_that_leaves_mid_body_gets_no_answer_and_raises_nothing() -> None:
    async def reads(scope: Any, receive: Any, send: Any) -> None:
        await Request(scope, receive).body()
        raise AssertionError("the body cannot be complete")

    assert run(reads, CHUNKED, [b"a" * 10], complete=False)["messages"] == []


def test_caps_per_route() -> None:
    limits = Settings().limits
    cap = route_caps(limits)
    assert submission_body_cap(limits) == limits.max_source_bytes * 8 + 4096
    assert MAX_PROBLEM_BYTES < problem_body_cap() <= MAX_PROBLEM_BYTES + 64 * 1024
    assert cap("POST", "/api/problems") == problem_body_cap()
    assert cap("PUT", "/api/problems/some-id") == problem_body_cap()
    for method, path in [
        ("POST", "/api/submissions"),
        ("POST", "/api/problems/some-id/regrade"),
        ("PUT", "/api/problems"),
        ("GET", "/api/problems"),
        ("POST", "/api/problems/"),
    ]:
        assert cap(method, path) == submission_body_cap(limits), (method, path)
