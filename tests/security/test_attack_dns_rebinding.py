"""Issue 41, point 1 (the service answers for its own names only), against a real server (uvicorn on a socket).

The attack: a page on another site makes its own name resolve to the service's address (DNS rebinding). Its
requests then carry `Host: <its name>`, an Origin naming the same host and `Sec-Fetch-Site: same-origin`: the
edge (grader/api/edge.py), with no GRADER_PUBLIC_URL set, took that for the service's own page and answered a
run 200, a submission 202 and a problem's JSON. Now any Host that is none of the service's names gets 400 before
any route: API, pages and state-changing requests alike; an IP address, localhost, GRADER_PUBLIC_URL's host and
GRADER_ALLOWED_HOSTS are answered."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator

import pytest

from tests.http.conftest import Server, serving
from tests.http.test_browsers import request

REBOUND = f"tj-rebind-{secrets.token_hex(4)}.attacker.example"
SUBMISSION = json.dumps({"problem_id": "embedding-layer", "source": "x = 1\n"}).encode()
ROUTES = [
    ("GET", "/api/problems/embedding-layer", None),
    ("GET", "/problems/embedding-layer", None),
    ("GET", "/", None),
    ("GET", "/healthz", None),
    ("POST", "/api/submissions", SUBMISSION),
    ("POST", "/api/runs", SUBMISSION),
]


def rebound(host: str, port: int, body: bytes | None) -> dict[str, str]:
    headers = {"Host": f"{host}:{port}", "Origin": f"http://{host}:{port}", "Sec-Fetch-Site": "same-origin"}
    return headers | ({"Content-Type": "application/json"} if body is not None else {})


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("rebind"), allowed_hosts="judge.internal") as running:
        yield running


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_a_rebound_name_is_refused_on_every_route(server: Server, method: str, path: str, body: bytes | None) -> None:
    status, _, answer = request(server, method, path, body, rebound(REBOUND, server.port, body))
    assert status == 400, (status, answer[:300])
    assert "does not answer for the host" in json.loads(answer)["detail"]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "LOCALHOST.", "judge.internal", "[::1]"])
def test_the_services_own_names_and_addresses_are_answered(server: Server, host: str) -> None:
    port = server.port
    status, _, answer = request(server, "GET", "/api/problems/embedding-layer", None, {"Host": f"{host}:{port}"})
    assert status == 200, (status, answer[:300])
    status, _, answer = request(server, "POST", "/api/submissions", SUBMISSION, rebound(host, port, SUBMISSION))
    assert status == 202, (status, answer[:300])


@pytest.mark.parametrize("value", ["", "a b", "evil.example:x", "[::1", "x" * 400])
def test_a_host_header_that_names_no_host_is_refused(server: Server, value: str) -> None:
    status, _, answer = request(server, "GET", "/api/problems", None, {"Host": value})
    assert status == 400, (status, answer[:300])


def test_a_public_url_is_one_of_the_services_names(tmp_path_factory: pytest.TempPathFactory) -> None:
    with serving(tmp_path_factory.mktemp("public"), public_url="https://judge.example") as server:
        status, _, _ = request(server, "GET", "/api/problems", None, {"Host": "judge.example"})
        assert status == 200
        status, _, _ = request(server, "GET", "/api/problems", None, {"Host": f"{REBOUND}:{server.port}"})
        assert status == 400


def test_a_star_answers_every_host(tmp_path_factory: pytest.TempPathFactory) -> None:
    """For a proxy in front that checks Host itself (GRADER_ALLOWED_HOSTS=*)."""
    with serving(tmp_path_factory.mktemp("star"), allowed_hosts="*") as server:
        status, _, _ = request(server, "GET", "/api/problems", None, {"Host": f"{REBOUND}:{server.port}"})
        assert status == 200
