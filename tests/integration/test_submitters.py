"""Who may submit and how much: API keys, the per-key rate limit, idempotent retries, each key's own
list, and the bounded queue (429 with Retry-After) in both dispatch modes.

These are properties of the HTTP layer and the database, so the services here grade nothing: their
queue is never consumed (a local queue whose threads are not started; a Celery queue no worker reads),
which also keeps submissions queued for as long as a test needs them to be.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from grader.app import create_app
from grader.components import Components, build
from grader.storage import crud
from grader.storage.db import Database
from grader.storage.migrate import upgrade_to_head
from tests.conftest import make_settings
from tests.services import REFERENCE, WRONG, drop_redis_keys, postgres_database, unique_queue

ALICE = "alice-key-0123456789abcdef"
BOB = "bob-key-0123456789abcdef00"

MakeClient = Callable[..., TestClient]


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[MakeClient]:
    """A TestClient on a local-mode service that stores and queues but grades nothing."""
    services: list[Components] = []
    clients: list[TestClient] = []

    def make(**overrides: object) -> TestClient:
        settings = make_settings(tmp_path / f"data{len(services)}", problems_poll_s=0, **overrides)
        service = build(settings)
        upgrade_to_head(service.db.engine)
        service.registry.load_dir(settings.problems.dir)
        services.append(service)
        client = TestClient(create_app(settings, components=service)).__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)
    for service in services:
        service.db.engine.dispose()


def _post(client: TestClient, key: str | None = None, source: str = REFERENCE, **headers: str):  # type: ignore[no-untyped-def]
    if key is not None:
        headers.setdefault("Authorization", f"Bearer {key}")
    return client.post("/api/submissions", json={"problem_id": "embedding-layer", "source": source}, headers=headers)


def _row(client: TestClient, submission_id: str):  # type: ignore[no-untyped-def]
    service: Components = client.app.state.components  # type: ignore[attr-defined]
    with service.db.session() as session:
        return crud.get_submission(session, submission_id=submission_id)


# -- API keys -----------------------------------------------------------------------------------------
def test_without_api_keys_anyone_submits(make_client: MakeClient) -> None:
    client = make_client()
    response = _post(client)
    assert response.status_code == 202
    assert _row(client, response.json()["id"]).api_key_hash is None
    assert client.get("/api/me/submissions").status_code == 404


def test_with_api_keys_a_submission_needs_a_valid_key(make_client: MakeClient) -> None:
    client = make_client(api_keys=f"{ALICE},{BOB}")
    for headers in ({}, {"Authorization": "Bearer wrong-key-0123456789"}, {"Authorization": f"Basic {ALICE}"}):
        response = client.post(
            "/api/submissions", json={"problem_id": "embedding-layer", "source": REFERENCE}, headers=headers
        )
        assert response.status_code == 401, headers
        assert response.headers["WWW-Authenticate"] == "Bearer"
        assert "API key" in response.json()["detail"]
    # 401 comes before the body is even read: an anonymous caller learns nothing about the API.
    json_type = {"Content-Type": "application/json"}  # what a body of another type gets is 415, before anything
    assert client.post("/api/submissions", content=b"\xff", headers=json_type).status_code == 401
    assert _post(client, ALICE).status_code == 202
    response = _post(client, None, **{"X-API-Key": BOB})
    assert response.status_code == 202


def test_only_a_hash_of_the_key_is_stored(make_client: MakeClient) -> None:
    client = make_client(api_keys=ALICE)
    submission_id = _post(client, ALICE).json()["id"]
    row = _row(client, submission_id)
    assert row.api_key_hash == hashlib.sha256(ALICE.encode()).hexdigest()
    stored = " ".join(str(value) for value in vars(row).values())
    assert ALICE not in stored


@pytest.mark.parametrize(
    "keys", ["short", "a-key-that-is-long-enough,a-key-that-is-long-enough", "has a space in it!!"]
)
def test_bad_api_keys_stop_start_up(tmp_path: Path, keys: str) -> None:
    with pytest.raises(ValueError, match="GRADER_API_KEYS"):
        make_settings(tmp_path, api_keys=keys)


# -- rate limit ------------------------------------------------------------------------------------------
def test_each_key_has_its_own_rate_limit(make_client: MakeClient) -> None:
    client = make_client(api_keys=f"{ALICE},{BOB}", rate_limit_per_minute=3)
    assert [_post(client, ALICE).status_code for _ in range(3)] == [202, 202, 202]
    refused = _post(client, ALICE)
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert "3 submissions per minute" in refused.json()["detail"]
    assert _post(client, BOB).status_code == 202  # another key is not held back
    metrics = client.get("/metrics").text
    assert 'torchjudge_submissions_refused_total{reason="rate_limited"} 1.0' in metrics


# -- a key's own submissions -----------------------------------------------------------------------------
def test_a_key_lists_its_own_submissions_newest_first(make_client: MakeClient) -> None:
    client = make_client(api_keys=f"{ALICE},{BOB}")
    mine = [_post(client, ALICE).json()["id"] for _ in range(5)]
    theirs = _post(client, BOB).json()["id"]
    assert client.get("/api/me/submissions").status_code == 401

    first = client.get("/api/me/submissions?limit=3", headers={"Authorization": f"Bearer {ALICE}"})
    assert first.status_code == 200
    page = first.json()
    assert [s["id"] for s in page["submissions"]] == mine[::-1][:3]
    assert page["next"] == mine[2]
    rest = client.get(f"/api/me/submissions?limit=3&before={page['next']}", headers={"X-API-Key": ALICE}).json()
    assert [s["id"] for s in rest["submissions"]] == mine[::-1][3:]
    assert rest["next"] is None
    assert {"id", "problem_id", "status", "score", "created_at"} <= set(rest["submissions"][0])
    assert "source" not in rest["submissions"][0]

    bob = client.get("/api/me/submissions", headers={"X-API-Key": BOB}).json()
    assert [s["id"] for s in bob["submissions"]] == [theirs]
    # Someone else's submission is no cursor for me.
    assert client.get(f"/api/me/submissions?before={mine[0]}", headers={"X-API-Key": BOB}).status_code == 422


# -- idempotency -----------------------------------------------------------------------------------------
def test_the_same_idempotency_key_returns_the_same_submission(make_client: MakeClient) -> None:
    client = make_client(api_keys=f"{ALICE},{BOB}")
    first = _post(client, ALICE, **{"Idempotency-Key": "try-1"})
    again = _post(client, ALICE, **{"Idempotency-Key": "try-1"})
    assert first.status_code == again.status_code == 202
    assert again.json()["id"] == first.json()["id"]
    assert again.headers["Location"] == first.headers["Location"]
    assert again.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    # The key is scoped to the API key: Bob's "try-1" is his own.
    bobs = _post(client, BOB, **{"Idempotency-Key": "try-1"})
    assert bobs.status_code == 202 and bobs.json()["id"] != first.json()["id"]
    # Another key, another submission; the same key with another body is refused.
    assert _post(client, ALICE, **{"Idempotency-Key": "try-2"}).json()["id"] != first.json()["id"]
    conflict = _post(client, ALICE, source=WRONG, **{"Idempotency-Key": "try-1"})
    assert conflict.status_code == 422
    assert "different request body" in conflict.json()["detail"]
    me = client.get("/api/me/submissions", headers={"X-API-Key": ALICE}).json()["submissions"]
    assert len(me) == 2


def test_a_replay_is_not_held_back_by_the_rate_limit(make_client: MakeClient) -> None:
    client = make_client(api_keys=ALICE, rate_limit_per_minute=1)
    first = _post(client, ALICE, **{"Idempotency-Key": "once"})
    assert first.status_code == 202
    assert _post(client, ALICE, **{"Idempotency-Key": "once"}).status_code == 202
    assert _post(client, ALICE, **{"Idempotency-Key": "other"}).status_code == 429


@pytest.mark.parametrize("key", ["", " ", "x" * 256, "caf\u00e9"])
def test_a_malformed_idempotency_key_is_422(make_client: MakeClient, key: str) -> None:
    client = make_client()
    response = client.post(
        "/api/submissions",
        json={"problem_id": "embedding-layer", "source": REFERENCE},
        headers={"Idempotency-Key": key.encode()},  # raw bytes: non-ASCII goes out as UTF-8 octets
    )
    assert response.status_code == 422


def test_concurrent_inserts_of_one_idempotency_key_make_one_submission() -> None:
    """Across API processes only the unique index decides: race it for real on PostgreSQL."""
    with postgres_database() as url:
        database = Database(url)
        upgrade_to_head(database.engine)
        results: list[tuple[str, bool]] = []
        barrier = threading.Barrier(8)

        def insert() -> None:
            with database.session() as session:
                barrier.wait()
                submission, created = crud.create_submission_once(
                    session,
                    problem_id="embedding-layer",
                    problem_version="v",
                    source=REFERENCE,
                    api_key_hash=None,
                    idempotency_key="k" * 64,
                )
                results.append((submission.id, created))

        threads = [threading.Thread(target=insert) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        database.engine.dispose()
    assert len(results) == 8
    assert len({submission_id for submission_id, _ in results}) == 1
    assert sum(created for _, created in results) == 1


# -- backpressure ----------------------------------------------------------------------------------------
def test_a_full_local_queue_is_429_with_retry_after(make_client: MakeClient) -> None:
    client = make_client(max_queue=2)
    assert [_post(client).status_code for _ in range(2)] == [202, 202]
    refused = _post(client)
    assert refused.status_code == 429
    assert int(refused.headers["Retry-After"]) >= 1
    assert client.get("/healthz").json()["queue_depth"] == 2


def test_a_full_celery_queue_counts_queued_submissions_in_the_database(tmp_path: Path) -> None:
    queue = unique_queue()
    with postgres_database() as url:
        settings = make_settings(tmp_path, queue="celery", database_url=url, celery_queue=queue, max_queue=2)
        service = build(settings)
        service.start()  # an API-side service: no warm pool, no grading, and no worker reads this queue
        try:
            with TestClient(create_app(settings, components=service)) as client:
                assert client.get("/healthz").json()["ready"] is True
                assert [_post(client).status_code for _ in range(2)] == [202, 202]
                refused = _post(client)
                assert refused.status_code == 429
                assert "Retry-After" in refused.headers
                with service.db.session() as session:
                    assert crud.count_queued(session) == 2
                health = client.get("/healthz").json()
                assert health["queue"] == "celery" and health["queue_depth"] == 2
                assert "torchjudge_queue_depth 2.0" in client.get("/metrics").text
        finally:
            service.stop()
            drop_redis_keys(queue)
