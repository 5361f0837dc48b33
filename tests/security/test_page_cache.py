"""The page-cache channel between two sandboxes carries nothing (tests/security/page_cache.py).

A sender submission reads chosen pages of image files; a receiver submission in the pool's other
container times reads of the same pages and reports the bits it recovers. The channel's files are
first evicted from the host's page cache (a helper container, under runc), so that without the
image's prewarm the receiver recovers nearly every bit (measured: 96-100 % under runc, 99 % under
gVisor; `GRADER_SANDBOX_PREWARM=false pytest tests/security/test_page_cache.py` fails). With it
(the pool's keeper locks every page of the image in memory before any sandbox starts) every page
reads as resident and the receiver is left to guess: about 50 % (measured 43-48 %).

Noise: 2 rounds of 64 bits, each bit carried by 3 pages whose read times the receiver averages (one
read slowed by the host, or by gVisor's ptrace platform, does not flip a bit), and the receiver
waits long enough for the sender to have read everything (up to half a second under gVisor). If
the receiver learns nothing its accuracy is binomial(128, 1/2) / 128, and 75 % (96 bits right) is
5.7 standard deviations away: a false failure about once in 10^8 runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.conftest import wait_until_ready
from tests.security import page_cache as pc
from tests.security.attacks import CORRECT
from tests.security.conftest import security_settings

pytestmark = pytest.mark.docker

BITS = 64
COPIES = 3  # pages per bit
ROUNDS = 2
STRIDE = 4


def test_the_page_cache_channel_between_sandboxes_carries_nothing(sandbox_runtime: str, tmp_path: Path) -> None:
    from grader.app import create_app
    from grader.components import build
    from grader.containers.container import docker_client

    settings = security_settings(tmp_path / "data", sandbox_runtime)
    client = docker_client()
    per_round = BITS * COPIES
    slots = pc.channel_slots(client, settings.sandbox.image, STRIDE)[: per_round * ROUNDS]
    # Cold, as after a reboot or an eviction: the service starts after this.
    pc.evict(client, settings.sandbox.image, [slot.path for slot in slots])
    service = build(settings)
    service.start()
    try:
        wait_until_ready(service)
        with TestClient(create_app(settings, components=service)) as http:

            def post(source: str) -> dict:
                body = {"problem_id": "embedding-layer", "source": source}
                response = http.post("/api/submissions?wait=60", json=body)
                assert response.status_code == 200, response.text
                return response.json()  # type: ignore[no-any-return]

            assert post(CORRECT)["status"] == "accepted"
            rounds = []
            resident_before = []
            for number in range(ROUNDS):
                chosen = slots[number * per_round : (number + 1) * per_round]
                before = pc.resident(client, settings.sandbox.image, chosen)
                resident_before.append(sum(before) / len(before))
                rounds.append(pc.run_round(service, post, chosen, pc.PATTERN[:BITS], COPIES))
    finally:
        service.stop()
    accuracy = sum(result.accuracy for result in rounds) / len(rounds)
    detail = ", ".join(
        f"round {n + 1}: {result.accuracy:.0%} right, 1-pages {result.median_us(1):.1f} µs, "
        f"0-pages {result.median_us(0):.1f} µs, {before:.0%} of the pages resident before"
        for n, (result, before) in enumerate(zip(rounds, resident_before, strict=True))
    )
    print(f"{sandbox_runtime} page-cache channel: {accuracy:.1%} of {BITS * ROUNDS} bits ({detail})")
    assert accuracy < 0.75, f"the receiver recovered {accuracy:.0%} of the sender's bits: {detail}"
