"""The HTTP API against the real service: problems, submissions, and every kind of bad input."""

from __future__ import annotations

import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from grader.grading.verdict import FINAL
from grader.storage import crud
from grader.submissions.submitters import Submitter
from tests.services import REFERENCE

pytestmark = pytest.mark.docker


def test_healthz_reports_a_warm_pool(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["ready"] is True
    assert body["sandbox"]["idle"] + body["sandbox"]["busy"] == body["sandbox"]["size"]
    assert body["problems"] >= 1


def test_problem_list(client: TestClient) -> None:
    problems = client.get("/api/problems").json()
    embedding = next(p for p in problems if p["id"] == "embedding-layer")
    assert embedding["title"] == "Embedding Layer"
    assert embedding["difficulty"] == "easy"
    assert len(embedding["version"]) == 16


def test_problem_detail_never_leaks_reference_hidden_tests_or_pitfalls(client: TestClient) -> None:
    response = client.get("/api/problems/embedding-layer")
    assert response.status_code == 200
    body = response.json()
    assert body["entry_points"] == ["create_embedding_layer", "embed_tokens"]
    assert "def embed_tokens" in body["starter_code"]
    assert len(body["visible_tests"]) >= 3
    assert body["hidden_tests"] >= 1
    text = response.text
    for secret in ("reference", "pitfalls", "math.sqrt(d_model)\n", "hint"):
        assert secret not in text, secret
    assert "d_model = 1024" not in text  # a hidden test's name
    for listed in client.get("/api/problems").json():  # every problem's page, its custom test's words included
        shown = client.get(f"/api/problems/{listed['id']}").text
        assert "reference" not in shown and "pitfall" not in shown, listed["id"]


def test_unknown_problem_is_404(client: TestClient) -> None:
    assert client.get("/api/problems/no-such-problem").status_code == 404
    response = client.post("/api/submissions", json={"problem_id": "no-such-problem", "source": "x = 1"})
    assert response.status_code == 404
    assert "no-such-problem" in response.json()["detail"]


def test_unknown_submission_is_404(client: TestClient) -> None:
    assert client.get("/api/submissions/0123456789abcdef").status_code == 404


def test_source_over_64_kib_is_413(client: TestClient) -> None:
    source = "x = 1\n" + "#" * (64 * 1024)
    response = client.post("/api/submissions", json={"problem_id": "embedding-layer", "source": source})
    assert response.status_code == 413
    assert "limit" in response.json()["detail"]


def test_huge_body_is_413_before_parsing(client: TestClient) -> None:
    response = client.post(
        "/api/submissions", content=b"{" + b" " * (2 * 1024 * 1024) + b"}", headers={"content-type": "application/json"}
    )
    assert response.status_code == 413


@pytest.mark.parametrize("source", ["", "   \n\t  "])
def test_empty_source_is_422(client: TestClient, source: str) -> None:
    response = client.post("/api/submissions", json={"problem_id": "embedding-layer", "source": source})
    assert response.status_code == 422
    assert "empty" in response.json()["detail"]


def test_non_utf8_body_is_422(client: TestClient) -> None:
    body = b'{"problem_id": "embedding-layer", "source": "x = \xff\xfe"}'
    response = client.post("/api/submissions", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422


def test_lone_surrogate_source_is_422(client: TestClient) -> None:
    body = b'{"problem_id": "embedding-layer", "source": "x = \\ud800"}'
    response = client.post("/api/submissions", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert response.json()["detail"]


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"[]",
        b'{"problem_id": "embedding-layer"}',
        b'{"source": "x"}',
        b'{"problem_id": 5, "source": 6}',
        b'{"problem_id": "embedding-layer", "source": "x", "extra": 1}',
    ],
)
def test_malformed_requests_are_422_with_a_message(client: TestClient, body: bytes) -> None:
    response = client.post("/api/submissions", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert isinstance(response.json()["detail"], str) and response.json()["detail"]


def test_wait_out_of_range_is_422(client: TestClient) -> None:
    response = client.post("/api/submissions?wait=61", json={"problem_id": "embedding-layer", "source": "x = 1"})
    assert response.status_code == 422


def test_without_wait_returns_202_and_a_location_to_poll(client: TestClient) -> None:
    import time

    response = client.post("/api/submissions", json={"problem_id": "embedding-layer", "source": "x = 1"})
    assert response.status_code == 202
    body = response.json()
    assert body["status"] in ("queued", "running")
    location = response.headers["location"]
    assert location == f"/api/submissions/{body['id']}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        verdict = client.get(location).json()
        if verdict["status"] not in ("queued", "running"):
            break
        time.sleep(0.1)
    assert verdict["status"] == "compile_error"
    assert "missing function" in verdict["message"]


def test_openapi_documents_the_api(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    assert "/api/submissions" in spec["paths"]
    assert "/api/submissions/{submission_id}" in spec["paths"]
    assert client.get("/docs").status_code == 200


def test_the_verdict_a_waiting_request_gets_is_the_stored_one(client: TestClient) -> None:
    """?wait= answers with the row the grader stored (handed over, not read back): it must be exactly
    what the database holds, field for field, hidden tests redacted the same way."""
    wrong = (
        "import torch\n\n"
        "def create_embedding_layer(vocab_size, d_model):\n    return torch.nn.Embedding(vocab_size, d_model)\n\n"
        "def embed_tokens(layer, tokens, d_model):\n    return layer(tokens)\n"
    )
    waited = client.post("/api/submissions?wait=60", json={"problem_id": "embedding-layer", "source": wrong})
    assert waited.status_code == 200, waited.text
    body = waited.json()
    assert body["status"] == "wrong_answer" and body["finished_at"] is not None
    assert body["created_at"].endswith("Z") and body["finished_at"].endswith("Z"), "ISO 8601 with its time zone"
    assert any(not test["visible"] for test in body["tests"])
    assert body == client.get(f"/api/submissions/{body['id']}").json()


def test_a_submission_stored_while_a_grader_waits_is_stored_taken_and_graded_once(service: Any) -> None:
    """Stored as a waiting grader takes it (running, first attempt, leased): the grader starts at once,
    without a second write, and the verdict is that attempt's."""
    deadline = time.monotonic() + 30
    while service.dispatcher.idle == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert service.dispatcher.idle > 0
    problem = service.intake.problem("embedding-layer")
    stored = service.intake.store(problem, REFERENCE, Submitter(None), None)
    assert stored.taken is not None
    assert (stored.taken.status, stored.taken.attempts, stored.taken.grading_starts) == ("running", 1, 1)
    assert stored.taken.lease_expires_at is not None and stored.taken.started_at is not None
    service.intake.dispatch(stored)
    while time.monotonic() < deadline + 60:
        with service.db.session() as session:
            row = crud.submission_row(session, submission_id=stored.submission_id)
        if row is not None and row.status in FINAL:
            break
        time.sleep(0.05)
    assert row is not None and (row.status, row.attempts) == ("accepted", 1)
