"""queued and running are real states, and internal_error is the judge's own fault, produced for real."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from grader.app import create_app
from grader.components import build
from tests.conftest import CASES_DIR, make_settings, wait_until_ready

pytestmark = pytest.mark.docker

SLOW = (CASES_DIR / "embedding-layer" / "one-test-hangs" / "solution.py").read_text()


def test_submissions_are_queued_then_running_then_final(client: TestClient) -> None:
    ids = []
    for _ in range(3):  # the pool has two sandboxes: the third waits its turn
        response = client.post("/api/submissions", json={"problem_id": "embedding-layer", "source": SLOW})
        assert response.status_code == 202
        ids.append(response.json()["id"])
    seen: dict[str, set[str]] = {submission_id: set() for submission_id in ids}
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        for submission_id in ids:
            seen[submission_id].add(client.get(f"/api/submissions/{submission_id}").json()["status"])
        if all("time_limit_exceeded" in states for states in seen.values()):
            break
        time.sleep(0.05)
    assert all("time_limit_exceeded" in states for states in seen.values()), seen
    assert "running" in seen[ids[0]], seen
    assert "queued" in seen[ids[2]], seen


BROKEN_PROBLEM = """
id: broken-reference
title: A problem whose reference fails its own test
difficulty: easy
statement: Return one.
starter_code: |
  def one():
      pass
entry_points: [one]
reference: |
  def one():
      raise RuntimeError("the author's bug")
tests:
  - name: returns one
    visible: true
    code: |
      return {"value": one()}
"""


def test_a_problem_whose_reference_fails_is_internal_error(tmp_path: Path) -> None:
    problems = tmp_path / "problems"
    problems.mkdir()
    (problems / "broken-reference.yaml").write_text(BROKEN_PROBLEM)
    service = build(make_settings(tmp_path / "data", problems_dir=problems, pool_size=1))
    service.start()
    try:
        wait_until_ready(service)
        with TestClient(create_app(service.settings, components=service)) as client:
            response = client.post(
                "/api/submissions?wait=60",
                json={"problem_id": "broken-reference", "source": "def one():\n    return 1\n"},
            )
            verdict = response.json()
            assert response.status_code == 200
            assert verdict["status"] == "internal_error"
            assert "reference" in verdict["message"]
            assert verdict["score"] == 0.0
    finally:
        service.stop()


def test_no_sandbox_image_is_internal_error_not_the_submissions_fault(tmp_path: Path) -> None:
    service = build(
        make_settings(
            tmp_path,
            sandbox_image="torchjudge-no-such-image",
            pool_size=1,
            max_grading_starts=1,
            sandbox_acquire_timeout_s=1.0,
        )
    )
    service.start()
    try:
        assert not service.pool.ready
        with TestClient(create_app(service.settings, components=service)) as client:
            assert client.get("/healthz").status_code == 503
            response = client.post(
                "/api/submissions?wait=30", json={"problem_id": "embedding-layer", "source": "x = 1\n"}
            )
            assert response.status_code == 200, response.text
            assert response.json()["status"] == "internal_error"
    finally:
        service.stop()
