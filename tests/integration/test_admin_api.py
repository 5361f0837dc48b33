"""The admin API against the real service: uploads checked in real sandboxes, graded against, replaced,
regraded, deleted, kept across a restart; and problem files picked up without a restart.

Every service here has its own temporary data and problems directories.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from grader.app import create_app
from grader.components import Components, build
from tests.conftest import make_settings, wait_until_ready

pytestmark = pytest.mark.docker

TOKEN = "integration-admin-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/yaml"}


def scaling_problem(problem_id: str, factor: int = 2, *, pitfall: str = "return x", reference: str = "") -> str:
    """A small valid problem: multiply by `factor`; its pitfall returns the input unchanged."""
    body = reference or f"return {factor} * x"
    return f"""\
id: {problem_id}
title: Scale by {factor}
difficulty: easy
statement: Return ${factor}x$.
starter_code: |
  def scale(x):
      pass
entry_points: [scale]
reference: |
  def scale(x):
      {body}
tests:
  - name: ones
    visible: true
    code: |
      return {{"out": scale(torch.arange(1.0, 4.0))}}
  - name: a random vector
    code: |
      return {{"out": scale(torch.randn(4))}}
pitfalls:
  - name: forgot the factor
    hint: Multiply by the factor.
    code: |
      def scale(x):
          {pitfall}
"""


DOUBLE = "def scale(x):\n    return 2 * x\n"


def start_service(data_dir: Path, problems_dir: Path) -> Components:
    service = build(
        make_settings(data_dir, problems_dir=problems_dir, admin_token=TOKEN, pool_size=1, problems_poll_s=0.2)
    )
    service.start()
    wait_until_ready(service)
    return service


@pytest.fixture(scope="module")
def admin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Components]]:
    root = tmp_path_factory.mktemp("admin")
    problems = root / "problems"
    problems.mkdir()
    (problems / "file-problem.yaml").write_text(scaling_problem("file-problem"))
    service = start_service(root / "data", problems)
    try:
        with TestClient(create_app(service.settings, components=service)) as client:
            yield client, service
    finally:
        service.stop()


@pytest.fixture
def admin_client(admin: tuple[TestClient, Components]) -> TestClient:
    return admin[0]


def wait_for(predicate: Callable[[], Any], timeout: float = 60.0, what: str = "the condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def submit(client: TestClient, problem_id: str, source: str) -> dict:
    response = client.post("/api/submissions?wait=60", json={"problem_id": problem_id, "source": source})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


# -- the token ---------------------------------------------------------------------------------------------
def test_without_a_configured_token_uploads_are_403(client: TestClient) -> None:
    response = client.post("/api/problems", content=scaling_problem("x"), headers=AUTH)
    assert response.status_code == 403
    assert "GRADER_ADMIN_TOKEN" in response.json()["detail"]


def test_a_wrong_token_is_401(admin_client: TestClient) -> None:
    headers = {**AUTH, "Authorization": "Bearer not-the-token"}
    assert admin_client.post("/api/problems", content=scaling_problem("x"), headers=headers).status_code == 401
    headers.pop("Authorization")
    assert admin_client.post("/api/problems", content=scaling_problem("x"), headers=headers).status_code == 401


# -- uploads ----------------------------------------------------------------------------------------------
def test_a_reference_that_raises_is_refused(admin_client: TestClient) -> None:
    text = scaling_problem("raising-reference", reference='raise RuntimeError("the author\'s bug")')
    response = admin_client.post("/api/problems", content=text, headers=AUTH)
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["errors"] and all("reference" in error for error in body["errors"])
    raise_line = next(n for n, line in enumerate(text.splitlines(), 1) if "raise RuntimeError" in line)
    assert body["errors"][0].startswith(f"upload.yaml:{raise_line}: reference: the reference fails test 1 'ones': ")
    assert "RuntimeError: the author's bug" in body["detail"]
    assert body["check"]["ok"] is False
    assert admin_client.get("/api/problems/raising-reference").status_code == 404


def test_a_pitfall_that_passes_every_test_is_refused_by_name(admin_client: TestClient) -> None:
    text = scaling_problem("harmless-pitfall", pitfall="return x + x")
    response = admin_client.put("/api/problems/harmless-pitfall", content=text, headers=AUTH)
    assert response.status_code == 422, response.text
    [error] = response.json()["errors"]
    assert error.startswith("harmless-pitfall.yaml:")
    assert "pitfalls.1: pitfall 'forgot the factor' passes every test" in error
    assert admin_client.get("/api/problems/harmless-pitfall").status_code == 404


def test_upload_grade_replace_regrade_and_delete(admin_client: TestClient) -> None:
    """One problem's whole life through the API (one test, to keep the sandbox runs few)."""
    first = admin_client.post("/api/problems", content=scaling_problem("life-demo"), headers=AUTH)
    assert first.status_code == 201, first.text
    stored = first.json()
    assert first.headers["location"] == "/api/problems/life-demo"
    assert stored["id"] == "life-demo" and stored["created"] is True and stored["title"] == "Scale by 2"
    assert stored["check"]["ok"] is True
    statuses = {step["name"]: step["status"] for step in stored["check"]["steps"]}
    assert statuses.pop("alternatives") == "skipped", "the problem has no alternatives"
    assert set(statuses.values()) == {"ok"} and len(statuses) == 7, statuses
    listed = {p["id"]: p for p in admin_client.get("/api/problems").json()}
    assert listed["life-demo"]["version"] == stored["version"]
    assert admin_client.post("/api/problems", content=scaling_problem("life-demo"), headers=AUTH).status_code == 409

    # Graded against the upload; a pitfall's mistake gets its hint.
    verdict = submit(admin_client, "life-demo", DOUBLE)
    assert verdict["status"] == "accepted", verdict
    assert verdict["problem_version"] == stored["version"]
    wrong = submit(admin_client, "life-demo", "def scale(x):\n    return x\n")
    assert wrong["status"] == "wrong_answer" and wrong["hint"] == "Multiply by the factor."

    # Replaced: a new version; verdicts keep the version they were graded against until a regrade.
    tripled = scaling_problem("life-demo", factor=3)
    second = admin_client.put("/api/problems/life-demo", content=tripled, headers=AUTH)
    assert second.status_code == 200, second.text
    assert second.json()["created"] is False
    new_version = second.json()["version"]
    assert new_version != stored["version"]
    kept = admin_client.get(f"/api/submissions/{verdict['id']}").json()
    assert kept["status"] == "accepted" and kept["problem_version"] == stored["version"]
    unchanged = admin_client.put("/api/problems/life-demo", content=tripled, headers=AUTH)
    assert unchanged.status_code == 200 and unchanged.json()["checked"] is False  # the same version: said so
    assert second.json()["checked"] is True

    response = admin_client.post("/api/problems/life-demo/regrade", headers=AUTH)
    assert response.status_code == 202
    assert response.json() == {"problem_id": "life-demo", "version": new_version, "requeued": 2}

    def regraded(submission_id: str) -> dict | None:
        current = admin_client.get(f"/api/submissions/{submission_id}").json()
        return current if current["status"] not in ("queued", "running") else None

    final = wait_for(lambda: regraded(verdict["id"]), what="the regrade")
    assert final["status"] == "wrong_answer"
    assert final["problem_version"] == new_version
    assert final["tests"][0]["details"]["expected"]["sample"] == [3.0, 6.0, 9.0]
    assert wait_for(lambda: regraded(wrong["id"]), what="the regrade")["problem_version"] == new_version

    # Deleted: gone from the list, its verdicts still readable.
    assert admin_client.delete("/api/problems/life-demo", headers=AUTH).status_code == 204
    assert admin_client.get("/api/problems/life-demo").status_code == 404
    assert admin_client.delete("/api/problems/life-demo", headers=AUTH).status_code == 404
    assert admin_client.get(f"/api/submissions/{verdict['id']}").json()["status"] == "wrong_answer"


