"""GET /api/submissions/{id}/events against the real service: the order of events, hidden tests kept
hidden, heartbeats, and (through a real uvicorn) events that arrive while the submission still runs."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from grader.api import events
from grader.grading.verdict import FINAL
from tests.conftest import CASES_DIR
from tests.web.solutions import SLOW

pytestmark = pytest.mark.docker


PUBLIC_HIDDEN_FIELDS = {
    "message": None,
    "time_ms": None,
    "hint": None,
    "details": None,
    "traceback": None,
    "line": None,
}


def parse_sse(text: str) -> tuple[list[tuple[str, Any]], int]:
    """(event name, decoded data) for each event, and how many comment (heartbeat) lines came."""
    found: list[tuple[str, Any]] = []
    comments = 0
    for block in text.replace("\r\n", "\n").split("\n\n"):
        kind, data = "message", []
        for line in block.split("\n"):
            if line.startswith(":"):
                comments += 1
            elif line.startswith("event:"):
                kind = line[len("event:") :].strip()
            elif line.startswith("data:"):
                data.append(line[len("data:") :].lstrip(" "))
        if data:
            found.append((kind, json.loads("\n".join(data))))
    return found, comments


def events_url(submission_id: str) -> str:
    return f"/api/submissions/{submission_id}/events"


def test_unknown_submission_is_404(client: TestClient) -> None:
    response = client.get(events_url("0123456789abcdef0123456789abcdef"))
    assert response.status_code == 404
    assert "no submission" in response.json()["detail"]


def test_a_finished_submission_sends_its_tests_then_the_verdict_and_closes(
    client: TestClient, submit: Any, service: Any
) -> None:
    verdict = submit((CASES_DIR / "embedding-layer" / "forgot-scaling" / "solution.py").read_text())
    response = client.get(events_url(verdict["id"]))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-cache"
    assert response.text.startswith("retry: ")
    found, _ = parse_sse(response.text)
    kinds = [kind for kind, _ in found]
    assert kinds == ["status"] + ["test"] * len(verdict["tests"]) + ["verdict"]
    assert found[0][1] == {"id": verdict["id"], "status": "wrong_answer", "tests_total": len(verdict["tests"])}
    assert [data for kind, data in found if kind == "test"] == verdict["tests"]
    assert found[-1][1] == client.get(f"/api/submissions/{verdict['id']}").json()
    assert verdict["id"] not in service.notifier._waiters  # the stream let go of its watch


def test_hidden_tests_stay_hidden_in_the_stream(client: TestClient, submit: Any) -> None:
    verdict = submit((CASES_DIR / "embedding-layer" / "forgot-scaling" / "solution.py").read_text())
    response = client.get(events_url(verdict["id"]))
    found, _ = parse_sse(response.text)
    hidden = [data for kind, data in found if kind == "test" and not data["visible"]]
    assert len(hidden) >= 10
    for number, test in enumerate(hidden, 1):
        assert test["name"] == f"hidden test {number}"
        assert {key: test[key] for key in PUBLIC_HIDDEN_FIELDS} == PUBLIC_HIDDEN_FIELDS
    visible_failed = [data for kind, data in found if kind == "test" and data["visible"] and data["status"] == "failed"]
    assert visible_failed and all(test["details"] for test in visible_failed)
    for secret in ("d_model = 1024", "37000 x 512", "forgot the sqrt", "reference"):
        assert secret not in response.text, secret


def test_a_running_submission_streams_status_tests_heartbeats_then_the_verdict(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(events, "HEARTBEAT_S", 0.25)
    created = client.post("/api/submissions", json={"problem_id": "embedding-layer", "source": SLOW})
    assert created.status_code == 202
    submission_id = created.json()["id"]
    # The TestClient hands the body over once the stream has ended, that is after the verdict.
    response = client.get(events_url(submission_id))
    found, heartbeats = parse_sse(response.text)
    assert heartbeats >= 4  # the run lasts seconds with long silences, each broken every 0.25 s
    kinds = [kind for kind, _ in found]
    assert kinds[0] == "status" and kinds[-1] == "verdict" and kinds.count("verdict") == 1
    statuses = [data["status"] for kind, data in found if kind == "status"]
    assert "running" in statuses and statuses[-1] == "time_limit_exceeded"
    assert set(statuses[:-1]) <= {"queued", "running"}
    final_status_at = next(i for i, (kind, data) in enumerate(found) if kind == "status" and data["status"] in FINAL)
    assert any(kind == "test" for kind, _ in found[:final_status_at]), "no test was sent while it ran"
    # The last word on each test is the verdict's.
    verdict = found[-1][1]
    assert verdict["status"] == "time_limit_exceeded"
    latest = {data["name"]: data for kind, data in found if kind == "test"}
    assert set(latest) == {test["name"] for test in verdict["tests"]}
    assert all(latest[test["name"]] == test for test in verdict["tests"])
    assert sum(1 for test in verdict["tests"] if test["status"] == "timeout") == 3


def test_events_arrive_while_the_submission_runs(live_server: str) -> None:
    """Through a real server: the first tests reach the client seconds before the verdict does."""
    with httpx.Client(base_url=live_server, timeout=httpx.Timeout(60.0)) as http:
        created = http.post("/api/submissions", json={"problem_id": "embedding-layer", "source": SLOW})
        assert created.status_code == 202
        submission_id = created.json()["id"]
        arrivals: list[tuple[float, str]] = []
        start = time.monotonic()
        with http.stream("GET", events_url(submission_id)) as stream:
            assert stream.status_code == 200
            for line in stream.iter_lines():
                if line.startswith("event:"):
                    arrivals.append((time.monotonic() - start, line.split(":", 1)[1].strip()))
        # The stream closed by itself after the verdict.
    kinds = [kind for _, kind in arrivals]
    assert kinds[-1] == "verdict"
    first_test = next(at for at, kind in arrivals if kind == "test")
    verdict_at = arrivals[-1][0]
    assert verdict_at - first_test > 1.0, arrivals
    assert verdict_at > 4.0, arrivals  # three 2 s time limits: the run itself is long


def test_a_client_that_leaves_stops_its_stream(live_server: str, service: Any) -> None:
    """A browser that navigates away mid-run must not leave a stream (and its watch) behind."""
    with httpx.Client(base_url=live_server, timeout=httpx.Timeout(60.0)) as http:
        created = http.post("/api/submissions", json={"problem_id": "embedding-layer", "source": SLOW})
        submission_id = created.json()["id"]
        with http.stream("GET", events_url(submission_id)) as stream:
            lines = stream.iter_lines()
            for line in lines:
                if line.startswith("event: status"):
                    status = json.loads(next(lines).removeprefix("data:"))["status"]
                    break
            assert status in ("queued", "running"), status
            assert submission_id in service.notifier._waiters
        deadline = time.monotonic() + 10
        while submission_id in service.notifier._waiters and time.monotonic() < deadline:
            time.sleep(0.05)
        assert submission_id not in service.notifier._waiters
        # Let the run finish before the next test needs the sandboxes.
        final = http.get(f"/api/submissions/{submission_id}")
        while final.json()["status"] not in FINAL and time.monotonic() < deadline + 30:
            time.sleep(0.2)
            final = http.get(f"/api/submissions/{submission_id}")
