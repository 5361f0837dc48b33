"""Identity holds in the idempotency keys' space too: without API keys, every anonymous caller's Idempotency-Key
shared one space, so one caller's key replayed another's submission (its id, its verdict) given the same body,
and told, with another body, that someone had used it (422). A key is now scoped to its owner (the API key, else
the X-Owner-Token, else the address), for single submissions and for a batch's items alike. The service is real
but not started (no sandbox)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from grader.app import create_app
from grader.components import Components
from tests.speed_results import PLAIN_PROBLEM, SOURCE, graderless_service

ALICE = {"X-Owner-Token": "browser-of-alice-0123456789"}
MALLORY = {"X-Owner-Token": "browser-of-mallory-0123456789"}


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    service: Components = graderless_service(tmp_path_factory.mktemp("idempotency"))
    with TestClient(create_app(service.settings, components=service)) as client:
        yield client


def _post(http: TestClient, owner: dict[str, str], key: str, source: str = SOURCE) -> tuple[int, str, bool]:
    answer = http.post(
        "/api/submissions",
        json={"problem_id": PLAIN_PROBLEM, "source": source},
        headers={**owner, "Idempotency-Key": key},
    )
    replayed = answer.headers.get("Idempotent-Replayed") == "true"
    return answer.status_code, answer.json().get("id", answer.text), replayed


def test_anothers_key_neither_replays_nor_tells(http: TestClient) -> None:
    status, alices, replayed = _post(http, ALICE, "retry-1")
    assert (status, replayed) == (202, False)
    assert _post(http, ALICE, "retry-1") == (202, alices, True), "the owner's own retry is replayed"
    status, mallorys, replayed = _post(http, MALLORY, "retry-1")
    assert status == 202 and mallorys != alices and not replayed, "another owner's key is its own"
    status, _, _ = _post(http, MALLORY, "retry-2", source=SOURCE + "\n# mine\n")
    assert status == 202
    assert _post(http, ALICE, "retry-2")[0] == 202, "a key another owner used with another body is not a 422"


def test_a_batch_items_key_is_its_owners_too(http: TestClient) -> None:
    def batch(owner: dict[str, str]) -> str:
        item = {"problem_id": PLAIN_PROBLEM, "source": SOURCE, "idempotency_key": "batch-key-1"}
        answer = http.post("/api/submissions/batch", json={"items": [item]}, headers=owner)
        assert answer.status_code == 202, answer.text
        return str(answer.json()["items"][0]["id"])

    alices = batch(ALICE)
    assert batch(ALICE) == alices
    assert batch(MALLORY) != alices
