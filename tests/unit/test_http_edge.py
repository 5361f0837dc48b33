"""The HTTP edge without a server: which origins a state-changing request may come from, which content
types a body may have (grader/api/edge.py), and how a malformed body is reported, bounded
(grader/api/schemas.py). tests/http/test_browsers.py and test_bounded_answers.py send the same through a
real uvicorn."""

from __future__ import annotations

import asyncio
import importlib
import json
import pkgutil
import time
from typing import Any

import pytest
from fastapi import APIRouter
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, ValidationError

import grader.api
from grader.api.edge import FORM_TYPES, JSON_TYPES, YAML_TYPES, DeclaredBodies, EdgeMiddleware
from grader.api.forwarded import ForwardedMiddleware
from grader.api.schemas import SubmissionCreate, shown, validation_message
from grader.app import create_app
from grader.config import Settings
from grader.origins import parse_origin

OWN = "http://judge.test:8000"
ALLOWED = "https://course.example"
FORM = b'{"problem_id": "embedding-layer", "source": "x = 1", "pad": "=x"}\r\n'


def _declared(scope: dict[str, Any]) -> frozenset[str] | None:
    if scope["path"] == "/api/problems":
        return YAML_TYPES
    return None if scope["path"].endswith("/regrade") else JSON_TYPES


async def _inner(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def call(
    app: Any,
    method: str = "POST",
    path: str = "/api/submissions",
    headers: dict[str, str] | None = None,
    body: bytes = b"{}",
    client: str = "192.0.2.7",
) -> tuple[int, str]:
    """(status, detail) of one request through `app`."""
    raw = {"host": "judge.test:8000", "content-type": "application/json", **(headers or {})}
    pairs = [(name.encode(), value.encode("latin-1")) for name, value in raw.items() if value is not None]
    if body:
        pairs.append((b"content-length", str(len(body)).encode()))
    scope = {"type": "http", "method": method, "path": path, "headers": pairs, "scheme": "http", "client": (client, 1)}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    payload = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], json.loads(payload)["detail"] if payload else ""


def edge(public: str | None = None, allowed: tuple[str, ...] = (ALLOWED,)) -> EdgeMiddleware:
    return EdgeMiddleware(_inner, public_origin=public, allowed_origins=frozenset(allowed), media_for=_declared)


# -- origins ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "origin"),
    [
        ("http://Judge.Test:8000", "http://judge.test:8000"),
        ("https://judge.test:443", "https://judge.test"),
        ("http://judge.test:80/", "http://judge.test"),
        ("http://[::1]:8000", "http://[::1]:8000"),
        ("null", None),
        ("", None),
        ("judge.test", None),
        ("file://", None),
        ("chrome-extension://abcdef", None),
        ("http://user@judge.test", None),
        ("http://judge.test/path", None),
        ("http://judge.test:99999", None),
        ("http://judge test", None),
        ("http://" + "a" * 2000, None),
    ],
)
def test_an_origin_is_normalised_or_refused(value: str, origin: str | None) -> None:
    assert parse_origin(value) == origin


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "https://evil.example"},
        {"origin": "https://evil.example", "sec-fetch-site": "cross-site"},
        {"origin": "null"},
        {"origin": "null", "sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site"},
        {"origin": "https://judge.test:8000"},  # another scheme is another origin
        {"origin": "http://judge.test:8001"},
        {"origin": "http://sub.judge.test:8000", "sec-fetch-site": "same-site"},
        {"origin": OWN, "sec-fetch-site": "cross-site"},  # what no browser sends: its own word wins
        {"origin": "garbage"},
        {"origin": "http://" + "a" * 5000},
    ],
)
@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_a_cross_site_state_changing_request_is_403(headers: dict[str, str], method: str) -> None:
    status, detail = call(edge(), method, headers=headers)
    assert status == 403, detail
    assert detail.startswith("cross-site request refused") and len(detail) < 400


@pytest.mark.parametrize(
    "headers",
    [
        {},  # curl, the CLI, a harness
        {"origin": OWN, "sec-fetch-site": "same-origin"},
        {"origin": "HTTP://JUDGE.TEST:8000"},
        {"sec-fetch-site": "same-origin"},
        {"sec-fetch-site": "none"},
        {"origin": ALLOWED, "sec-fetch-site": "cross-site"},
        {"origin": ALLOWED + ":443", "sec-fetch-site": "same-site"},
    ],
)
def test_same_origin_allowed_and_origin_less_requests_pass(headers: dict[str, str]) -> None:
    assert call(edge(), headers=headers) == (204, "")


