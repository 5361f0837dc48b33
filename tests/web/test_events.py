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
    found, comments = parse_sse_ids(text)
    return [(kind, data) for _, kind, data in found], comments


def parse_sse_ids(text: str) -> tuple[list[tuple[int | None, str, Any]], int]:
    """(id, event name, decoded data) for each event, and how many comment (heartbeat) lines came."""
    found: list[tuple[int | None, str, Any]] = []
    comments = 0
    for block in text.replace("\r\n", "\n").split("\n\n"):
        event_id, kind, data = None, "message", []
        for line in block.split("\n"):
            if line.startswith(":"):
                comments += 1
            elif line.startswith("id:"):
                event_id = int(line[len("id:") :].strip())
            elif line.startswith("event:"):
                kind = line[len("event:") :].strip()
            elif line.startswith("data:"):
                data.append(line[len("data:") :].lstrip(" "))
        if data:
            found.append((event_id, kind, json.loads("\n".join(data))))
    return found, comments


def events_url(submission_id: str) -> str:
    return f"/api/submissions/{submission_id}/events"


def without_hint(test: dict[str, Any]) -> dict[str, Any]:
    return {**test, "hint": None}


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
    found, _ = parse_sse_ids(response.text)
    total = len(verdict["tests"])
    assert [(event_id, kind) for event_id, kind, _ in found] == (
        [(1, "status")] + [(2 + i, "test") for i in range(total)] + [(2 + total, "verdict")]
    )
    # A finished submission is replayed: it ran, these are its tests, this is its verdict.
    assert found[0][2] == {"id": verdict["id"], "status": "running", "tests_total": total}
    tests = [data for _, kind, data in found if kind == "test"]
    assert [test["index"] for test in tests] == list(range(total))
    assert tests == [without_hint(test) for test in verdict["tests"]], "hints come with the verdict only"
    assert found[-1][2] == client.get(f"/api/submissions/{verdict['id']}").json()
    assert verdict["hint"] and any(test["hint"] for test in found[-1][2]["tests"])
    assert verdict["id"] not in service.notifier._waiters  # the stream let go of its watch


def test_a_stream_resumes_after_its_last_event_id(client: TestClient, submit: Any) -> None:
    verdict = submit((CASES_DIR / "embedding-layer" / "forgot-scaling" / "solution.py").read_text())
    whole, _ = parse_sse_ids(client.get(events_url(verdict["id"])).text)
    for last in (1, 5, len(verdict["tests"])):
        resumed, _ = parse_sse_ids(client.get(events_url(verdict["id"]), headers={"Last-Event-ID": str(last)}).text)
        assert resumed == [event for event in whole if event[0] is not None and event[0] > last]
    after_verdict = client.get(events_url(verdict["id"]), headers={"Last-Event-ID": str(whole[-1][0])})
    assert after_verdict.status_code == 204, "nothing more: an EventSource stops reconnecting"
    for odd in ("-1", "x", "1e3", "99999999999999999999", "١".encode(), " 3x"):
        replay, _ = parse_sse_ids(client.get(events_url(verdict["id"]), headers={"Last-Event-ID": odd}).text)
        assert replay == whole, odd


def test_hidden_tests_stay_hidden_in_the_stream(client: TestClient, submit: Any) -> None:
    verdict = submit((CASES_DIR / "embedding-layer" / "forgot-scaling" / "solution.py").read_text())
    response = client.get(events_url(verdict["id"]))
    found, _ = parse_sse(response.text)
    hidden = [data for kind, data in found if kind == "test" and not data["visible"]]
    assert len(hidden) >= 10
    for number, test in enumerate(hidden, 1):
        assert test["name"] == f"hidden test {number}"
        assert test["status"] is None, "no hidden test's status, one by one"
        assert {key: test[key] for key in PUBLIC_HIDDEN_FIELDS} == PUBLIC_HIDDEN_FIELDS
    summary = found[-1][1]["hidden"]
    assert summary["total"] == len(hidden) and summary["per_test"] is False
    assert 0 <= summary["passed"] < len(hidden) and 1 <= summary["first_failed"] <= len(hidden)
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
    assert "running" in statuses and set(statuses) <= {"queued", "running"}, "no final status before the tests"
    assert len(statuses) == len(set(statuses))
    verdict = found[-1][1]
    assert verdict["status"] == "time_limit_exceeded"
    tests = [data for kind, data in found if kind == "test"]
    assert [test["index"] for test in tests] == list(range(len(verdict["tests"]))), "each test once, in order"
    assert tests == [without_hint(test) for test in verdict["tests"]]
    hidden = verdict["hidden"]
    # The first that hangs times out, and the tests after it are skipped (the problem's after_timeout).
    assert hidden["first_failed"] is not None
    assert hidden["total"] - hidden["passed"] == hidden["total"] - hidden["first_failed"] + 1