# -- the problems directory ------------------------------------------------------------------------------
def test_a_file_problem_wins_over_uploads(admin_client: TestClient) -> None:
    text = scaling_problem("file-problem", factor=5)
    assert admin_client.put("/api/problems/file-problem", content=text, headers=AUTH).status_code == 409
    assert admin_client.delete("/api/problems/file-problem", headers=AUTH).status_code == 409
    assert admin_client.get("/api/problems/file-problem").json()["title"] == "Scale by 2"


def test_a_file_dropped_into_the_problems_dir_is_served_without_a_restart(
    admin: tuple[TestClient, Components],
) -> None:
    client, service = admin
    path = service.settings.problems.dir / "dropped.yaml"
    path.write_text(scaling_problem("dropped-in"))
    first = wait_for(
        lambda: (
            client.get("/api/problems/dropped-in").json()
            if client.get("/api/problems/dropped-in").status_code == 200
            else None
        ),
        timeout=10,
        what="the new file",
    )
    assert first["title"] == "Scale by 2"
    path.write_text(scaling_problem("dropped-in", factor=7))
    edited = wait_for(
        lambda: (body := client.get("/api/problems/dropped-in").json()).get("version") != first["version"] and body,
        timeout=10,
        what="the edit",
    )
    assert edited["title"] == "Scale by 7"
    path.unlink()
    wait_for(lambda: client.get("/api/problems/dropped-in").status_code == 404, timeout=10, what="the removal")
    assert client.get("/api/problems/file-problem").status_code == 200


# -- restarts ----------------------------------------------------------------------------------------------
def test_an_upload_survives_a_restart(tmp_path: Path) -> None:
    problems = tmp_path / "problems"
    problems.mkdir()
    service = start_service(tmp_path / "data", problems)
    try:
        with TestClient(create_app(service.settings, components=service)) as client:
            response = client.post("/api/problems", content=scaling_problem("persistent"), headers=AUTH)
            assert response.status_code == 201, response.text
            version = response.json()["version"]
    finally:
        service.stop()

    again = start_service(tmp_path / "data", problems)
    try:
        loaded = again.registry.get("persistent")
        assert loaded is not None and loaded.uploaded and loaded.version == version
        with TestClient(create_app(again.settings, components=again)) as client:
            assert client.get("/api/problems/persistent").json()["version"] == version
            assert client.post("/api/problems", content=scaling_problem("persistent"), headers=AUTH).status_code == 409
    finally:
        again.stop()