def test_safe_methods_are_not_checked() -> None:
    for method in ("GET", "HEAD", "OPTIONS"):
        headers = {"origin": "https://evil.example", "sec-fetch-site": "cross-site", "content-type": "text/plain"}
        assert call(edge(), method, headers=headers)[0] == 204


def test_two_origin_headers_are_refused() -> None:
    app = edge()
    scope_headers = [(b"host", b"judge.test:8000"), (b"origin", OWN.encode()), (b"origin", b"https://evil.example")]

    async def run() -> int:
        sent: list[dict[str, Any]] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {"type": "http", "method": "POST", "path": "/x", "headers": scope_headers, "scheme": "http"}
        await app(scope, None, send)  # type: ignore[arg-type]
        return int(sent[0]["status"])

    assert asyncio.run(run()) == 403


def test_with_a_public_url_the_host_header_does_not_count() -> None:
    """A DNS-rebinding page names the attacker's host in Host and Origin alike; GRADER_PUBLIC_URL decides."""
    app = edge(public="https://judge.example")
    rebound = {"host": "rebound.evil.example:8000", "origin": "http://rebound.evil.example:8000"}
    assert call(app, headers=rebound)[0] == 403
    assert call(app, headers={"origin": OWN})[0] == 403
    assert call(app, headers={"origin": "https://judge.example", "sec-fetch-site": "same-origin"})[0] == 204


def test_the_scheme_and_host_of_a_trusted_proxy_count_and_no_one_elses() -> None:
    app = ForwardedMiddleware(edge(), proxies=["10.0.0.0/8"])
    behind = {"host": "api:8000", "x-forwarded-proto": "https", "x-forwarded-host": "judge.example"}
    through = {**behind, "origin": "https://judge.example"}
    assert call(app, headers=through, client="10.1.2.3")[0] == 204
    assert call(app, headers=through, client="192.0.2.7")[0] == 403  # not a proxy: its headers mean nothing
    # The proxy says https; a page served over plain http is another origin.
    assert call(app, headers={**behind, "origin": "http://judge.example"}, client="10.1.2.3")[0] == 403
    # nginx (compose/nginx.conf) passes Host through and sets only X-Forwarded-Proto.
    nginx = {"host": "judge.example", "x-forwarded-proto": "https", "origin": "https://judge.example"}
    assert call(app, headers=nginx, client="10.1.2.3")[0] == 204


# -- content types -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "content_type", [*sorted(FORM_TYPES), "text/plain; charset=utf-8", "application/yaml", "application/jsonx", None]
)
def test_a_json_route_refuses_every_other_body_with_415(content_type: str | None) -> None:
    status, detail = call(edge(), headers={"content-type": content_type}, body=FORM)  # type: ignore[dict-item]
    assert status == 415
    assert "application/json" in detail


@pytest.mark.parametrize("content_type", ["application/json", "Application/JSON; charset=UTF-8", " application/json "])
def test_json_with_parameters_passes(content_type: str) -> None:
    assert call(edge(), headers={"content-type": content_type})[0] == 204


def test_an_upload_takes_yaml_only() -> None:
    for media in sorted(YAML_TYPES):
        assert call(edge(), path="/api/problems", headers={"content-type": media}, body=b"id: x")[0] == 204
    for media in ("application/json", "text/plain", "text/x-yaml"):
        status, detail = call(edge(), path="/api/problems", headers={"content-type": media}, body=b"id: x")
        assert status == 415 and "application/yaml" in detail


def test_a_request_without_a_body_needs_no_content_type() -> None:
    for path in ("/api/submissions", "/api/problems/x/regrade", "/api/problems"):
        assert call(edge(), path=path, headers={"content-type": None}, body=b"")[0] == 204  # type: ignore[dict-item]


def test_a_route_without_a_body_refuses_one_that_a_form_could_send() -> None:
    path = "/api/problems/x/regrade"
    assert call(edge(), path=path, headers={"content-type": "text/plain"}, body=FORM)[0] == 415
    assert call(edge(), path=path, headers={"content-type": None}, body=FORM)[0] == 415  # type: ignore[dict-item]
    assert call(edge(), path=path, headers={"content-type": "application/yaml"}, body=b"id: x")[0] == 204


def test_the_cross_site_check_comes_first() -> None:
    headers = {"origin": "https://evil.example", "content-type": "text/plain"}
    assert call(edge(), headers=headers, body=FORM)[0] == 403


