"""What a browser may do to a real server (uvicorn on a socket): another site's page cannot create a
submission or a run (a text/plain form post, a no-CORS fetch), the service's own pages and clients that
are no browser still can; bodies carry their route's content type (415 otherwise); CORS answers only for
the origins on GRADER_CORS_ORIGINS."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator

import pytest

from tests.http.conftest import ADMIN_TOKEN, Server, serving

COURSE = "https://course.example"
PUBLIC = "https://judge.example"
SUBMISSION = {"problem_id": "embedding-layer", "source": "x = 1\n"}
RUN = {"problem_id": "no-such-problem", "source": "x = 1\n"}


def form_body(payload: dict[str, str]) -> bytes:
    """What `<form enctype="text/plain" method="post">` sends for one field whose name is the JSON up to the
    source's `=` and whose value is the rest: `name=value` is the JSON itself (the classic cross-site JSON
    post)."""
    text = json.dumps(payload)
    name, _, value = text.partition("=")
    assert name.count('"source"') == 1 and value, "the = must fall inside the source"
    return f"{name}={value}\r\n".encode()


def request(
    server: Server, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def own_origin(server: Server) -> str:
    return f"http://127.0.0.1:{server.port}"  # http.client's Host header names this


CROSS_SITE_FORM = {
    "Content-Type": "text/plain",
    "Origin": "https://evil.example",
    "Sec-Fetch-Site": "cross-site",
    "Sec-Fetch-Mode": "navigate",
}


@pytest.mark.parametrize(("path", "payload"), [("/api/submissions", SUBMISSION), ("/api/runs", RUN)])
def test_a_cross_site_form_post_is_refused(server: Server, path: str, payload: dict[str, str]) -> None:
    body = form_body(payload)
    assert json.loads(body) == payload  # what the form sends is the JSON body
    status, _, answer = request(server, "POST", path, body, CROSS_SITE_FORM)
    assert status == 403, answer
    assert "cross-site" in json.loads(answer)["detail"]


@pytest.mark.parametrize(("path", "payload"), [("/api/submissions", SUBMISSION), ("/api/runs", RUN)])
def test_a_form_post_from_a_browser_that_names_no_origin_is_refused_for_its_type(
    server: Server, path: str, payload: dict[str, str]
) -> None:
    """Old browsers sent neither Origin nor Sec-Fetch-Site on a form post: the content type still gives it away."""
    status, _, answer = request(server, "POST", path, form_body(payload), {"Content-Type": "text/plain"})
    assert status == 415, answer
    assert "application/json" in json.loads(answer)["detail"]


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "null", "Sec-Fetch-Site": "cross-site"},  # a sandboxed iframe, or after a redirect
        {"Origin": "null"},
        {"Sec-Fetch-Site": "same-site"},  # a sibling subdomain
        {"Origin": "https://evil.example"},  # a browser without Fetch Metadata
        {"Origin": "http://127.0.0.1:1"},  # the same host on another port is another origin
    ],
)
def test_a_cross_site_json_post_is_refused(server: Server, headers: dict[str, str]) -> None:
    body = json.dumps(SUBMISSION).encode()
    status, _, answer = request(
        server, "POST", "/api/submissions", body, {"Content-Type": "application/json", **headers}
    )
    assert status == 403, answer


def test_the_services_own_page_still_submits_and_runs(server: Server) -> None:
    same_origin = {"Content-Type": "application/json", "Origin": own_origin(server), "Sec-Fetch-Site": "same-origin"}
    status, headers, answer = request(server, "POST", "/api/submissions", json.dumps(SUBMISSION).encode(), same_origin)
    assert status == 202, answer
    assert headers["location"].startswith("/api/submissions/")
    # Past the edge and parsed: the run is refused for its problem only.
    status, _, answer = request(server, "POST", "/api/runs", json.dumps(RUN).encode(), same_origin)
    assert status == 404, answer


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8"])
def test_clients_that_send_no_origin_are_unaffected(server: Server, content_type: str) -> None:
    status, _, answer = request(
        server, "POST", "/api/submissions", json.dumps(SUBMISSION).encode(), {"Content-Type": content_type}
    )
    assert status == 202, answer


@pytest.mark.parametrize(
    ("path", "content_type", "expected"),
    [
        ("/api/submissions", None, "application/json"),
        ("/api/submissions", "application/x-www-form-urlencoded", "application/json"),
        ("/api/submissions", "multipart/form-data; boundary=x", "application/json"),
        ("/api/submissions", "application/yaml", "application/json"),
        ("/api/runs", "text/plain;charset=UTF-8", "application/json"),
        ("/api/problems", "application/json", "application/yaml"),
        ("/api/problems", "text/plain", "application/yaml"),
    ],
)
def test_a_body_of_another_content_type_is_415_before_it_is_read(
    server: Server, path: str, content_type: str | None, expected: str
) -> None:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    if content_type is not None:
        headers["Content-Type"] = content_type
    status, answer_headers, answer = request(server, "POST", path, json.dumps(SUBMISSION).encode(), headers)
    assert status == 415, answer
    assert expected in json.loads(answer)["detail"]
    assert answer_headers["connection"] == "close"  # the body was left unread


def test_requests_without_a_body_need_no_content_type(server: Server) -> None:
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    assert request(server, "DELETE", "/api/problems/no-such-problem", None, auth)[0] == 404
    assert request(server, "POST", "/api/problems/no-such-problem/regrade", None, auth)[0] == 404
    assert request(server, "POST", "/api/submissions", None)[0] == 422  # a body is needed: the route says so


def test_without_an_allow_list_there_is_no_cors(server: Server) -> None:
    preflight = {
        "Origin": COURSE,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
    }
    status, headers, _ = request(server, "OPTIONS", "/api/submissions", None, preflight)
    assert status >= 400 and "access-control-allow-origin" not in headers
    status, headers, _ = request(server, "GET", "/api/problems", None, {"Origin": COURSE})
    assert status == 200 and "access-control-allow-origin" not in headers


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server with an allow-list and a public URL."""
    with serving(tmp_path_factory.mktemp("http-cors"), cors_origins=COURSE, public_url=PUBLIC + "/") as running:
        yield running


