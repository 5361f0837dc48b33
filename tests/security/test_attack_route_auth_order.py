"""Attacks on who may call what, now that the caller and the admin check are FastAPI dependencies
(grader/api/deps.py: SubmitterDep, AdminCallerDep, admin_only): no route lost its check, and every refusal
comes before anything else the route would do or tell:

- with API keys required, every route that takes a submitter answers 401 to an anonymous caller before a
  422 for its query or body, before it reads the body, and before it takes a waiter's slot (?wait=);
- the admin routes (uploads, regrade, delete, the list and the export) answer 401 without the token, before
  a 404 that would tell whether a problem exists and before a 422 for their query, and 403 on a server
  without GRADER_ADMIN_TOKEN whatever is sent; the admin check is each such route's first dependency;
- a wrong admin token is never the admin: hidden tests, seeds and other submitters' batches stay hidden.

No Docker: the service is built but not started; nothing here reaches a sandbox.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

TOKEN = "A" * 32
KEY = "k" * 32


def _service(tmp_path: Path, **overrides: object) -> Any:
    from grader.components import build
    from grader.config import Settings
    from tests.unit.conftest import TINY_PROBLEM

    problems = tmp_path / "problems"
    problems.mkdir(exist_ok=True)
    (problems / "tiny.yaml").write_text(TINY_PROBLEM)
    values: dict[str, object] = {
        "data_dir": tmp_path / "data",
        "problems_dir": problems,
        "admin_token": TOKEN,
        "api_keys": KEY,
        "problems_poll_s": 0,
        "max_grading_starts": 1,
    }
    values.update(overrides)
    service = build(Settings(**values))  # type: ignore[arg-type]
    service.db.create_all()
    service.watcher.poll()
    return service


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[Callable[..., TestClient]]:
    from grader.app import create_app

    opened: list[TestClient] = []

    def make(**overrides: object) -> TestClient:
        service = _service(tmp_path, **overrides)
        client = TestClient(create_app(service.settings, components=service), raise_server_exceptions=False)
        client.__enter__()
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.__exit__(None, None, None)


BAD_QUERY = "?limit=0&wait=999&include=maybe&format=xml&cursor=zz"

# (method, path, content type) of every route that takes a submitter (SubmitterDep).
SUBMITTER_ROUTES = [
    ("POST", "/api/submissions", "application/json"),
    ("POST", "/api/submissions/batch", "application/json"),
    ("GET", "/api/batches/no-such-batch", None),
    ("GET", "/api/me/submissions", None),
    ("POST", "/api/runs", "application/json"),
]
ADMIN_ROUTES = [
    ("POST", "/api/problems", "application/yaml"),
    ("PUT", "/api/problems/no-such-problem", "application/yaml"),
    ("DELETE", "/api/problems/no-such-problem", None),
    ("POST", "/api/problems/no-such-problem/regrade", None),
    ("GET", "/api/submissions", None),
    ("GET", "/api/submissions/export", None),
]


def _request(client: TestClient, method: str, path: str, ctype: str | None, **headers: str) -> Any:
    if ctype is None:  # a route that takes no body is sent none (the edge refuses one, 415, before any route)
        return client.request(method, path, headers=headers)
    headers["Content-Type"] = ctype
    return client.request(method, path, content=b"{not json: [", headers=headers)


@pytest.mark.parametrize(("method", "path", "ctype"), SUBMITTER_ROUTES)
def test_an_anonymous_caller_is_refused_401_before_any_validation(
    make_client: Callable[..., TestClient], method: str, path: str, ctype: str | None
) -> None:
    client = make_client()
    for query in ("", BAD_QUERY):
        response = _request(client, method, path + query, ctype)
        assert response.status_code == 401, (path + query, response.text)
        assert response.headers["www-authenticate"] == "Bearer"
        # A wrong key and a wrong admin token are no better.
        for headers in ({"X-API-Key": KEY + "x"}, {"Authorization": f"Bearer {TOKEN[:-1]}"}):
            assert _request(client, method, path + query, ctype, **headers).status_code == 401


@pytest.mark.parametrize(
    ("method", "path", "ctype"), [r for r in SUBMITTER_ROUTES if r[0] == "POST"] + ADMIN_ROUTES[:2]
)
def test_a_refused_caller_s_body_is_never_read(
    make_client: Callable[..., TestClient], method: str, path: str, ctype: str
) -> None:
    client = make_client()
    pulled: list[int] = []

    def body() -> Iterator[bytes]:
        for _ in range(32):
            pulled.append(1)
            yield b"x" * (1024 * 1024)

    response = client.request(method, path, content=body(), headers={"Content-Type": ctype})
    assert response.status_code == 401, response.text
    assert pulled == []
    # The control: an authorised caller's body is read (and refused for what it is).
    auth = {"Authorization": f"Bearer {TOKEN}"} if path.startswith("/api/problems") else {"X-API-Key": KEY}
    response = client.request(method, path, content=body(), headers={"Content-Type": ctype, **auth})
    assert response.status_code != 401 and pulled


def test_an_anonymous_wait_is_refused_before_it_takes_a_waiter_slot(make_client: Callable[..., TestClient]) -> None:
    client = make_client(max_waiters=1)
    waiters = client.app.state.waiters  # type: ignore[attr-defined]
    assert waiters.try_acquire()  # every slot taken: an unauthenticated waiter must hear 401, not 429
    try:
        response = _request(client, "POST", "/api/submissions?wait=30", "application/json")
        assert response.status_code == 401, response.text
        assert waiters.in_use == 1
    finally:
        waiters.release()


@pytest.mark.parametrize(("method", "path", "ctype"), ADMIN_ROUTES)
def test_admin_routes_refuse_401_before_existence_or_validation(
    make_client: Callable[..., TestClient], method: str, path: str, ctype: str | None
) -> None:
    client = make_client()
    for query in ("", BAD_QUERY):
        for headers in (
            {},
            {"Authorization": f"Bearer {TOKEN}x"},
            {"Authorization": f"Basic {TOKEN}"},
            {"X-API-Key": KEY},  # a submitter is not the admin
            {"Authorization": f"Bearer {KEY}"},
        ):
            response = _request(client, method, path + query, ctype, **headers)
            assert response.status_code == 401, (path + query, headers, response.text)
            assert "no-such-problem" not in response.text


@pytest.mark.parametrize(("method", "path", "ctype"), ADMIN_ROUTES)
def test_admin_routes_are_off_without_a_configured_token(
    make_client: Callable[..., TestClient], method: str, path: str, ctype: str | None
) -> None:
    client = make_client(admin_token="")
    for headers in ({}, {"Authorization": "Bearer "}, {"Authorization": f"Bearer {TOKEN}"}, {"X-API-Key": KEY}):
        response = _request(client, method, path + BAD_QUERY, ctype, **headers)
        assert response.status_code == 403, (path, headers, response.text)


def _routes(routes: Any) -> Iterator[APIRoute]:
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from _routes(included.routes)


def test_every_admin_route_checks_the_admin_first(make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    admin_paths = {
        ("POST", "/api/problems"),
        ("PUT", "/api/problems/{problem_id}"),
        ("DELETE", "/api/problems/{problem_id}"),
        ("POST", "/api/problems/{problem_id}/regrade"),
        ("GET", "/api/submissions"),
        ("GET", "/api/submissions/export"),
    }
    found = set()
    for route in _routes(client.app.routes):
        for method in route.methods:
            if (method, route.path) in admin_paths:
                found.add((method, route.path))
                first = route.dependant.dependencies[0].call
                assert first is not None and first.__qualname__.startswith("admin_only"), (method, route.path)
    assert found == admin_paths


def test_a_wrong_admin_token_sees_no_more_than_anyone(make_client: Callable[..., TestClient]) -> None:
    client = make_client(api_keys="")
    for path in ("/api/submissions/nope", "/submissions/nope", "/api/submissions/nope/events"):
        for headers in ({"Authorization": f"Bearer {TOKEN}x"}, {"Authorization": f"bearer  {TOKEN[:-1]} "}):
            assert client.get(path, headers=headers).status_code == 404
    # Choosing a seed is the admin's only: a near-miss token is refused, the token itself is not.
    body = {"problem_id": "tiny-problem", "source": "def double(x):\n    return 2 * x\n", "seed": 7}
    refused = client.post("/api/submissions", json=body, headers={"Authorization": f"Bearer {TOKEN}x"})
    assert refused.status_code == 403, refused.text
