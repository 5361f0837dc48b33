"""One client flooding runs does not starve grading (issue 24, point 2): with 48 requests at once in a loop,
modules that spin through every time limit, on the visible tests and on custom inputs, correct submissions
of another client are graded in about their usual time, and /healthz and GET /api/submissions/{id} stay
fast. Once, six such runs held the one reference container and kept a correct submission queued past its
60 s wait; sixty took every worker thread of the API (17 s for /healthz).

The service is served by uvicorn (as `grader serve`), with the default limits for runs; the flood comes from
a process of its own, so that its client threads cost this process nothing. Latencies are compared as a
ratio, with slack: the machine has 2 cores and the spinning container takes one of them."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from grader.components import Components, build
from tests.conftest import make_settings, wait_until_ready
from tests.security.attacks import CORRECT
from tests.web.conftest import _free_port

pytestmark = pytest.mark.docker

FLOODERS = 48
SAMPLES = 8
RATIO = 4.0  # flood median / quiet median, at most
SLACK_S = 1.0
FAST_S = 2.0  # /healthz and GET /api/submissions/{id}, at most, during the flood

SPINS = """\
import torch.nn as nn

def create_embedding_layer(vocab_size, d_model):
    while True:
        pass

def embed_tokens(embedding, tokens, d_model):
    while True:
        pass
"""

FLOOD = textwrap.dedent(
    """
    import json, sys, threading, time, urllib.error, urllib.request
    base, source, seconds, threads = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    counts, lock, stop = {}, threading.Lock(), time.monotonic() + seconds

    def flood(number):
        while time.monotonic() < stop:
            body = {"problem_id": "embedding-layer", "source": source}
            if number % 2:
                body["inputs"] = {"tokens": [[1, 2, 3]]}
            request = urllib.request.Request(
                base + "/api/runs", json.dumps(body).encode(), {"Content-Type": "application/json"}
            )
            try:
                with urllib.request.urlopen(request, timeout=120) as answer:
                    status = answer.status
            except urllib.error.HTTPError as error:
                status = error.code
            except Exception as error:
                status = type(error).__name__
            with lock:
                counts[status] = counts.get(status, 0) + 1
            if status != 200:
                time.sleep(0.1)

    workers = [threading.Thread(target=flood, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    print(json.dumps({str(key): value for key, value in counts.items()}))
    """
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Components, str]]:
    from grader.app import create_app

    settings = make_settings(tmp_path_factory.mktemp("run-flood"))
    components = build(settings)
    components.start()
    server: uvicorn.Server | None = None
    try:
        wait_until_ready(components)
        port = _free_port()
        config = uvicorn.Config(
            create_app(settings, components=components), host="127.0.0.1", port=port, log_level="warning"
        )
        server = uvicorn.Server(config)
        threading.Thread(target=server.run, name="uvicorn-flood", daemon=True).start()
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        yield components, f"http://127.0.0.1:{port}"
    finally:
        if server is not None:
            server.should_exit = True
        components.stop()


def grade(client: httpx.Client) -> tuple[float, str]:
    started = time.perf_counter()
    response = client.post("/api/submissions?wait=60", json={"problem_id": "embedding-layer", "source": CORRECT})
    took = time.perf_counter() - started
    assert response.status_code == 200 and response.json()["status"] == "accepted", response.text[:300]
    return took, response.json()["id"]


def timed(client: httpx.Client, path: str) -> float:
    started = time.perf_counter()
    response = client.get(path)
    assert response.status_code == 200, (path, response.status_code, response.text[:200])
    return time.perf_counter() - started


def test_a_flood_of_runs_leaves_grading_and_reads_at_their_pace(served: tuple[Components, str], tmp_path: Path) -> None:
    components, base = served
    with httpx.Client(base_url=base, timeout=120) as client:
        for _ in range(2):  # expected outputs computed, every warm container used once
            grade(client)
        quiet = [grade(client)[0] for _ in range(SAMPLES)]
        flood_s = 20 + SAMPLES * (statistics.median(quiet) + 1.5)
        env = {**os.environ, "PYTHONPATH": ""}
        flood = subprocess.Popen(
            [sys.executable, "-c", FLOOD, base, SPINS, str(flood_s), str(FLOODERS)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            time.sleep(5)  # the flood under way: its first runs spinning, the rest refused in a loop
            during, reads = [], []
            for _ in range(SAMPLES):
                took, submission_id = grade(client)
                during.append(took)
                reads.append(timed(client, "/healthz"))
                reads.append(timed(client, f"/api/submissions/{submission_id}"))
            spinning = components.runs.limits.running
        finally:
            out, _ = flood.communicate(timeout=flood_s + 180)
    counts = json.loads(out.strip().splitlines()[-1])
    report = (
        f"quiet median {statistics.median(quiet):.3f} s, flood median {statistics.median(during):.3f} s "
        f"(max {max(during):.3f}); reads max {max(reads):.3f} s; flood answers {counts}; runs at once {spinning}"
    )
    print(report)
    assert counts.get("429", 0) > FLOODERS, f"the flood was refused by its client's limits: {report}"
    assert statistics.median(during) <= RATIO * statistics.median(quiet) + SLACK_S, report
    assert max(reads) <= FAST_S, report
