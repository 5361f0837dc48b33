"""Shared fixtures. Integration tests run the real service: real Docker sandboxes, a real SQLite file."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from grader.config import REPO_ROOT, Settings
from tests.speed_problem import service_problems

PROBLEMS_DIR = REPO_ROOT / "problems"
SERVICE_PROBLEMS_DIR = service_problems(PROBLEMS_DIR)  # what the tests' services serve (tests/speed_problem.py)
CASES_DIR = Path(__file__).parent / "cases"

# Hermetic: the operator's own settings (an admin token, API keys, a rate limit, a webhook secret exported in the
# shell as the README tells an admin to) never reach a test, its services or the processes it starts. Each test
# sets what it needs itself. Dropped here, when pytest loads this file: before any test or fixture runs.
OPERATOR_PREFIXES = ("GRADER_",)
for _name in [name for name in os.environ if name.startswith(OPERATOR_PREFIXES)]:
    del os.environ[_name]
# The one setting every test's service has: Starlette's TestClient names its host "testserver", which is none
# of a service's own names (grader/api/hosts.py); tests of the host rule build their settings without it.
os.environ["GRADER_ALLOWED_HOSTS"] = "testserver"


def make_settings(data_dir: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {"data_dir": data_dir, "problems_dir": SERVICE_PROBLEMS_DIR, "pool_size": 2}
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


FINAL_WAIT_S = 600.0  # past ?wait=60 (the API's most): a verdict on a slow or loaded machine, polled for


def final_verdict(
    client: TestClient, response: object, headers: dict | None = None, timeout: float = FINAL_WAIT_S
) -> object:
    """The answer holding the final verdict of the submission just POSTed with ?wait=: that answer when it came
    in time (200), else the submission read until it is final (202: a slow machine, a queue behind it)."""
    if response.status_code == 200:  # type: ignore[attr-defined]
        return response
    assert response.status_code == 202, response.text  # type: ignore[attr-defined]
    location = f"/api/submissions/{response.json()['id']}"  # type: ignore[attr-defined]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = client.get(location, headers=headers)
        assert answer.status_code == 200, answer.text
        if answer.json()["status"] not in ("queued", "running"):
            return answer
        time.sleep(0.25)
    raise AssertionError(f"{location} was not final after {timeout:.0f} s")


def wait_until_ready(service: object, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if service.pool.ready:  # type: ignore[attr-defined]
            return
        time.sleep(0.2)
    raise AssertionError(f"the sandbox pool did not warm up: {service.pool.last_error}")  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from grader.components import build

    # No cap on runs per minute: the modules that run every problem's modules through Run share it.
    svc = build(make_settings(tmp_path_factory.mktemp("data"), run_rate_per_minute=0))
    svc.start()
    wait_until_ready(svc)
    yield svc
    svc.stop()


@pytest.fixture(scope="session")
def client(service: object) -> Iterator[TestClient]:
    from grader.app import create_app

    app = create_app(service.settings, components=service)  # type: ignore[attr-defined]
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def submit(client: TestClient):  # type: ignore[no-untyped-def]
    """POSTs a submission and waits for its final verdict."""

    def _submit(source: str, problem_id: str = "embedding-layer", wait: int = 60) -> dict:
        response = client.post(f"/api/submissions?wait={wait}", json={"problem_id": problem_id, "source": source})
        return final_verdict(client, response).json()  # type: ignore[no-any-return]

    return _submit


# -- the runner on the host (tests/unit/runner_harness.py): one per test module, replaced when a test left it
# mid-job; `host` in tests/unit/test_runner.py and tests/security/test_contract_attacks.py ----------------------
@pytest.fixture(scope="module")
def _host_runners() -> Iterator[list[object]]:
    from tests.unit.runner_harness import HostRunner

    holder: list[object] = [HostRunner()]
    yield holder
    holder[0].close()  # type: ignore[attr-defined]


@pytest.fixture
def host(_host_runners: list[object]) -> object:
    from tests.unit.runner_harness import shared_runner

    return shared_runner(_host_runners)  # type: ignore[arg-type]


# -- one pool of warm sandboxes for every module that checks or runs problems with the default settings
# (a ProblemChecker of its own per module started and removed a pool each time) -----------------------------
@pytest.fixture(scope="session")
def check_sandboxes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    import uuid

    from grader.containers.pool import SandboxPool
    from grader.problems.check.run import LANES

    settings = Settings(data_dir=tmp_path_factory.mktemp("check-data"))
    pool = SandboxPool(
        settings.sandbox, settings.limits, owner=f"check-{uuid.uuid4().hex[:12]}", size=LANES, keep_image=False
    )
    pool.start()
    try:
        if pool.image_id is None:
            pytest.fail(f"no sandbox for the checks: {pool.last_error}")
        yield pool
    finally:
        pool.close()


@pytest.fixture(scope="module")
def shared_checker(check_sandboxes: object) -> Iterator[object]:
    """A ProblemChecker (default settings, 8 seeds) on the session's warm sandboxes."""
    from grader.problems.check import ProblemChecker

    settings = Settings()
    with ProblemChecker(settings.sandbox, settings.limits, check_sandboxes) as checker:  # type: ignore[arg-type]
        yield checker


@pytest.fixture(scope="module")
def shared_checker_one_seed(check_sandboxes: object) -> Iterator[object]:
    """The same, checking under one seed."""
    from grader.problems.check import ProblemChecker

    settings = Settings()
    with ProblemChecker(settings.sandbox, settings.limits, check_sandboxes, seeds=1) as checker:  # type: ignore[arg-type]
        yield checker
