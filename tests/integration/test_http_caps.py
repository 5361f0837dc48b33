"""Caps on what holds a request open: POST /api/submissions?wait= (GRADER_MAX_WAITERS) and event streams
(GRADER_MAX_STREAMS). Beyond a cap: 429 with Retry-After; a slot comes back whatever ends its request (the
verdict, the wait running out, the client leaving). The session's real service behind a real uvicorn built
as `grader serve` builds it, with the caps set to 1 waiter and 2 streams."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from grader.api.server import build_server
from grader.app import create_app
from grader.grading.verdict import FINAL
from grader.storage import crud
from tests.web.solutions import SLOW

pytestmark = pytest.mark.docker

# Correct, but the first call of embed_tokens in a process sleeps: the submission runs for a few seconds.
SLEEPS_ONCE = """\
import math
import time
import torch.nn as nn

_slept = False

def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)

def embed_tokens(embedding, tokens, d_model):
    global _slept
    if not _slept:
        _slept = True
        time.sleep(1.5)
    return embedding(tokens) * math.sqrt(d_model)
"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def capped(service: Any) -> Iterator[tuple[str, FastAPI]]:
    """(base URL, app) of a server with GRADER_MAX_WAITERS=1 and GRADER_MAX_STREAMS=2."""
    settings = service.settings.replace(max_waiters=1, max_streams=2, log_level="WARNING")
    app = create_app(settings, components=service)
    server = build_server(app, settings, host="127.0.0.1", port=free_port())
    thread = threading.Thread(target=server.run, name="uvicorn-capped", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{server.config.port}", app
    server.should_exit = True
    thread.join(timeout=15)


def eventually(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        time.sleep(0.02)


def submission_count(service: Any) -> int:
    with service.db.session() as session:
        return sum(crud.count_by_status(session).values())


def wait_until_final(http: httpx.Client, submission_id: str, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        body = http.get(f"/api/submissions/{submission_id}").json()
        if body["status"] in FINAL:
            return body  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, f"{submission_id} is still {body['status']}"
        time.sleep(0.2)


def submission(source: str) -> dict[str, str]:
    return {"problem_id": "embedding-layer", "source": source}


def first_not_429(request: Callable[[], httpx.Response], timeout: float) -> tuple[httpx.Response, float]:
    """Repeats `request` while it is answered 429: the first other answer, and how long it took to come."""
    started = time.monotonic()
    while True:
        response = request()
        if response.status_code != 429:
            return response, time.monotonic() - started
        assert time.monotonic() - started < timeout, f"still 429 after {timeout} s: {response.text}"
        time.sleep(0.05)


def test_a_waiter_beyond_the_cap_gets_429_until_the_first_has_its_verdict(
    capped: tuple[str, FastAPI], service: Any
) -> None:
    url, app = capped
    first: list[httpx.Response] = []
    with httpx.Client(base_url=url, timeout=60) as http:
        stored = submission_count(service)
        waiter = threading.Thread(
            target=lambda: first.append(http.post("/api/submissions?wait=30", json=submission(SLEEPS_ONCE)))
        )
        waiter.start()
        eventually(lambda: submission_count(service) == stored + 1, what="the first waiter's submission")
        refused = http.post("/api/submissions?wait=30", json=submission(SLEEPS_ONCE))
        assert refused.status_code == 429, refused.text
        assert int(refused.headers["retry-after"]) >= 1
        assert "waiting for a verdict" in refused.json()["detail"]
        assert submission_count(service) == stored + 1, "a refused waiter must not leave a submission behind"
        # Without ?wait= nothing is held open, so nothing is capped.
        unheld = http.post("/api/submissions", json=submission(SLEEPS_ONCE))
        assert unheld.status_code == 202
        waiter.join(60)
        assert first[0].status_code == 200 and first[0].json()["status"] == "accepted", first[0].text
        again = http.post("/api/submissions?wait=30", json=submission(SLEEPS_ONCE))
        assert again.status_code == 200, again.text
        wait_until_final(http, unheld.json()["id"])
    assert app.state.waiters.in_use == 0


def test_a_waiter_whose_client_leaves_gives_its_slot_back_before_the_verdict(capped: tuple[str, FastAPI]) -> None:
    url, app = capped
    key = {"Idempotency-Key": f"leaves-{time.time_ns()}"}
    with httpx.Client(base_url=url, timeout=60) as http:
        with pytest.raises(httpx.ReadTimeout):
            http.post("/api/submissions?wait=60", json=submission(SLOW), headers=key, timeout=httpx.Timeout(60, read=1))
        # The cap is one waiter: another is let in only once the first one's slot is back.
        other, after = first_not_429(
            lambda: http.post("/api/submissions?wait=0.2", json=submission(SLEEPS_ONCE)), timeout=5
        )
        assert other.status_code in (200, 202), other.text
        # The same key finds the first submission, which goes on (three tests hang into their 2 s limit).
        replay = http.post("/api/submissions", json=submission(SLOW), headers=key)
        assert replay.headers["idempotent-replayed"] == "true"
        assert replay.json()["status"] not in FINAL, "the verdict came first: nothing shows the slot was freed early"
        assert after < 3
        wait_until_final(http, replay.json()["id"])
        wait_until_final(http, other.json()["id"])
    assert app.state.waiters.in_use == 0


def test_streams_beyond_the_cap_get_429_and_every_way_a_stream_ends_frees_its_slot(
    capped: tuple[str, FastAPI],
) -> None:
    url, app = capped
    with httpx.Client(base_url=url, timeout=60) as http:
        created = http.post("/api/submissions", json=submission(SLEEPS_ONCE))
        events = f"/api/submissions/{created.json()['id']}/events"
        with http.stream("GET", events) as first, http.stream("GET", events) as second:
            assert first.status_code == 200 and second.status_code == 200
            refused = http.get(events)
            assert refused.status_code == 429, refused.text
            assert int(refused.headers["retry-after"]) >= 1
            assert "event streams" in refused.json()["detail"]
            # The first client leaves: its slot comes back while the submission still runs.
            first.close()
            eventually(lambda: app.state.streams.in_use == 1, what="the slot of the client that left")
            with http.stream("GET", events) as third:
                assert third.status_code == 200
                # These two end by themselves with the verdict.
                assert "event: verdict" in "".join(third.iter_text())
            assert "event: verdict" in "".join(second.iter_text())
        # Both ended: two new streams fit again (each ends at once, the submission being final).
        for _ in range(2):
            response, _ = first_not_429(lambda: http.get(events), timeout=5)
            assert response.status_code == 200 and "event: verdict" in response.text
    eventually(lambda: app.state.streams.in_use == 0, what="every stream's slot back")
