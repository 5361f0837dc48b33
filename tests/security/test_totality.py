"""The trusted side is total, and blame goes where it belongs.

Whatever a sandbox sends and whatever fails while it is handled, a submission ends with a final verdict
and its container comes back or is replaced; the pool never shrinks for good; a submission whose
sandbox is lost twice, at any tests, is its own runtime_error, never the judge's internal_error.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.conftest import wait_until_ready
from tests.security.attacks import ATTACKS_BY_NAME, CORRECT, FACTORY, PRELUDE, Context
from tests.security.conftest import Submit, full_pool, security_settings

pytestmark = pytest.mark.docker


def test_two_undecodable_values_at_once_leave_the_pool_whole(
    service: object, client: TestClient, submit: Submit, context: Context
) -> None:
    """Two submissions, one per pool container, each forging a value whose shape numpy cannot describe:
    both are the submissions' runtime_error, the same two containers serve the next submission, and
    /healthz stays ready throughout."""
    containers = full_pool(service)
    source = ATTACKS_BY_NAME["zero-size-tensor-whose-shape-overflows"].render(context)
    with ThreadPoolExecutor(2) as executor:
        verdicts = list(executor.map(lambda _: submit(source), range(2)))
    assert [v["status"] for v in verdicts] == ["runtime_error", "runtime_error"], verdicts
    assert all("malformed" in (v["tests"][0]["message"] or "") for v in verdicts), verdicts
    assert client.get("/healthz").status_code == 200
    assert submit(CORRECT)["status"] == "accepted"
    assert full_pool(service) == containers


SLEEPS_AT_A_TEST_CHOSEN_BY_ITS_CONTAINER = (
    PRELUDE
    + FACTORY
    + """
import hashlib
import socket
import time

# A different test in every container: the container's name picks it.
VICTIM = 2 + int(hashlib.sha256(socket.gethostname().encode()).hexdigest(), 16) % 15
CALLS = [0]


def embed_tokens(embedding, tokens, d_model):
    CALLS[0] += 1
    if CALLS[0] == VICTIM:
        with open("/tmp/at-victim", "w"):
            pass
        time.sleep(1.5)
    return embedding(tokens) * math.sqrt(d_model)
"""
)


def test_a_sandbox_lost_twice_at_different_tests_is_the_submissions_runtime_error(tmp_path: Path) -> None:
    """Each of the submission's containers dies while it runs a test that the container itself chose
    (here the engine kills it, standing in for whatever a submission might find to take its sandbox
    down). Two containers lost, at different tests: runtime_error, and no third container is spent."""
    # The blame rule does not depend on the runtime: the engine's kill is shown under runc.
    from grader.app import create_app
    from grader.components import build

    settings = security_settings(tmp_path / "data", "runc", pool_size=1)
    service = build(settings)
    service.start()
    handed_out: list[str] = []
    stop = threading.Event()

    def kill_each_container_at_its_victim_test() -> None:
        """Waits for a container to be handed out and to reach its victim test, then kills it."""
        while not stop.is_set():
            with service.pool._lock:
                busy = list(service.pool._out)
            for container in busy:
                if container.name in handed_out:
                    continue
                probe = service.pool.client.containers.get(container.container_id)
                at_victim = probe.exec_run(["sh", "-c", "test -e /tmp/at-victim"], user="10001").exit_code == 0
                if at_victim:
                    handed_out.append(container.name)
                    probe.kill()
            time.sleep(0.05)

    killer = threading.Thread(target=kill_each_container_at_its_victim_test, daemon=True)
    try:
        wait_until_ready(service)
        killer.start()
        with TestClient(create_app(settings, components=service)) as client:
            response = client.post(
                "/api/submissions?wait=60",
                json={"problem_id": "embedding-layer", "source": SLEEPS_AT_A_TEST_CHOSEN_BY_ITS_CONTAINER},
            )
            verdict = response.json()
            assert response.status_code == 200, verdict
            assert verdict["status"] == "runtime_error", verdict
            assert verdict["message"].startswith("the submission crashed the sandbox"), verdict
            assert len(handed_out) == 2, f"containers spent: {handed_out}"
            stop.set()
            wait_until_ready(service)
            after = client.post("/api/submissions?wait=60", json={"problem_id": "embedding-layer", "source": CORRECT})
            assert after.json()["status"] == "accepted"
    finally:
        stop.set()
        service.stop()


def test_a_container_not_returned_in_time_is_replaced_and_the_pool_reports_it_short(tmp_path: Path) -> None:
    """A holder that never gives its container back (a hung grading): past its deadline the watchdog
    removes the container and starts another; meanwhile the pool is not ready, and says why."""
    # The pool's bookkeeping does not depend on the runtime: shown under runc.
    from grader.components import build
    from grader.containers import pool as pool_module

    settings = security_settings(tmp_path / "data", "runc", pool_size=1)
    service = build(settings)
    service.start()
    try:
        wait_until_ready(service)
        pool = service.pool
        original_slack = pool_module.RETURN_SLACK_S
        pool_module.RETURN_SLACK_S = 0.0
        try:
            held = pool.acquire(due_in_s=0.5)
        finally:
            pool_module.RETURN_SLACK_S = original_slack
        time.sleep(0.7)
        state = pool.status()
        assert state["overdue"] + state["starting"] == 1, state  # overdue, or already being replaced
        assert not pool.ready
        ready, why = service.ready()
        assert not ready and why
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not pool.ready:
            time.sleep(0.2)
        assert pool.ready, pool.status()
        assert pool.idle_names() != [held.name]
        assert held.container_id is None, "the overdue container was removed"
        pool.release(held, reusable=True)  # its holder comes back late: nothing is counted twice
        assert pool.status()["busy"] == 0 and pool.status()["idle"] == 1
    finally:
        service.stop()