# -- settings ----------------------------------------------------------------------------------------------
def test_cors_origins_and_the_public_url_are_checked_at_start() -> None:
    settings = Settings(
        cors_origins=" https://Course.Example , http://localhost:5173/ ", public_url="https://j.example/x/"
    )
    assert settings.http.cors_allowed == ["https://course.example", "http://localhost:5173"]
    assert settings.http.public_origin == "https://j.example"
    assert Settings().http.cors_allowed == [] and Settings().http.public_origin is None
    for bad in ("*", "null", "https://x.example/path", "ftp://x.example", "x.example"):
        with pytest.raises(ValidationError, match="GRADER_CORS_ORIGINS"):
            Settings(cors_origins=bad)
    for bad in ("judge.example", "ftp://judge.example", "https://", "http://[::1"):
        with pytest.raises(ValidationError, match="GRADER_PUBLIC_URL"):
            Settings(public_url=bad)


# -- bounded answers ---------------------------------------------------------------------------------------
class Nested(BaseModel):
    model_config = ConfigDict(extra="forbid")
    values: list[int]


def _error(model: type[BaseModel], body: bytes) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        model.model_validate_json(body)
    return caught.value


def test_40000_unknown_keys_get_a_short_message_that_counts_them() -> None:
    body = json.dumps({"problem_id": "p", "source": "s", **{f"k{i:05d}": 1 for i in range(40_000)}}).encode()
    message = validation_message(_error(SubmissionCreate, body))
    assert message.startswith("k00000: Extra inputs are not permitted; k00001:")
    assert message.endswith("and 39995 more errors")
    assert len(message) < 2048


def test_40000_errors_in_a_list_and_huge_keys_are_cut() -> None:
    message = validation_message(_error(Nested, json.dumps({"values": ["x"] * 40_000}).encode()))
    assert message.startswith("values.0: Input should be a valid integer") and message.endswith("and 39995 more errors")
    huge = json.dumps({"values": [], **{"k" * 100_000 + str(i): 1 for i in range(3)}}).encode()
    message = validation_message(_error(Nested, huge))
    assert len(message) < 2048 and message.count("k" * 63 + "…:") == 3 and "k" * 64 not in message


def test_the_message_takes_no_longer_than_the_validation_itself() -> None:
    """errors() would build a dict per error (40,000 take longer than validating them); the message reads
    only the first few."""
    body = json.dumps({"problem_id": "p", "source": "s", **{f"k{i:05d}": 1 for i in range(40_000)}}).encode()
    start = time.perf_counter()
    exc = _error(SubmissionCreate, body)
    validated = time.perf_counter() - start
    start = time.perf_counter()
    validation_message(exc)
    assert time.perf_counter() - start < 3 * validated + 0.05


def test_fastapis_own_validation_errors_are_bounded_too() -> None:
    errors = [{"loc": ("query", "x" * 10_000), "msg": "m" * 10_000, "type": "t"} for _ in range(40_000)]
    message = validation_message(RequestValidationError(errors))
    assert len(message) < 2048 and message.endswith("and 39995 more errors")


def test_an_id_repeated_in_an_answer_is_cut() -> None:
    assert shown("x" * 100_000).startswith("'xxx") and len(shown("x" * 100_000)) <= 100
    assert shown("embedding-layer") == "'embedding-layer'"


def _routers() -> list[APIRouter]:
    found = []
    for info in pkgutil.iter_modules(grader.api.__path__):
        module = importlib.import_module(f"grader.api.{info.name}")
        found.extend(value for value in vars(module).values() if isinstance(value, APIRouter))
    return found


def test_no_route_lets_fastapi_validate_its_body() -> None:
    """FastAPI turns every error of a body it validates into a dict on the event loop before any handler
    sees it (40,000 unknown keys: about 250 ms a request); bodies are read with schemas.read_json_body."""
    routes = [route for router in _routers() for route in router.routes if isinstance(route, APIRoute)]
    assert routes, "no API routes found"
    for route in routes:
        assert route.body_field is None, f"{route.methods} {route.path}: use grader.api.schemas.read_json_body"


def test_the_declared_bodies_are_the_openapi_documents() -> None:
    """The content types the edge enforces are those /docs shows, read from the app itself."""
    declared = DeclaredBodies(create_app(Settings()))
    for method, path, media in [
        ("POST", "/api/submissions", JSON_TYPES),
        ("POST", "/api/runs", JSON_TYPES),
        ("POST", "/api/problems", YAML_TYPES),
        ("PUT", "/api/problems/some-id", YAML_TYPES),
        ("DELETE", "/api/problems/some-id", None),
        ("POST", "/api/problems/some-id/regrade", None),
        ("POST", "/problems/some-id", None),
        ("POST", "/api/problems/a/b/c", None),
    ]:
        assert declared({"method": method, "path": path}) == media, (method, path)
