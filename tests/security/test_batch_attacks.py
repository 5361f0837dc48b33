"""The batch endpoint, metadata, the admin's export and owner tokens, attacked over real HTTP (a uvicorn
server in a process of its own, tests/http/conftest.py; no sandboxes: submissions stay queued, which is all
these attacks need):

- a client sending a batch's body slowly holds one place of GRADER_BATCH_CONCURRENCY, never all of them,
  and its place comes back when it goes;
- every item counts against the rate limit, and the queue must have room for the whole batch (nothing is
  stored of a batch refused);
- a batch cannot be posted cross-site (a text/plain form, another Origin), nor be larger than its cap;
- hostile text (a lone surrogate in metadata, CR LF in an export's file name) is refused or cleaned;
- an answer listing every item's refusal stays bounded."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.http.conftest import ADMIN_TOKEN, Server, serving

KEYS = [f"batch-attack-key-{n}-0123456789" for n in range(4)]
RATE = 5
ROOM = 6
ITEM = {"problem_id": "embedding-layer", "source": "x = 1\n"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(
        tmp_path_factory.mktemp("batch-attacks"),
        api_keys=",".join(KEYS),
        rate_limit_per_minute=str(RATE),
        max_queue=str(ROOM),
        max_batch_bytes=str(256 * 1024),
        batch_concurrency="2",
        body_timeout_s="20",
    ) as server:
        yield server


def post(server: Server, items: object, key: str, **headers: str) -> httpx.Response:
    return httpx.post(
        f"http://127.0.0.1:{server.port}/api/submissions/batch",
        json={"items": items},
        headers={"X-API-Key": key, **headers},
        timeout=30,
    )


def slow_batch(server: Server, key: str) -> socket.socket:
    """A batch whose headers came and whose body never ends (well within the body timeout)."""
    sock = server.connect()
    sock.sendall(
        b"POST /api/submissions/batch HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        + f"X-API-Key: {key}\r\nContent-Length: 5000\r\n\r\n".encode()
        + b'{"items": ['
    )
    return sock


def until(predicate: object, limit: float = 10.0) -> None:
    deadline = time.monotonic() + limit
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_a_slow_batch_holds_one_place_and_gives_it_back(served: Server) -> None:
    first = slow_batch(served, KEYS[0])
    try:
        until(lambda: post(served, [ITEM], KEYS[0]).status_code == 429)
        again = post(served, [ITEM], KEYS[0])
        assert again.status_code == 429 and "previous batch" in again.json()["detail"], again.text
        assert 1 <= int(again.headers["Retry-After"]) <= 10
        second = slow_batch(served, KEYS[1])
        try:
            until(lambda: "other batches" in post(served, [ITEM], KEYS[2]).text)
        finally:
            second.close()
        # The slow client's place, and the other's, come back when they go.
        until(lambda: post(served, [{"problem_id": "no-such", "source": "x"}], KEYS[2]).status_code == 422)
    finally:
        first.close()
    until(lambda: post(served, [{"problem_id": "no-such", "source": "x"}], KEYS[0]).status_code == 422)


def test_every_item_counts_against_the_rate_limit_and_the_queue(served: Server) -> None:
    key = KEYS[3]
    over = post(served, [ITEM] * (RATE + 1), key)
    assert over.status_code == 422 and "rate limit" in over.json()["detail"], over.text
    assert post(served, [ITEM] * 3, key).status_code == 202
    refused = post(served, [ITEM] * 3, key)  # 3 + 3 > 5 in the window
    assert refused.status_code == 429 and "rate limit" in refused.json()["detail"], refused.text
    assert int(refused.headers["Retry-After"]) >= 1
    mine = httpx.get(f"http://127.0.0.1:{served.port}/api/me/submissions", headers={"X-API-Key": key}).json()
    assert len(mine["submissions"]) == 3, "nothing of the refused batch was stored"
    # The queue (room for 6; 3 taken) has no room for 4 more: the whole batch is refused, nothing stored.
    other = post(served, [ITEM] * 4, KEYS[2])
    assert other.status_code == 429 and "room for 3 more" in other.json()["detail"], other.text
    listed = httpx.get(
        f"http://127.0.0.1:{served.port}/api/submissions",
        params={"limit": 500},
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
    ).json()
    assert len(listed["submissions"]) == 3


def test_a_batch_cannot_come_from_another_site_or_be_over_its_cap(served: Server) -> None:
    url = f"http://127.0.0.1:{served.port}/api/submissions/batch"
    form = httpx.post(url, content=b'{"items": []}', headers={"Content-Type": "text/plain", "X-API-Key": KEYS[0]})
    assert form.status_code == 415, form.text
    cross = post(served, [ITEM], KEYS[0], Origin="https://evil.example")
    assert cross.status_code == 403, cross.text
    big = post(served, [{"problem_id": "p", "source": "x" * 60_000}] * 5, KEYS[0])
    assert big.status_code == 413, big.text


def test_hostile_text_is_refused_or_cleaned(served: Server) -> None:
    raw = b'{"items": [{"problem_id": "embedding-layer", "source": "x = 1", "metadata": {"a": "\\ud800"}}]}'
    answer = httpx.post(
        f"http://127.0.0.1:{served.port}/api/submissions/batch",
        content=raw,
        headers={"Content-Type": "application/json", "X-API-Key": KEYS[1]},
    )
    assert answer.status_code in (422,), answer.text
    exported = httpx.get(
        f"http://127.0.0.1:{served.port}/api/submissions/export",
        params={"format": "csv", "problem_id": 'a"\r\nX-Evil: 1'},
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
    )
    assert exported.status_code in (200, 422), exported.text
    assert "x-evil" not in exported.headers
    if exported.status_code == 200:
        assert exported.headers["content-disposition"] == 'attachment; filename="aX-Evil1.csv"'


def test_an_answer_listing_every_refusal_stays_bounded(served: Server, tmp_path: Path) -> None:
    items = [{"problem_id": "embedding-layer", "source": "x", "metadata": {f"k{n}": n for n in range(40)}}] * 100
    items += [{"problem_id": "p" * 64, "source": "x", "unknown": "y" * 2000}] * 100
    answer = post(served, items, KEYS[1])
    assert answer.status_code == 422, answer.text[:500]
    body = answer.json()
    assert body["accepted"] == 0 and body["refused"] == 200
    assert len(answer.content) < 200 * 1200, len(answer.content)  # each refusal's detail is cut short
    assert all(len(item["detail"]) <= 1000 for item in body["items"])
    assert json.dumps(body).count("yyyy") == 0, "the input is not echoed back"
