"""A page on another site cannot use a visitor's browser against the service (issue 24, browsers).

Found by the round-3 attacker: a `text/plain` form post from another origin created a submission (202)
and a run (200), because bodies were parsed as JSON whatever their Content-Type and no origin was
checked. Here against the real pipeline (Docker sandboxes, SQLite): the same posts are refused and leave
nothing behind, while the service's own page (same origin) still runs and submits.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from grader.storage import crud
from tests.conftest import wait_until_ready
from tests.security.attacks import CORRECT
from tests.security.conftest import security_settings

pytestmark = pytest.mark.docker

OWN_ORIGIN = "http://testserver"  # the TestClient's Host
# A correct solution with an `=` for the form's field name and value to meet at.
SUBMISSION = {"problem_id": "embedding-layer", "source": CORRECT + "\nSENT_BY_A_FORM = True\n"}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One service, under runc: the HTTP edge is the same whatever runs the sandboxes (this module's own
    fixture, in place of the suite's one per runtime)."""
    from grader.components import build

    svc = build(security_settings(tmp_path_factory.mktemp("cross-site"), "runc"))
    svc.start()
    try:
        wait_until_ready(svc)
        yield svc
    finally:
        svc.stop()


@pytest.fixture(scope="module")
def client(service: Any) -> Iterator[TestClient]:
    from grader.app import create_app

    with TestClient(create_app(service.settings, components=service)) as test_client:
        yield test_client


def form_post(payload: dict[str, Any]) -> bytes:
    """What `<form enctype="text/plain" method="post">` sends when its one field's name is the JSON up to an
    `=` inside the source and its value the rest: the body is the JSON itself."""
    text = json.dumps(payload)
    name, _, value = text.partition("=")
    assert '"source"' in name and value, "the = must fall inside the source"
    return f"{name}={value}\r\n".encode()


def stored(service: Any) -> int:
    with service.db.session() as session:
        return sum(crud.count_by_status(session).values())


BROWSER_FORM = {
    "Content-Type": "text/plain",
    "Origin": "https://attacker.example",
    "Sec-Fetch-Site": "cross-site",
    "Sec-Fetch-Mode": "navigate",
    "Sec-Fetch-Dest": "document",
}


@pytest.mark.parametrize(
    "headers",
    [BROWSER_FORM, {"Content-Type": "text/plain"}, {"Content-Type": "text/plain", "Origin": "null"}],
    ids=["fetch-metadata", "no-origin", "origin-null"],
)
def test_a_cross_site_form_post_creates_no_submission(client: TestClient, service: Any, headers: dict) -> None:
    before = stored(service)
    response = client.post("/api/submissions", content=form_post(SUBMISSION), headers=headers)
    assert response.status_code in (403, 415), response.text[:300]
    assert stored(service) == before


@pytest.mark.parametrize(
    "headers",
    [BROWSER_FORM, {"Content-Type": "text/plain"}, {"Content-Type": "application/x-www-form-urlencoded"}],
    ids=["fetch-metadata", "no-origin", "urlencoded"],
)
def test_a_cross_site_form_post_runs_nothing(client: TestClient, headers: dict) -> None:
    response = client.post("/api/runs", content=form_post(SUBMISSION), headers=headers)
    assert response.status_code in (403, 415), response.text[:300]
    assert "detail" in response.json()


def test_a_no_cors_fetch_without_a_content_type_runs_nothing(client: TestClient) -> None:
    """fetch(url, {mode: "no-cors", method: "POST", body: new Blob([json])}) sends no Content-Type at all."""
    headers = {"Origin": "https://attacker.example", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}
    body = json.dumps(SUBMISSION).encode()
    request = client.build_request("POST", "/api/runs", content=body, headers=headers)
    assert "content-type" not in request.headers
    assert client.send(request).status_code == 403
    assert client.post("/api/runs", content=body).status_code == 415  # nor from a browser that names no origin


def test_the_services_own_page_still_runs_and_submits(client: TestClient, service: Any) -> None:
    same_origin = {"Origin": OWN_ORIGIN, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}
    run = client.post("/api/runs", json=SUBMISSION, headers=same_origin)
    assert run.status_code == 200 and run.json()["status"] == "accepted", run.text
    before = stored(service)
    created = client.post("/api/submissions?wait=60", json=SUBMISSION, headers=same_origin)
    assert created.status_code == 200 and created.json()["status"] == "accepted", created.text
    assert stored(service) == before + 1