# Forgets the scaling (so visible and hidden tests fail, and the pitfall's hint applies), and takes about
# a second in each of three hidden tests: the stream is live for seconds after the visible tests.
SLOW_WRONG = """\
import time
import torch.nn as nn

def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)

def embed_tokens(embedding, tokens, d_model):
    if d_model in (1, 7, 64):
        time.sleep(0.8)
    return embedding(tokens)
"""

Arrival = tuple[float, int, str, Any]  # (seconds since the start, id, kind, data)


def read_stream(
    http: httpx.Client, submission_id: str, start: float, last_event_id: int | None = None, stop_after_tests: int = 0
) -> list[Arrival]:
    """The events of one connection as they arrive; with stop_after_tests, the connection is dropped after
    that many test events (as a network that fails would)."""
    headers = {"Last-Event-ID": str(last_event_id)} if last_event_id is not None else {}
    arrivals: list[Arrival] = []
    with http.stream("GET", events_url(submission_id), headers=headers) as stream:
        assert stream.status_code == 200
        block: list[str] = []
        for line in stream.iter_lines():
            if line:
                block.append(line)
                continue
            parsed, _ = parse_sse_ids("\n".join(block))
            block = []
            arrivals.extend((time.monotonic() - start, i, kind, data) for i, kind, data in parsed if i is not None)
            if stop_after_tests and sum(1 for _, _, kind, _ in arrivals if kind == "test") >= stop_after_tests:
                break
    return arrivals


def test_a_live_wrong_answer_sends_each_test_once_in_order_and_resumes(live_server: str) -> None:
    """A wrong answer with visible and hidden failures, on a real stream: the connection is dropped after the
    first tests and resumed with Last-Event-ID. Together the two connections carry `status`, then each test
    exactly once in file order (hidden ones without a status, all at once after the last of them ran, hints
    with the verdict only), then the verdict; no final status before it; a third connection gets 204."""
    with httpx.Client(base_url=live_server, timeout=httpx.Timeout(60.0)) as http:
        created = http.post("/api/submissions", json={"problem_id": "embedding-layer", "source": SLOW_WRONG})
        assert created.status_code == 202
        submission_id = created.json()["id"]
        start = time.monotonic()
        first = read_stream(http, submission_id, start, stop_after_tests=2)
        second = read_stream(http, submission_id, start, last_event_id=first[-1][1])
        final = http.get(f"/api/submissions/{submission_id}").json()
        again = http.get(events_url(submission_id), headers={"Last-Event-ID": str(second[-1][1])})
        assert again.status_code == 204
        replay, _ = parse_sse_ids(http.get(events_url(submission_id)).text)
    events_seen = first + second
    ids = [event_id for _, event_id, _, _ in events_seen]
    assert ids == sorted(set(ids)), f"each event once, in order: {ids}"
    kinds = [kind for _, _, kind, _ in events_seen]
    total = len(final["tests"])
    assert kinds[0] == "status" and kinds[-1] == "verdict" and kinds.count("test") == total, kinds
    assert kinds.index("verdict") == len(kinds) - 1 and set(kinds[: kinds.index("test")]) == {"status"}
    statuses = [data["status"] for _, _, kind, data in events_seen if kind == "status"]
    assert set(statuses) <= {"queued", "running"}, "no final status before the tests"
    tests = [data for _, _, kind, data in events_seen if kind == "test"]
    assert [test["index"] for test in tests] == list(range(total))
    assert all(test["hint"] is None for test in tests), "a hint comes with the verdict, not as a copy of a test"
    verdict = events_seen[-1][3]
    assert verdict == final and verdict["status"] == "wrong_answer" and verdict["hint"]
    assert any(t["visible"] and t["status"] == "failed" and t["hint"] for t in verdict["tests"])
    assert tests == [without_hint(test) for test in verdict["tests"]]
    hidden = [(at, data) for at, _, kind, data in events_seen if kind == "test" and not data["visible"]]
    assert hidden and all(data["status"] is None for _, data in hidden)
    assert 0 < verdict["hidden"]["passed"] < verdict["hidden"]["total"], "hidden tests passed and failed"
    # Three hidden tests took 0.8 s each; their events went out together, after the last of them.
    visible_done = max(at for at, _, kind, data in events_seen if kind == "test" and data["visible"])
    assert hidden[0][0] - visible_done > 2.0, (visible_done, hidden[0][0])
    assert hidden[-1][0] - hidden[0][0] < 0.5, "hidden tests' progress is batched, not timed"
    seen = [(event_id, kind, data) for _, event_id, kind, data in events_seen]
    if seen[0][2]["status"] == "queued":  # a replay starts at `running`
        seen = seen[1:]
    assert seen == replay, "a replay tells the same history"


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
    assert verdict_at > 2.0, arrivals  # a 2 s time limit (the tests after it skipped): the run itself is long


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
