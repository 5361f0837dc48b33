"""Batches, metadata and the admin's list against the real service (real sandboxes, a real SQLite file):
a batch takes in its valid items and refuses the others one by one, echoes every item's metadata in the
verdict, the event stream and the lists, is refused whole (429, nothing stored) when the queue has no room
for it, replays under per-item idempotency keys, and is visible to its own submitter only."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from grader.app import create_app
from grader.components import Components, build
from tests.conftest import make_settings, wait_until_ready
from tests.services import REFERENCE

pytestmark = pytest.mark.docker

TOKEN = "batch-admin-token-0123456789"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
KEY_A, KEY_B = "batch-client-a-0123456789", "batch-client-b-0123456789"
MAX_QUEUE = 12
WRONG = REFERENCE.replace("math.sqrt(d_model)", "1.0")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Components, TestClient]]:
    settings = make_settings(
        tmp_path_factory.mktemp("batches"), admin_token=TOKEN, api_keys=f"{KEY_A},{KEY_B}", max_queue=MAX_QUEUE
    )
    components = build(settings)
    components.start()
    try:
        wait_until_ready(components)
        with TestClient(create_app(settings, components=components)) as client:
            yield components, client
    finally:
        components.stop()


def batch(client: TestClient, items: list[Any], key: str = KEY_A) -> Any:
    return client.post("/api/submissions/batch", json={"items": items}, headers={"X-API-Key": key})


def until_done(client: TestClient, batch_id: str, key: str = KEY_A) -> dict[str, Any]:
    deadline = time.monotonic() + 180
    while True:
        status = client.get(f"/api/batches/{batch_id}", headers={"X-API-Key": key}).json()
        if status["done"]:
            return status  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, status
        time.sleep(0.5)


def test_a_batch_takes_its_good_items_and_refuses_the_bad_ones_alone(served: tuple[Components, TestClient]) -> None:
    _components, client = served
    items: list[Any] = [
        {"problem_id": "embedding-layer", "source": REFERENCE, "metadata": {"sample": 0, "harness": "h1"}},
        {"problem_id": "no-such-problem", "source": REFERENCE},
        {"problem_id": "embedding-layer", "source": WRONG, "metadata": {"sample": 2}},
        {"problem_id": "embedding-layer", "source": REFERENCE, "metadata": {"nested": {"no": 1}}},
        "not an object",
        {"problem_id": "embedding-layer", "source": "   "},
        {"problem_id": "embedding-layer", "source": REFERENCE, "seed": 5},
    ]
    response = batch(client, items)
    assert response.status_code == 202, response.text
    body = response.json()
    assert (body["accepted"], body["refused"]) == (2, 5)
    answers = {answer["index"]: answer for answer in body["items"]}
    assert [answers[i]["status"] for i in range(7)] == [202, 404, 202, 422, 422, 422, 403]
    assert "no-such-problem" in answers[1]["detail"] and "metadata" in answers[3]["detail"]
    assert answers[0]["location"] == f"/api/submissions/{answers[0]['id']}"

    status = until_done(client, body["batch_id"])
    assert status["total"] == 2 and status["counts"] == {"accepted": 1, "wrong_answer": 1}
    assert [s["metadata"] for s in status["submissions"]] == [{"sample": 0, "harness": "h1"}, {"sample": 2}]
    verdict = client.get(answers[0]["location"]).json()
    assert verdict["status"] == "accepted" and verdict["batch_id"] == body["batch_id"]
    assert verdict["metadata"] == {"sample": 0, "harness": "h1"}
    events = client.get(f"{answers[2]['location']}/events").text
    last = json.loads(events.strip().split("\n\n")[-1].split("data: ", 1)[1])
    assert last["status"] == "wrong_answer" and last["metadata"] == {"sample": 2}

    # The submitter's own list and the admin's carry the metadata; another key does not see the batch.
    mine = client.get("/api/me/submissions", headers={"X-API-Key": KEY_A}).json()["submissions"]
    assert {"sample": 2} in [row["metadata"] for row in mine]
    assert client.get(f"/api/batches/{body['batch_id']}", headers={"X-API-Key": KEY_B}).status_code == 404
    listed = client.get("/api/submissions", params={"batch_id": body["batch_id"]}, headers=ADMIN).json()
    assert [row["id"] for row in listed["submissions"]] == [answers[0]["id"], answers[2]["id"]]
    assert listed["submissions"][1]["first_failed"] and listed["submissions"][1]["tests_passed"] >= 1


def test_a_whole_batch_is_refused_when_the_queue_has_no_room(served: tuple[Components, TestClient]) -> None:
    components, client = served
    before = client.get("/api/submissions", params={"limit": 500}, headers=ADMIN).json()["submissions"]
    items = [{"problem_id": "embedding-layer", "source": REFERENCE} for _ in range(MAX_QUEUE + 1)]
    refused = batch(client, items)
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1, refused.text
    assert "room for" in refused.json()["detail"]
    after = client.get("/api/submissions", params={"limit": 500}, headers=ADMIN).json()["submissions"]
    assert len(after) == len(before), "nothing of the refused batch was stored"
    too_many = batch(client, [{"problem_id": "x", "source": "x"}] * (components.settings.limits.max_batch_items + 1))
    assert too_many.status_code == 422 and "at most" in too_many.json()["detail"]
    assert batch(client, []).status_code == 422
    assert (
        client.post("/api/submissions/batch", json={"items": {"a": 1}}, headers={"X-API-Key": KEY_A}).status_code == 422
    )
    assert client.post("/api/submissions/batch", json={"items": []}).status_code == 401  # no key


def test_a_retried_batch_with_idempotency_keys_gets_the_same_submissions(served: tuple[Components, TestClient]) -> None:
    _components, client = served
    items = [
        {"problem_id": "embedding-layer", "source": REFERENCE, "idempotency_key": f"retry-{n}", "metadata": {"n": n}}
        for n in range(3)
    ]
    first = batch(client, items).json()
    again = batch(client, items).json()
    assert [item["id"] for item in again["items"]] == [item["id"] for item in first["items"]]
    assert [item["status"] for item in again["items"]] == [200, 200, 200]
    changed = [dict(items[0], metadata={"n": 99})]
    reused = batch(client, changed)
    assert reused.status_code == 422 and "different request body" in reused.json()["items"][0]["detail"]
    until_done(client, first["batch_id"])


def test_the_admin_lists_pages_and_filters_submissions(served: tuple[Components, TestClient]) -> None:
    _components, client = served
    everything = client.get("/api/submissions", params={"limit": 500}, headers=ADMIN).json()["submissions"]
    assert len(everything) >= 5
    seen, cursor = [], None
    while True:
        params: dict[str, Any] = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = client.get("/api/submissions", params=params, headers=ADMIN).json()
        seen += [row["id"] for row in page["submissions"]]
        cursor = page["next"]
        if cursor is None:
            break
    assert seen == [row["id"] for row in everything]  # every row once, oldest first
    created = [row["created_at"] for row in everything]
    assert created == sorted(created) and all(moment.endswith(("Z", "+00:00")) for moment in created)
    accepted = client.get("/api/submissions", params={"status": "accepted"}, headers=ADMIN).json()["submissions"]
    assert accepted and all(row["status"] == "accepted" for row in accepted)
    later = client.get("/api/submissions", params={"since": everything[-1]["created_at"]}, headers=ADMIN).json()
    assert [row["id"] for row in later["submissions"]] == [everything[-1]["id"]]
    assert client.get("/api/submissions", params={"status": "bogus"}, headers=ADMIN).status_code == 422
    assert client.get("/api/submissions", params={"cursor": "1.x'--"}, headers=ADMIN).status_code == 422
    assert client.get("/api/submissions", params={"cursor": "9" * 18 + ".ab"}, headers=ADMIN).status_code == 422
    assert client.get("/api/submissions", headers={"X-API-Key": KEY_A}).status_code == 401
    assert (
        client.get("/api/submissions/export", params={"format": "csv"}, headers={"X-API-Key": KEY_A}).status_code == 401
    )
    exported = client.get("/api/submissions/export", params={"format": "jsonl"}, headers=ADMIN)
    assert exported.status_code == 200 and exported.headers["content-type"] == "application/x-ndjson"
    assert [json.loads(line)["id"] for line in exported.text.splitlines()] == [row["id"] for row in everything]
