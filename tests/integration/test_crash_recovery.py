"""kill -9 in the middle of grading loses nothing: every submission still reaches a final verdict, in
both dispatch modes, and none is graded twice at once.

The service and the workers run as real subprocesses (`grader serve`, `grader worker`) against real
Docker sandboxes; Celery mode uses the real Redis and a PostgreSQL database of the test's own. The
solution hangs on one test until its time limit, so that each grading lasts a few seconds.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import docker
import pytest
import redis
from fastapi.testclient import TestClient
from sqlalchemy import update

from grader.app import create_app
from grader.components import build
from grader.containers.container import LABEL, owner_label
from grader.grading.verdict import Status
from grader.queue.celery_app import GRADE_TASK, CeleryDispatcher
from grader.storage import crud, lease_data
from grader.storage.db import Database, Submission, utcnow
from grader.storage.migrate import upgrade_to_head
from grader.worker import worker_settings
from tests.conftest import PROBLEMS_DIR, make_settings
from tests.services import (
    REDIS_URL,
    SLOW,
    GraderProcess,
    drop_redis_keys,
    free_port,
    http_json,
    postgres_database,
    statuses,
    unique_queue,
    wait_all_final,
    wait_running,
)

pytestmark = pytest.mark.docker

LEASE_S = 3.0


@pytest.fixture
def problems_dir(tmp_path: Path) -> Path:
    """Only the embedding problem: a worker computes every problem's expected outputs when it starts."""
    directory = tmp_path / "problems"
    directory.mkdir()
    shutil.copy(PROBLEMS_DIR / "embedding-layer.yaml", directory)
    return directory


def _attempts(database: Database, submission_id: str) -> int:
    with database.session() as session:
        return crud.get_submission(session, submission_id=submission_id).attempts  # type: ignore[union-attr]


def _remove_containers_of(settings_data_dir: Path) -> None:
    """Removes the sandbox containers a killed process left (only ever this test's own)."""
    client = docker.from_env()
    for container in client.containers.list(all=True, filters={"label": f"{LABEL}={owner_label(settings_data_dir)}"}):
        container.remove(force=True)
    client.close()


def test_kill_9_of_the_local_service_mid_grading(tmp_path: Path, problems_dir: Path) -> None:
    data_dir = tmp_path / "data"
    port = free_port()
    env = {
        "GRADER_DATA_DIR": str(data_dir),
        "GRADER_PORT": str(port),
        "GRADER_POOL_SIZE": "1",
        "GRADER_PROBLEMS_DIR": str(problems_dir),
    }
    base = f"http://127.0.0.1:{port}"
    first = GraderProcess(["serve"], env, tmp_path / "serve-1.log").start()
    second = None
    try:
        first.wait_http_ready(f"{base}/healthz")
        ids = []
        for _ in range(3):
            status, body = http_json(
                "POST", f"{base}/api/submissions", {"problem_id": "embedding-layer", "source": SLOW}
            )
            assert status == 202, body
            ids.append(body["id"])
        database = Database(make_settings(data_dir).storage.sqlalchemy_url)
        caught = wait_running(database, ids)
        first.kill9()
        left = statuses(database, ids)
        assert left[caught] == Status.RUNNING, left
        assert sum(status == Status.QUEUED for status in left.values()) == 2, left

        second = GraderProcess(["serve"], env, tmp_path / "serve-2.log").start()
        final = wait_all_final(database, ids, timeout=180)
        assert set(final.values()) == {Status.TIME_LIMIT_EXCEEDED}, final
        assert _attempts(database, caught) == 2
        assert all(_attempts(database, sid) == 1 for sid in ids if sid != caught)
        database.engine.dispose()
    finally:
        first.stop()
        if second is not None:
            second.stop()
        _remove_containers_of(data_dir)


@pytest.fixture
def celery_env(tmp_path: Path, problems_dir: Path) -> Iterator[tuple[dict[str, str], str]]:
    queue = unique_queue()
    with postgres_database() as url:
        env = {
            "GRADER_QUEUE": "celery",
            "GRADER_DATABASE_URL": url,
            "GRADER_BROKER_URL": REDIS_URL,
            "GRADER_CELERY_QUEUE": queue,
            "GRADER_DATA_DIR": str(tmp_path / "data"),
            "GRADER_PROBLEMS_DIR": str(problems_dir),
            "GRADER_LEASE_S": str(LEASE_S),
        }
        try:
            yield env, url
        finally:
            drop_redis_keys(queue)


def _not_graded_here(worker: GraderProcess, submission_id: str) -> bool:
    return any(
        entry.get("submission_id") == submission_id and entry["message"].startswith("not graded here")
        for entry in worker.log_entries()
    )


