"""GRADER_QUEUE=celery end to end: the API (in this process) stores and enqueues; a real `grader worker`
subprocess grades from the real Redis into a PostgreSQL database of this module's own.

Also the database side of "never twice at once": taking a submission is one conditional UPDATE, and
a live lease keeps every other taker out, checked with real concurrent transactions on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import docker
import pytest
from fastapi.testclient import TestClient

from grader.app import create_app
from grader.components import Components, build
from grader.containers.container import LABEL, owner_label
from grader.grading.verdict import Status, Verdict
from grader.storage import crud, lease_data
from grader.storage.db import Database
from grader.storage.migrate import upgrade_to_head
from grader.worker import worker_settings
from tests.conftest import PROBLEMS_DIR, make_settings
from tests.services import (
    REFERENCE,
    SLOW,
    WRONG,
    GraderProcess,
    drop_redis_keys,
    free_port,
    postgres_database,
    unique_queue,
    worker_env,
)

pytestmark = pytest.mark.docker


@dataclass
class CeleryStack:
    api: Components
    client: TestClient
    worker: GraderProcess
    worker_http: str


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CeleryStack]:
    root = tmp_path_factory.mktemp("celery")
    problems = root / "problems"
    problems.mkdir()
    shutil.copy(PROBLEMS_DIR / "embedding-layer.yaml", problems)
    queue = unique_queue()
    port = free_port()
    with postgres_database() as url:
        settings = make_settings(
            root / "api", queue="celery", database_url=url, celery_queue=queue, problems_dir=problems
        )
        api = build(settings)
        api.start()
        env = worker_env(url, queue, root / "data", problems, port)
        worker = GraderProcess(["worker", "--name", "w"], env, root / "worker.log").start()
        try:
            worker.wait_http_ready(f"http://127.0.0.1:{port}/healthz")
            with TestClient(create_app(settings, components=api)) as client:
                yield CeleryStack(api, client, worker, f"http://127.0.0.1:{port}")
        finally:
            worker.stop()
            api.stop()
            drop_redis_keys(queue)
            engine = docker.from_env()
            label = owner_label(worker_settings(make_settings(root / "data"), "w").storage.data_dir)
            for container in engine.containers.list(all=True, filters={"label": f"{LABEL}={label}"}):
                container.remove(force=True)  # none after a clean stop; this test's own if any
            engine.close()


def test_wait_returns_the_verdict_graded_by_a_worker(stack: CeleryStack) -> None:
    for source, expected in ((REFERENCE, Status.ACCEPTED), (WRONG, Status.WRONG_ANSWER)):
        started = time.monotonic()
        response = stack.client.post(
            "/api/submissions?wait=60", json={"problem_id": "embedding-layer", "source": source}
        )
        assert response.status_code == 200, response.text
        verdict = response.json()
        assert verdict["status"] == expected
        assert time.monotonic() - started < 30
        assert stack.client.get(f"/api/submissions/{verdict['id']}").json()["status"] == expected


def test_the_worker_relays_progress_to_the_api(stack: CeleryStack) -> None:
    """Wake-ups cross processes over Redis: ?wait= and the event stream need no polling to see a test land."""
    submission_id = stack.client.post(
        "/api/submissions", json={"problem_id": "embedding-layer", "source": SLOW}
    ).json()["id"]

    async def first_wake() -> float:
        started = time.monotonic()
        event = stack.api.notifier.watch(submission_id)
        try:
            await asyncio.wait_for(event.wait(), timeout=30)
        finally:
            stack.api.notifier.unwatch(submission_id, event)
        return time.monotonic() - started

    assert asyncio.run(first_wake()) < 30
    with stack.client.stream("GET", f"/api/submissions/{submission_id}/events") as events:
        body = "".join(events.iter_text())
    assert "event: verdict" in body
    assert '"status":"time_limit_exceeded"' in body


def test_the_worker_serves_metrics_and_health(stack: CeleryStack) -> None:
    stack.client.post("/api/submissions?wait=60", json={"problem_id": "embedding-layer", "source": REFERENCE})
    deadline = time.monotonic() + 10  # the verdict goes out first; the worker counts it just after
    while True:
        with urllib.request.urlopen(f"{stack.worker_http}/metrics", timeout=10) as response:
            metrics = response.read().decode()
        if 'torchjudge_grading_seconds_count{status="accepted"}' in metrics or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert 'torchjudge_grading_seconds_count{status="accepted"}' in metrics
    assert 'torchjudge_sandbox_containers{state="idle"}' in metrics
    assert "torchjudge_sandbox_pool_size 1.0" in metrics
    with urllib.request.urlopen(f"{stack.worker_http}/healthz", timeout=10) as response:
        assert response.status == 200
    api_metrics = stack.client.get("/metrics").text
    assert 'torchjudge_submissions{status="accepted"}' in api_metrics
    assert "torchjudge_submissions_created_total" in api_metrics


def test_worker_logs_are_json_lines_carrying_the_submission_id(stack: CeleryStack) -> None:
    submission_id = stack.client.post(
        "/api/submissions?wait=60", json={"problem_id": "embedding-layer", "source": REFERENCE}
    ).json()["id"]
    # The worker says "graded" once whoever waits has been told (processing.py): the line may follow the answer.
    deadline = time.monotonic() + 15
    while True:
        entries = [e for e in stack.worker.log_entries() if e.get("submission_id") == submission_id]
        if any(e["message"].startswith("graded: accepted") for e in entries) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert any(e["message"].startswith("graded: accepted") for e in entries), entries
    assert all({"time", "level", "logger", "message"} <= set(e) for e in entries)


# -- the database: one grader at a time ----------------------------------------------------------------------
@pytest.fixture
def postgres() -> Iterator[Database]:
    with postgres_database() as url:
        database = Database(url)
        upgrade_to_head(database.engine)
        yield database
        database.engine.dispose()


def test_of_many_racing_workers_exactly_one_takes_a_submission(postgres: Database) -> None:
    with postgres.session() as session:
        submission_id = crud.create_submission(
            session, problem_id="embedding-layer", problem_version="v", source=REFERENCE
        ).id
    barrier = threading.Barrier(8)
    taken: list[int] = []

    def take() -> None:
        with postgres.session() as session:
            barrier.wait()
            submission = crud.mark_running(session, submission_id=submission_id, lease_s=60)
            if submission is not None:
                taken.append(submission.attempts)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert taken == [1]


def test_a_live_lease_keeps_others_out_and_a_lapsed_one_hands_over(postgres: Database) -> None:
    with postgres.session() as session:
        submission_id = crud.create_submission(
            session, problem_id="embedding-layer", problem_version="v", source=REFERENCE
        ).id
        first = crud.mark_running(session, submission_id=submission_id, lease_s=0.5)
        assert first is not None and first.attempts == 1
        assert crud.mark_running(session, submission_id=submission_id, lease_s=0.5) is None
        assert lease_data.renew_lease(session, submission_id=submission_id, attempt=1, lease_s=0.5)
        time.sleep(0.7)  # the first worker died: nobody renews
        second = crud.mark_running(session, submission_id=submission_id, lease_s=60)
        assert second is not None and second.attempts == 2
        # The first attempt, were it still alive, has lost the submission: no renewal, no verdict stored.
        assert not lease_data.renew_lease(session, submission_id=submission_id, attempt=1, lease_s=60)
        crud.finish_submission(
            session, submission_id=submission_id, verdict=Verdict(status=Status.WRONG_ANSWER), attempt=1
        )
        assert crud.get_submission(session, submission_id=submission_id).status == Status.RUNNING  # type: ignore[union-attr]
        crud.finish_submission(
            session, submission_id=submission_id, verdict=Verdict(status=Status.ACCEPTED, score=1.0), attempt=2
        )
        assert crud.mark_running(session, submission_id=submission_id, lease_s=60) is None  # final stays final
        assert crud.get_submission(session, submission_id=submission_id).status == Status.ACCEPTED  # type: ignore[union-attr]


def test_the_api_draws_hidden_inputs_from_a_pool_of_seeds(stack: CeleryStack) -> None:
    """A Celery-mode API runs no reference, yet keeps a pool of seeds as local mode does: each seed serves
    several submissions (its expected outputs computed once, by the first worker to grade with it, and
    kept in the database), so that a worker does not pay a reference run for every submission."""
    problem = stack.api.registry.get("embedding-layer")
    assert problem is not None
    deadline = time.monotonic() + 30
    while stack.api.seeds.ready_count(problem) < stack.api.settings.seeding.pool_size:
        assert time.monotonic() < deadline, "the API's seed pool did not fill"
        time.sleep(0.05)
    draws = [stack.api.seeds.draw(problem) for _ in range(4 * stack.api.settings.seeding.pool_size)]
    assert None not in draws
    assert len(set(draws)) < len(draws), "every submission got a seed of its own"
    first = stack.client.post("/api/submissions?wait=60", json={"problem_id": "embedding-layer", "source": REFERENCE})
    assert first.json()["status"] == Status.ACCEPTED
