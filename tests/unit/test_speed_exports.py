"""A speed-graded verdict's timing leaves the service whole: in the webhook's body (a real delivery to a receiver
on the loopback) and in the admin's export (JSON Lines: the whole timing; CSV: its score, whether it passed and
the threshold, with the submitter's name). The service is real but not started; each submission is graded by
submissions/processing.py with a stand-in for the Grader (tests/speed_results.py)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi.testclient import TestClient

from grader.app import create_app
from grader.components import Components
from grader.submissions import exports
from tests.receivers import Receiver
from tests.speed_results import (
    SPEED_PROBLEM,
    grade,
    graderless_service,
    speed_result,
    submit,
    submit_and_grade,
    verdict_with,
)

ADMIN = {"Authorization": "Bearer speed-exports-admin-token-0123456789"}
OWNER = {"X-Owner-Token": "speed-exports-browser-0123456789"}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Components:
    return graderless_service(
        tmp_path_factory.mktemp("speed-exports"),
        admin_token=ADMIN["Authorization"].removeprefix("Bearer "),
        webhook_secret="speed-exports-webhook-secret-0123456789",
        webhook_allowed_hosts="127.0.0.1",
    )


@pytest.fixture(scope="module")
def http(service: Components) -> Iterator[TestClient]:
    with TestClient(create_app(service.settings, components=service)) as client:
        yield client


def test_the_webhook_body_carries_the_timing_and_the_name(service: Components, http: TestClient) -> None:
    receiver = Receiver()
    try:
        created = http.post(
            "/api/submissions",
            json={"problem_id": SPEED_PROBLEM, "source": "x = 1", "submitter": "Ann", "callback_url": receiver.url()},
            headers=OWNER,
        )
        assert created.status_code == 202, created.text
        speed = speed_result(12.0)
        grade(service, created.json()["id"], verdict_with(service, speed))
        delivered = service.webhooks.deliver(created.json()["id"])
        assert delivered is not None and delivered.error is None, delivered
    finally:
        receiver.close()
    assert len(receiver.received) == 1
    body = json.loads(receiver.received[0][1])
    assert body["status"] == "accepted" and body["submitter"] == "Ann"
    assert body["speed"] == json.loads(speed.model_dump_json())
    api = http.get(f"/api/submissions/{created.json()['id']}").json()
    assert body["speed"] == api["speed"], "the webhook says what the API says"


def _export(http: TestClient, format: str) -> str:
    response = http.get(f"/api/submissions/export?format={format}&problem_id={SPEED_PROBLEM}", headers=ADMIN)
    assert response.status_code == 200, response.text
    return response.text


def test_the_export_carries_the_timing(service: Components, http: TestClient) -> None:
    fast = submit_and_grade(service, http, verdict_with(service, speed_result(12.0)), headers=OWNER, name="=Ann")
    slow = submit_and_grade(service, http, verdict_with(service, speed_result(2.0)), headers=OWNER, name="Ann")
    untimed = submit(http, headers=OWNER)  # still queued: no timing yet
    records = {record["id"]: record for record in map(json.loads, _export(http, "jsonl").splitlines())}
    assert records[fast]["speed"] == json.loads(speed_result(12.0).model_dump_json())
    assert (records[fast]["speedup"], records[fast]["speed_passed"], records[fast]["speed_threshold"]) == (
        12.0,
        True,
        5.0,
    )
    assert (records[slow]["speedup"], records[slow]["speed_passed"]) == (2.0, False)
    assert records[slow]["status"] == "time_limit_exceeded" and records[fast]["submitter_name"] == "=Ann"
    assert records[untimed]["speed"] is None and records[untimed]["speedup"] is None
    rows = {row["id"]: row for row in csv.DictReader(io.StringIO(_export(http, "csv")))}
    assert {"speedup", "speed_passed", "speed_threshold", "submitter_name"} <= set(exports.CSV_COLUMNS)
    assert (rows[fast]["speedup"], rows[fast]["speed_passed"], rows[fast]["speed_threshold"]) == ("12.0", "true", "5.0")
    assert (rows[slow]["speedup"], rows[slow]["speed_passed"]) == ("2.0", "false")
    assert (rows[untimed]["speedup"], rows[untimed]["speed_passed"]) == ("", "")
    assert rows[fast]["submitter_name"] == "'=Ann", "a name a spreadsheet would run is written as text"


def test_an_exported_timing_is_bounded_whatever_is_stored() -> None:
    stored: dict[str, Any] = {
        "speedup": float("nan"),
        "passed": "yes",
        "threshold": float("inf"),
        "message": "m" * 100_000,
        "details": {"first_mismatches": list(range(100_000))},
        "sizes": [{"name": "\ud800", "speedup": 10**400}],
    }
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    row = SimpleNamespace(
        id="1" * 32,
        problem_id=SPEED_PROBLEM,
        problem_version="v",
        status="accepted",
        score=1.0,
        tests=[],
        message=None,
        created_at=moment,
        started_at=moment,
        finished_at=moment,
        batch_id=None,
        api_key_hash=None,
        client_metadata=None,
        submitter="\ud800" * 100,
        speed=stored,
    )
    line = b"".join(exports.jsonl([row])).decode()  # type: ignore[list-item]
    record = json.loads(line)
    assert (record["speedup"], record["speed_passed"], record["speed_threshold"]) == (None, None, None)
    assert len(line) < 10_000 and "\\ud800" not in line
    assert record["speed"]["speedup"] == "nan" and len(record["speed"]["details"]["first_mismatches"]) <= 64
    odd = b"".join(exports.csv_lines([SimpleNamespace(**{**vars(row), "speed": ["not", "a", "dict"]})])).decode()  # type: ignore[list-item]
    parsed = next(csv.DictReader(io.StringIO(odd)))
    assert (parsed["speedup"], parsed["speed_passed"], parsed["speed_threshold"]) == ("", "", "")
