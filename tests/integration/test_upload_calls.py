"""Uploads and runs do on a Celery deployment what they do on one machine, and an upload's check saves the
first submission a reference run:

  - one machine: the check's reference runs seed the expected outputs, so that grading a submission of a
    just-uploaded problem runs the reference no more (counted on the real cache);
  - Celery: POST /api/problems runs the check as a task on a real `grader worker` subprocess (201, or 422
    with the check's messages), the worker grades the uploaded problem without a restart, POST /api/runs
    answers from a worker; with no worker, both answer 504 within their bound and nothing is stored.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from fastapi.testclient import TestClient

from grader.app import create_app
from grader.components import build
from grader.containers.container import LABEL, owner_label
from grader.problems.check.report import check_seeds
from grader.worker import worker_settings
from tests.conftest import PROBLEMS_DIR, make_settings, wait_until_ready
from tests.integration.test_admin_api import DOUBLE, TOKEN, scaling_problem
from tests.services import (
    REDIS_URL,
    REFERENCE,
    GraderProcess,
    drop_redis_keys,
    free_port,
    postgres_database,
    unique_queue,
    worker_env,
)

pytestmark = pytest.mark.docker

AUTH = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/yaml"}


def test_the_checks_reference_runs_seed_the_expected_outputs(tmp_path: Path) -> None:
    problems = tmp_path / "problems"
    problems.mkdir()
    settings = make_settings(
        tmp_path / "data", problems_dir=problems, admin_token=TOKEN, pool_size=1, problems_poll_s=0, seeds="fixed"
    )
    service = build(settings)
    service.start()
    reference_runs: list[tuple[str, int | None, int]] = []
    run = service.expected._run

    def counted(problem: Any, sources: list[str], seed: int | None) -> Any:
        reference_runs.append((problem.id, seed, len(sources)))  # the reference, or the pitfalls
        return run(problem, sources, seed)

    service.expected._run = counted  # type: ignore[method-assign]
    try:
        wait_until_ready(service)
        with TestClient(create_app(settings, components=service)) as client:
            response = client.post("/api/problems", content=scaling_problem("seeded"), headers=AUTH)
            assert response.status_code == 201, response.text
            problem = service.registry.get("seeded")
            assert (
                problem is not None and len(check_seeds(problem)) == settings.problems.check_seeds == 8
            )  # fresh inputs
            verdict = client.post(
                "/api/submissions?wait=60",
                json={"problem_id": "seeded", "source": DOUBLE},
                headers={"Authorization": f"Bearer {TOKEN}"},
            ).json()
            assert verdict["status"] == "accepted", verdict
            assert verdict["seed"] in check_seeds(problem)
            wrong = client.post(
                "/api/submissions?wait=60", json={"problem_id": "seeded", "source": "def scale(x):\n    return x\n"}
            ).json()
            assert wrong["status"] == "wrong_answer" and wrong["hint"] == "Multiply by the factor."
        assert reference_runs == [], reference_runs  # the reference and the pitfalls ran in the check only
    finally:
        service.stop()


# -- Celery ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def celery_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, GraderProcess]]:
    root = tmp_path_factory.mktemp("calls")
    problems = root / "problems"
    problems.mkdir()
    shutil.copy(PROBLEMS_DIR / "embedding-layer.yaml", problems)
    queue = unique_queue()
    port = free_port()
    with postgres_database() as url:
        settings = make_settings(
            root / "api",
            queue="celery",
            database_url=url,
            broker_url=REDIS_URL,
            celery_queue=queue,
            problems_dir=problems,
            admin_token=TOKEN,
        )
        api = build(settings)
        api.start()
        env = worker_env(url, queue, root / "data", problems, port)
        worker = GraderProcess(["worker", "--name", "calls"], env, root / "worker.log").start()
        try:
            worker.wait_http_ready(f"http://127.0.0.1:{port}/healthz")
            with TestClient(create_app(settings, components=api)) as client:
                yield client, worker
        finally:
            worker.stop()
            api.stop()
            drop_redis_keys(queue)
            engine = docker.from_env()
            label = owner_label(worker_settings(make_settings(root / "data"), "calls").storage.data_dir)
            for container in engine.containers.list(all=True, filters={"label": f"{LABEL}={label}"}):
                container.remove(force=True)
            engine.close()


def test_an_upload_is_checked_on_a_worker_and_graded_there(celery_stack: tuple[TestClient, GraderProcess]) -> None:
    client, worker = celery_stack
    response = client.post("/api/problems", content=scaling_problem("remote"), headers=AUTH)
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["created"] is True
    statuses = {step["name"]: step["status"] for step in body["check"]["steps"]}
    assert statuses.pop("alternatives") == "skipped", "the problem has no alternatives"
    assert set(statuses.values()) == {"ok"} and len(statuses) == 7, statuses
    assert client.get("/api/problems/remote").status_code == 200
    verdict = client.post("/api/submissions?wait=60", json={"problem_id": "remote", "source": DOUBLE}).json()
    assert verdict["status"] == "accepted", verdict
    messages = [entry.get("message", "") for entry in worker.log_entries()]
    assert any(m.startswith("expected outputs of remote seeded by its check") for m in messages)

    broken = scaling_problem("broken", reference="raise ValueError('nope')")
    refused = client.post("/api/problems", content=broken, headers=AUTH)
    assert refused.status_code == 422, refused.text
    assert any("the reference fails test 1 'ones'" in error for error in refused.json()["errors"])
    assert client.get("/api/problems/broken").status_code == 404


def test_a_run_is_answered_by_a_worker(celery_stack: tuple[TestClient, GraderProcess]) -> None:
    client, _worker = celery_stack
    response = client.post("/api/runs", json={"problem_id": "embedding-layer", "source": REFERENCE})
    assert response.status_code == 200, response.text
    run = response.json()
    assert run["status"] == "accepted"
    assert run["tests"] and all(test["expected"] is not None and test["got"] is not None for test in run["tests"])
    custom = client.post(
        "/api/runs",
        json={"problem_id": "embedding-layer", "source": REFERENCE, "inputs": {"tokens": [[4, 4, 1]]}},
    )
    assert custom.status_code == 200, custom.text
    assert custom.json()["status"] == "accepted" and len(custom.json()["tests"]) == 1
    bodies = client.post(
        "/api/runs",
        json={"problem_id": "embedding-layer", "source": REFERENCE, "tests": [{"code": "return {'x': 1}"}]},
    )
    assert bodies.status_code == 422 and "inputs" in bodies.json()["detail"]


def test_with_no_worker_uploads_and_runs_answer_504_and_store_nothing(tmp_path: Path) -> None:
    queue = unique_queue()
    with postgres_database() as url:
        settings = make_settings(
            tmp_path / "api",
            queue="celery",
            database_url=url,
            broker_url=REDIS_URL,
            celery_queue=queue,
            admin_token=TOKEN,
            upload_check_timeout_s=5,
            run_timeout_s=5,
        )
        api = build(settings)
        api.start()
        try:
            with TestClient(create_app(settings, components=api)) as client:
                started = time.monotonic()
                response = client.post("/api/problems", content=scaling_problem("nobody"), headers=AUTH)
                assert response.status_code == 504, response.text
                assert "not stored" in response.json()["detail"] and "within 5 s" in response.json()["detail"]
                assert time.monotonic() - started < 15
                assert client.get("/api/problems/nobody").status_code == 404
                run = client.post("/api/runs", json={"problem_id": "embedding-layer", "source": REFERENCE})
                assert run.status_code == 504 and "no worker ran it within 5 s" in run.json()["detail"]
        finally:
            api.stop()
            drop_redis_keys(queue)
