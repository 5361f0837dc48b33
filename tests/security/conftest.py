"""Fixtures of the security suite: one service per sandbox runtime, the same API as tests/conftest.py.

`service`, `client` and `submit` are redefined here (not reused from tests/conftest.py) so that the
suite can run once per runtime: runc always, runsc (gVisor) when the Docker engine lists it
(scripts/ensure-runsc.sh registers it). Without it the runsc half is skipped, for that reason only.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.conftest import final_verdict, make_settings, wait_until_ready
from tests.security.attacks import CORRECT, Context

RUNTIMES = ("runc", "runsc")


def registered_runtimes() -> set[str]:
    from grader.containers.container import docker_client

    try:
        return set((docker_client().info().get("Runtimes") or {}).keys())
    except Exception:  # noqa: BLE001 - no engine: the runc half fails on its own, loudly
        return set()


@pytest.fixture(scope="session", params=RUNTIMES)
def sandbox_runtime(request: pytest.FixtureRequest) -> str:
    runtime = str(request.param)
    if runtime != "runc" and runtime not in registered_runtimes():
        pytest.skip(
            f"the {runtime} runtime is not registered with the Docker engine "
            "(scripts/ensure-runsc.sh installs gVisor and registers it)"
        )
    return runtime


def security_settings(data_dir: Path, runtime: str, **overrides: object):  # type: ignore[no-untyped-def]
    # Containers are never retired for age here, so a replaced container always means an incident.
    values: dict[str, object] = {"sandbox_runtime": runtime, "pool_size": 2, "sandbox_reuse": 100_000}
    if runtime != "runc":
        # gVisor serves files through its gofer, slowly: reading every file of the image (an attack)
        # takes about 15 s there, so loading gets 30 s instead of 10.
        values["load_time_s"] = 30.0
    values.update(overrides)
    return make_settings(data_dir, **values)


@pytest.fixture(scope="session")
def service(sandbox_runtime: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from grader.components import build

    svc = build(security_settings(tmp_path_factory.mktemp(f"security-{sandbox_runtime}"), sandbox_runtime))
    svc.start()
    try:
        wait_until_ready(svc)
        yield svc
    finally:
        svc.stop()


@pytest.fixture(scope="session")
def client(service: object) -> Iterator[TestClient]:
    from grader.app import create_app

    app = create_app(service.settings, components=service)  # type: ignore[attr-defined]
    with TestClient(app) as test_client:
        # The first submission computes the expected outputs (a reference run): not an attack's cost.
        body = {"problem_id": "embedding-layer", "source": CORRECT}
        response = test_client.post("/api/submissions?wait=60", json=body)
        assert response.json()["status"] == "accepted", response.text
        yield test_client


Submit = Callable[[str], dict]


@pytest.fixture(scope="session")
def submit(client: TestClient) -> Submit:
    """POSTs a submission and waits for its final verdict (the raw text is kept under "_raw")."""

    def _submit(source: str, problem_id: str = "embedding-layer", wait: int = 60) -> dict:
        response = client.post(f"/api/submissions?wait={wait}", json={"problem_id": problem_id, "source": source})
        response = final_verdict(client, response)
        verdict = response.json()
        verdict["_raw"] = response.text
        return verdict  # type: ignore[no-any-return]

    return _submit


@pytest.fixture
def context(tmp_path: Path) -> Context:
    return Context(host_marker=tmp_path / "unpickled-on-the-host", secret="tjsecret-" + secrets.token_hex(16))


def full_pool(service: object, timeout: float = 120.0) -> list[str]:
    """The names of the pool's containers once every one of them is warm and idle."""
    pool = service.pool  # type: ignore[attr-defined]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        names = pool.idle_names()
        if len(names) == pool.size:
            return sorted(names)
        time.sleep(0.05)
    raise AssertionError(f"the pool did not refill: {pool.status()} {pool.last_error}")
