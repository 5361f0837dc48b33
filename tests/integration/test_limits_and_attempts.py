"""Limits for everyone, and an end for poison submissions, against the real database:

- anonymous submitters are rate limited per client address, as keyed ones are per key;
- that address is the one a trusted proxy forwards (GRADER_TRUSTED_PROXIES), never one a client names;
- a submission whose grading was started GRADER_MAX_GRADING_STARTS times without a verdict (each grader lost
  on it) ends as internal_error, is counted, and is never taken again; a regrade starts the count over;
  a restarted local service gives it up too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from grader.app import create_app
from grader.components import Components, build
from grader.grading.verdict import Status
from grader.storage import crud, lease_data
from grader.storage.migrate import upgrade_to_head
from tests.conftest import make_settings, wait_until_ready
from tests.services import REFERENCE

PROXY = ("127.0.0.1", 40000)
MakeClient = Callable[..., tuple[TestClient, Components]]


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[MakeClient]:
    """A TestClient, from the peer `peer`, on a local-mode service that stores and queues but grades nothing."""
    opened: list[tuple[TestClient, Components]] = []

    def make(peer: tuple[str, int] = PROXY, **overrides: object) -> tuple[TestClient, Components]:
        settings = make_settings(tmp_path / f"data{len(opened)}", problems_poll_s=0, **overrides)
        service = build(settings)
        upgrade_to_head(service.db.engine)
        service.registry.load_dir(settings.problems.dir)
        client = TestClient(create_app(settings, components=service), client=peer).__enter__()
        opened.append((client, service))
        return client, service

    yield make
    for client, service in opened:
        client.__exit__(None, None, None)
        service.db.engine.dispose()


def _post(client: TestClient, forwarded: str | None = None, **headers: str):  # type: ignore[no-untyped-def]
    if forwarded is not None:
        headers["X-Forwarded-For"] = forwarded
    return client.post("/api/submissions", json={"problem_id": "embedding-layer", "source": REFERENCE}, headers=headers)


def _addresses(service: Components, ids: list[str]) -> list[str | None]:
    with service.db.session() as session:
        return [crud.get_submission(session, submission_id=i).client_address for i in ids]  # type: ignore[union-attr]


def test_anonymous_submitters_are_limited_per_forwarded_address(make_client: MakeClient) -> None:
    client, service = make_client(rate_limit_per_minute=2, trusted_proxies="127.0.0.1")
    first = [_post(client, "198.51.100.7") for _ in range(2)]
    assert [r.status_code for r in first] == [202, 202]
    refused = _post(client, "198.51.100.7")
    assert refused.status_code == 429
    assert refused.json()["detail"].startswith("rate limit: at most 2 submissions per minute for this client address")
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    # Another client behind the same proxy has a limit of its own; the last hop is the one believed.
    other = _post(client, "10.9.9.9, 198.51.100.8")
    assert other.status_code == 202
    ids = [r.json()["id"] for r in (*first, other)]
    assert _addresses(service, ids) == ["198.51.100.7", "198.51.100.7", "198.51.100.8"]
    assert 'torchjudge_submissions_refused_total{reason="rate_limited"} 1.0' in client.get("/metrics").text


def test_an_untrusted_peer_cannot_name_its_own_address(make_client: MakeClient) -> None:
    client, service = make_client(peer=("203.0.113.9", 5555), rate_limit_per_minute=2, trusted_proxies="127.0.0.1")
    accepted = [_post(client, f"198.51.100.{n}", **{"X-Real-IP": f"192.0.2.{n}"}) for n in (1, 2)]
    assert [r.status_code for r in accepted] == [202, 202]
    assert _addresses(service, [r.json()["id"] for r in accepted]) == ["203.0.113.9", "203.0.113.9"]
    assert _post(client, "198.51.100.3").status_code == 429


def test_a_trusted_proxy_named_by_host_name(make_client: MakeClient) -> None:
    client, service = make_client(rate_limit_per_minute=5, trusted_proxies="localhost")
    response = _post(client, "198.51.100.20")
    assert response.status_code == 202
    assert _addresses(service, [response.json()["id"]]) == ["198.51.100.20"]


def test_keyed_submitters_keep_their_per_key_limit(make_client: MakeClient) -> None:
    key = "carol-key-0123456789abcdef"
    client, service = make_client(rate_limit_per_minute=1, trusted_proxies="127.0.0.1", api_keys=key)
    auth = {"Authorization": f"Bearer {key}"}
    accepted = _post(client, "198.51.100.7", **auth)
    assert accepted.status_code == 202
    assert _addresses(service, [accepted.json()["id"]]) == [None]  # a keyed submission records no address
    refused = _post(client, "198.51.100.99", **auth)
    assert refused.status_code == 429 and "this API key" in refused.json()["detail"]


# -- poison submissions ----------------------------------------------------------------------------------
def _lost_graders(service: Components, submission_id: str, times: int) -> None:
    """What `times` graders killed mid-grading leave: the submission taken each time, its lease run out."""
    for _ in range(times):
        with service.db.session() as session:
            taken = crud.mark_running(
                session,
                submission_id=submission_id,
                lease_s=-1.0,
                max_starts=service.settings.queueing.max_grading_starts,
            )
            assert taken is not None


def _store(service: Components) -> str:
    with service.db.session() as session:
        return crud.create_submission(session, problem_id="embedding-layer", problem_version="v", source=REFERENCE).id


def test_a_submission_started_max_grading_starts_times_ends_as_internal_error(make_client: MakeClient) -> None:
    client, service = make_client(max_grading_starts=3)
    submission_id = _store(service)
    _lost_graders(service, submission_id, 3)
    with service.db.session() as session:  # a fourth grader may not take it
        assert crud.mark_running(session, submission_id=submission_id, lease_s=30, max_starts=3) is None
    service.processor.process(submission_id)
    view = client.get(f"/api/submissions/{submission_id}").json()
    assert view["status"] == Status.INTERNAL_ERROR
    assert view["message"].startswith("grading was started 3 times without finishing")
    metrics = client.get("/metrics").text
    assert "torchjudge_submissions_given_up_total 1.0" in metrics
    # Never picked up again: no reaper sees it, a redelivered message finds it final.
    with service.db.session() as session:
        assert lease_data.expired_leases(session, unleased_after_s=0) == []
    service.processor.process(submission_id)
    assert "torchjudge_submissions_given_up_total 1.0" in client.get("/metrics").text
    # A regrade starts the count over.
    assert service.regrade("embedding-layer") == 1
    with service.db.session() as session:
        submission = crud.get_submission(session, submission_id=submission_id)
        assert submission is not None and submission.grading_starts == 0 and submission.status == Status.QUEUED


def test_fewer_starts_than_the_limit_are_graded_again(make_client: MakeClient) -> None:
    _client, service = make_client(max_grading_starts=3)
    submission_id = _store(service)
    _lost_graders(service, submission_id, 2)
    with service.db.session() as session:
        taken = crud.mark_running(session, submission_id=submission_id, lease_s=30, max_starts=3)
        assert taken is not None and taken.grading_starts == 3 and taken.attempts == 3


def test_a_restarted_local_service_gives_up_a_poison_submission(tmp_path: Path) -> None:
    """Three local services died grading it (their runs left it running, started three times); the fourth
    one to start ends it instead of grading it again."""
    settings = make_settings(tmp_path / "data", pool_size=1, problems_poll_s=0, max_grading_starts=3)
    first = build(settings)
    upgrade_to_head(first.db.engine)
    submission_id = _store(first)
    _lost_graders(first, submission_id, 3)
    first.db.engine.dispose()

    service = build(settings)
    service.start()
    try:
        wait_until_ready(service)
        deadline = time.monotonic() + 60
        while True:
            with service.db.session() as session:
                submission = crud.get_submission(session, submission_id=submission_id)
            assert submission is not None
            if submission.status not in (Status.QUEUED, Status.RUNNING) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert submission.status == Status.INTERNAL_ERROR, submission.status
        assert "started 3 times" in (submission.message or "")
        assert submission.attempts == 3  # not taken a fourth time
        assert "torchjudge_submissions_given_up_total 1.0" in service.metrics.render().decode()
    finally:
        service.stop()
