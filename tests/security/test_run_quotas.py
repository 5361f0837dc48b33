"""Runs have quotas and bounded waits of their own (issue 24, point 2): per client a rate and a number at
once (429), overall a number at once (503), a bound on waiting for a container and on the whole run (503),
each answer with Retry-After; a run whose answer gave up still holds its places until its work ends.

One service of this file's own (runc), small limits, clients told apart by their API keys."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from grader.components import Components, build
from tests.conftest import make_settings, wait_until_ready
from tests.security.attacks import CORRECT

pytestmark = pytest.mark.docker

KEYS = [f"run-quota-client-{letter}-0123456789" for letter in "abcdef"]
PER_MINUTE = 4
RUN_TIMEOUT_S = 5.0
WAIT_S = 2.0
# Every visible test sleeps 1.5 s of its 2 s limit (one call each, none times out, so none is skipped): a run of
# 6 s (four tests), with a container busy throughout.
SPINS = """\
import time

def create_embedding_layer(vocab_size, d_model):
    time.sleep(1.5)

def embed_tokens(embedding, tokens, d_model):
    time.sleep(1.5)
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Components, TestClient]]:
    from grader.app import create_app

    settings = make_settings(
        tmp_path_factory.mktemp("run-quotas"),
        api_keys=",".join(KEYS),
        run_rate_per_minute=PER_MINUTE,
        run_concurrency_per_client=1,
        run_concurrency=2,
        run_wait_s=WAIT_S,
        run_timeout_s=RUN_TIMEOUT_S,
    )
    components = build(settings)
    components.start()
    try:
        wait_until_ready(components)
        deadline = time.monotonic() + 180
        while not (components.runs.pool.ready and components.runs.references.ready):
            assert time.monotonic() < deadline, "the runs' pools did not warm up"
            time.sleep(0.2)
        with TestClient(create_app(settings, components=components)) as client:
            yield components, client
    finally:
        components.stop()


def run(client: TestClient, key: str, source: str = CORRECT, **extra: Any) -> httpx.Response:
    body = {"problem_id": "embedding-layer", "source": source, **extra}
    return client.post("/api/runs", json=body, headers={"X-API-Key": key})


def retry_after(response: httpx.Response) -> int:
    value = int(response.headers["Retry-After"])
    assert 1 <= value <= 60, value
    return value


def test_past_its_rate_a_client_gets_429_and_others_do_not(served: tuple[Components, TestClient]) -> None:
    _components, client = served
    for _ in range(PER_MINUTE):
        response = run(client, KEYS[0])
        assert response.status_code == 200, response.text
    refused = run(client, KEYS[0])
    assert (
        refused.status_code == 429 and refused.json()["detail"] == f"rate limit: at most {PER_MINUTE} runs per minute"
    )
    assert retry_after(refused) > 1
    assert run(client, KEYS[1]).status_code == 200, "another client is not held back"


def test_at_once_per_client_then_for_everyone_then_a_bounded_wait(served: tuple[Components, TestClient]) -> None:
    components, client = served
    answers: dict[str, httpx.Response] = {}

    def in_background(name: str, key: str) -> threading.Thread:
        thread = threading.Thread(target=lambda: answers.__setitem__(name, run(client, key, SPINS)))
        thread.start()
        return thread

    def until(predicate: Any) -> None:
        deadline = time.monotonic() + 30
        while not predicate():
            assert time.monotonic() < deadline, components.runs.limits.running
            time.sleep(0.02)

    pool = components.runs.pool
    until(lambda: pool.status()["idle"] == pool.size)  # the last test's container is back
    started = time.monotonic()
    spinning = in_background("spinning", KEYS[2])
    until(lambda: pool.status()["busy"] == 1)  # it holds the container
    again = run(client, KEYS[2])
    assert again.status_code == 429 and "at most 1 per client" in again.json()["detail"], again.text
    retry_after(again)
    waiting = in_background("waiting", KEYS[3])  # admitted: the second place of two; it waits for a container
    until(lambda: components.runs.limits.running == 2)
    full = run(client, KEYS[4])
    assert full.status_code == 503 and "every place for runs is taken" in full.json()["detail"]
    retry_after(full)

    waiting.join(timeout=60)
    assert answers["waiting"].status_code == 503, answers["waiting"].text
    assert "no sandbox to run in now" in answers["waiting"].json()["detail"]
    retry_after(answers["waiting"])
    spinning.join(timeout=60)
    took = time.monotonic() - started
    assert answers["spinning"].status_code == 503, answers["spinning"].text
    assert answers["spinning"].json()["detail"] == f"the run did not finish within {RUN_TIMEOUT_S:g} s; try again"
    assert took < RUN_TIMEOUT_S + 10, f"its answer came after {took:.1f} s"
    # The answer gave up; the work goes on to its own end (its tests' time limits), and holds its places.
    if components.runs.limits.running:
        assert run(client, KEYS[2]).status_code == 429
    until(lambda: components.runs.limits.running == 0)
    assert run(client, KEYS[5]).status_code == 200, "everything is given back"