def test_an_allowed_origin_gets_cors_and_may_submit(configured: Server) -> None:
    preflight = {
        "Origin": COURSE,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type, authorization",
    }
    status, headers, _ = request(configured, "OPTIONS", "/api/submissions", None, preflight)
    assert status == 200
    assert headers["access-control-allow-origin"] == COURSE
    assert "POST" in headers["access-control-allow-methods"]
    assert "content-type" in headers["access-control-allow-headers"].lower()
    assert "access-control-allow-credentials" not in headers
    cross = {"Content-Type": "application/json", "Origin": COURSE, "Sec-Fetch-Site": "cross-site"}
    status, headers, answer = request(configured, "POST", "/api/submissions", json.dumps(SUBMISSION).encode(), cross)
    assert status == 202, answer
    assert headers["access-control-allow-origin"] == COURSE
    assert "location" in headers["access-control-expose-headers"].lower()
    # Its pages may read the refusal of a wrong content type.
    form = {**cross, "Content-Type": "text/plain"}
    status, headers, _ = request(configured, "POST", "/api/submissions", form_body(SUBMISSION), form)
    assert status == 415 and headers["access-control-allow-origin"] == COURSE


def test_an_origin_off_the_allow_list_gets_neither_cors_nor_in(configured: Server) -> None:
    preflight = {"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}
    status, headers, _ = request(configured, "OPTIONS", "/api/submissions", None, preflight)
    assert status == 400 and "access-control-allow-origin" not in headers
    cross = {"Content-Type": "application/json", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
    status, headers, _ = request(configured, "POST", "/api/submissions", json.dumps(SUBMISSION).encode(), cross)
    assert status == 403 and "access-control-allow-origin" not in headers


def test_with_a_public_url_only_its_origin_is_the_services_own(configured: Server) -> None:
    body = json.dumps(SUBMISSION).encode()
    own = {"Content-Type": "application/json", "Origin": PUBLIC, "Sec-Fetch-Site": "same-origin"}
    assert request(configured, "POST", "/api/submissions", body, own)[0] == 202
    # The Host header names 127.0.0.1, as a DNS-rebinding page's would name the attacker's host: not enough.
    host_only = {**own, "Origin": own_origin(configured)}
    status, _, answer = request(configured, "POST", "/api/submissions", body, host_only)
    assert status == 403 and PUBLIC in json.loads(answer)["detail"]