def test_kill_9_of_a_celery_worker_mid_grading(tmp_path: Path, celery_env: tuple[dict[str, str], str]) -> None:
    env, url = celery_env
    settings = make_settings(
        tmp_path / "api",
        queue="celery",
        database_url=url,
        celery_queue=env["GRADER_CELERY_QUEUE"],
        lease_s=LEASE_S,
        problems_dir=Path(env["GRADER_PROBLEMS_DIR"]),
    )
    api = build(settings)
    api.start()
    port_a, port_b = free_port(), free_port()
    worker_a = GraderProcess(
        ["worker", "--name", "a"],
        {**env, "GRADER_POOL_SIZE": "1", "GRADER_WORKER_HTTP_PORT": str(port_a)},
        tmp_path / "worker-a.log",
    ).start()
    worker_b = GraderProcess(
        ["worker", "--name", "b"],
        {**env, "GRADER_POOL_SIZE": "2", "GRADER_WORKER_HTTP_PORT": str(port_b)},
        tmp_path / "worker-b.log",
    )
    try:
        with TestClient(create_app(settings, components=api)) as client:
            worker_a.wait_http_ready(f"http://127.0.0.1:{port_a}/healthz")
            ids = []
            for _ in range(3):
                response = client.post("/api/submissions", json={"problem_id": "embedding-layer", "source": SLOW})
                assert response.status_code == 202, response.text
                ids.append(response.json()["id"])
            caught = wait_running(api.db, ids)
            worker_a.kill9()

            # Nothing acknowledged the message of the submission being graded: the broker still has it
            # (it would hand it out again after the visibility timeout), and its lease is still live.
            broker = redis.Redis.from_url(REDIS_URL)
            assert broker.hlen(f"{env['GRADER_CELERY_QUEUE']}:unacked") >= 1
            broker.close()
            assert statuses(api.db, ids)[caught] == Status.RUNNING

            # Another worker's reaper finds the lapsed lease and sends the submission again.
            worker_b.start()
            final = wait_all_final(api.db, ids, timeout=180)
            assert set(final.values()) == {Status.TIME_LIMIT_EXCEEDED}, final
            assert _attempts(api.db, caught) == 2
            assert all(_attempts(api.db, sid) == 1 for sid in ids if sid != caught)
            assert any("lease of running submission ran out" in e["message"] for e in worker_b.log_entries())

            # A message delivered again for a submission already final grades nothing.
            dispatcher = api.dispatcher
            assert isinstance(dispatcher, CeleryDispatcher)
            dispatcher.app.send_task(GRADE_TASK, args=[caught], queue=settings.queueing.celery_queue)
            # And one delivered while another thread grades the same submission under a live lease
            # (the second of worker b's two threads takes it) grades nothing either.
            busy = client.post("/api/submissions", json={"problem_id": "embedding-layer", "source": SLOW}).json()["id"]
            assert wait_running(api.db, [busy]) == busy
            dispatcher.app.send_task(GRADE_TASK, args=[busy], queue=settings.queueing.celery_queue)
            deadline = time.monotonic() + 60
            while not (_not_graded_here(worker_b, caught) and _not_graded_here(worker_b, busy)):
                assert time.monotonic() < deadline, "the duplicate deliveries were not seen"
                time.sleep(0.2)
            assert statuses(api.db, [busy])[busy] == Status.RUNNING  # still the first delivery's grading
            assert wait_all_final(api.db, [busy])[busy] == Status.TIME_LIMIT_EXCEEDED
            assert _attempts(api.db, busy) == 1
            assert _attempts(api.db, caught) == 2
    finally:
        worker_a.stop()
        worker_b.stop()
        api.stop()
        data_dir = Path(env["GRADER_DATA_DIR"])
        for name in ("a", "b"):
            _remove_containers_of(worker_settings(make_settings(data_dir), name).storage.data_dir)


def test_an_expired_lease_is_requeued_and_sent_again(tmp_path: Path, celery_env: tuple[dict[str, str], str]) -> None:
    """The reaper on its own: a running submission whose lease lapsed, a queued one whose message was
    never picked up, and an old one that never got a message (its API died between storing and
    sending) go back to queued with a fresh message on the broker; live and recent ones stay."""
    env, url = celery_env
    settings = make_settings(tmp_path, queue="celery", database_url=url, celery_queue=env["GRADER_CELERY_QUEUE"])
    service = build(settings, role="worker")  # not started: no pool; only the reaper is exercised
    upgrade_to_head(service.db.engine)
    try:
        with service.db.session() as session:
            lost = crud.create_submission(session, problem_id="embedding-layer", problem_version="v", source=SLOW).id
            unsent = crud.create_submission(session, problem_id="embedding-layer", problem_version="v", source=SLOW).id
            live = crud.create_submission(session, problem_id="embedding-layer", problem_version="v", source=SLOW).id
            orphan = crud.create_submission(session, problem_id="embedding-layer", problem_version="v", source=SLOW)
            just_stored = crud.create_submission(
                session, problem_id="embedding-layer", problem_version="v", source=SLOW
            )
            stored_long_ago = utcnow() - timedelta(seconds=settings.queueing.redispatch_after_s + 1)
            session.execute(update(Submission).where(Submission.id == orphan.id).values(created_at=stored_long_ago))
            session.commit()
            assert crud.mark_running(session, submission_id=lost, lease_s=0.05) is not None
            lease_data.set_dispatch_lease(session, submission_ids=[unsent], lease_s=0.05)
            assert crud.mark_running(session, submission_id=live, lease_s=60) is not None
        time.sleep(0.2)
        assert service.leases.reap_expired() == 3
        assert service.leases.reap_expired() == 0  # their new dispatch leases are live
        with service.db.session() as session:
            assert crud.get_submission(session, submission_id=lost).status == Status.QUEUED  # type: ignore[union-attr]
            assert crud.get_submission(session, submission_id=unsent).status == Status.QUEUED  # type: ignore[union-attr]
            assert crud.get_submission(session, submission_id=live).status == Status.RUNNING  # type: ignore[union-attr]
            assert crud.get_submission(session, submission_id=orphan.id).lease_expires_at is not None  # type: ignore[union-attr]
            assert crud.get_submission(session, submission_id=just_stored.id).lease_expires_at is None  # type: ignore[union-attr]
        broker = redis.Redis.from_url(REDIS_URL)
        assert broker.llen(f"{settings.queueing.celery_queue}:{settings.queueing.celery_queue}") == 3
        broker.close()
    finally:
        service.dispatcher.stop()
        service.db.engine.dispose()
