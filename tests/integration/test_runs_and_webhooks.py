"""Runs (POST /api/runs) and webhooks (callback_url), through the real service and real sandboxes.

The webhook receiver is a real HTTP server on this machine's loopback, allowed by
GRADER_WEBHOOK_ALLOWED_HOSTS: loopback is otherwise exactly what the service refuses to call.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fastapi.testclient import TestClient

from grader.components import Components, build
from grader.problems.registry import parse_problem
from tests.conftest import PROBLEMS_DIR, make_settings, wait_until_ready

pytestmark = pytest.mark.docker

SECRET = "webhook-test-secret-0123456789"
EMBEDDING = parse_problem((PROBLEMS_DIR / "embedding-layer.yaml").read_text(), "embedding-layer.yaml")
UNSCALED = next(p.module for p in EMBEDDING.pitfalls if "sqrt" in p.hint)


class Receiver:
    """A webhook receiver: records every POST (headers and body), answers with `status`."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.received: list[tuple[dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                receiver.received.append((dict(self.headers), body))
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook?from=torchjudge"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Components, TestClient]]:
    from grader.app import create_app

    settings = make_settings(
        tmp_path_factory.mktemp("runs"),
        webhook_secret=SECRET,
        webhook_allowed_hosts="127.0.0.1",
        webhook_retry_s=3,
    )
    components = build(settings)
    components.start()
    try:
        wait_until_ready(components)
        with TestClient(create_app(settings, components=components)) as client:
            yield components, client
    finally:
        components.stop()


# -- runs ---------------------------------------------------------------------------------------------
def test_a_run_of_a_wrong_solution_on_ones_own_input_shows_expected_against_got(service) -> None:  # type: ignore[no-untyped-def]
    _components, client = service
    inputs = {"vocab_size": 7, "d_model": 4, "tokens": [[1, 2]]}
    response = client.post("/api/runs", json={"problem_id": "embedding-layer", "source": UNSCALED, "inputs": inputs})
    assert response.status_code == 200, response.text
    run = response.json()
    assert run["status"] == "wrong_answer" and run["kind"] == "custom"
    (result,) = run["tests"]
    assert result["name"] == "your tokens" and result["status"] == "failed"
    assert result["expected"]["out"]["shape"] == [1, 2, 4] and result["got"]["out"]["shape"] == [1, 2, 4]
    assert result["expected"]["out"]["sample"] != result["got"]["out"]["sample"]
    assert result["details"]["max_abs_error"] > 0
    assert client.get("/api/me/submissions").status_code in (404, 401), "a run is not a submission"


def test_a_run_on_the_visible_tests_prints_what_the_code_printed(service) -> None:  # type: ignore[no-untyped-def]
    _components, client = service
    head, embed = EMBEDDING.reference.split("def embed_tokens")
    embed = embed.replace("    return ", "    print('shape', tuple(tokens.shape))\n    return ", 1)
    source = head + "print('loaded')\n\n\ndef embed_tokens" + embed
    run = client.post("/api/runs", json={"problem_id": "embedding-layer", "source": source}).json()
    assert run["status"] == "accepted", run
    visible = sum(1 for test in EMBEDDING.tests if test.visible)
    assert len(run["tests"]) == visible
    assert run["tests"][0]["output"].startswith("loaded\n"), "what the import printed goes to the first test"
    assert all(test["expected"] is not None and test["got"] is not None for test in run["tests"])


def test_an_input_the_reference_cannot_take_says_so_and_shows_what_the_code_did(service) -> None:  # type: ignore[no-untyped-def]
    # num_heads must divide d_model: the declaration cannot say so, the reference raises, and the run says
    # it did without a word of the reference's message or traceback.
    _components, client = service
    problem = parse_problem((PROBLEMS_DIR / "multi-head-attention.yaml").read_text(), "multi-head-attention.yaml")
    inputs = {"d_model": 5, "num_heads": 2, "x": [[[1.0, 0.0, 1.0, 0.0, 1.0]]]}
    source = "def create_multi_head_attention(d_model, num_heads):\n    raise ValueError('mine: ' + str(d_model))\n"
    run = client.post("/api/runs", json={"problem_id": problem.id, "source": source, "inputs": inputs}).json()
    assert run["status"] == "internal_error", run
    assert run["message"].startswith("the reference solution fails on these inputs (it raises ")
    (test,) = run["tests"]
    assert test["status"] == "error" and "mine: 5" in test["message"], "the code's own error is shown"
    assert test["expected"] is None
    shown = str(run)
    lines = [line.strip() for line in problem.reference.splitlines() if len(line.strip()) > 20]
    assert lines and not [line for line in lines if line in shown], "nothing of the reference's code"


# -- webhooks -----------------------------------------------------------------------------------------
def _submit(client: TestClient, source: str, callback: str) -> dict:
    response = client.post(
        "/api/submissions?wait=60",
        json={"problem_id": "embedding-layer", "source": source, "callback_url": callback},
    )
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _until(predicate, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_the_verdict_arrives_at_the_callback_signed(service) -> None:  # type: ignore[no-untyped-def]
    _components, client = service
    receiver = Receiver()
    try:
        verdict = _submit(client, EMBEDDING.reference, receiver.url)
        _until(lambda: receiver.received)
        headers, body = receiver.received[0]
        expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        assert headers["X-Torchjudge-Signature"] == expected
        delivered = json.loads(body)
        assert delivered["id"] == verdict["id"] and delivered["status"] == "accepted"
        # The public view, as GET answers it: the hidden tests as a count, never one status each.
        hidden = [test for test in delivered["tests"] if not test["visible"]]
        assert hidden and all(test["status"] is None for test in hidden)
        assert delivered["hidden"] == {
            "total": len(hidden),
            "passed": len(hidden),
            "first_failed": None,
            "per_test": False,
        }
        _until(lambda: client.get(f"/api/submissions/{verdict['id']}").json()["webhook"]["status"] == "delivered")
    finally:
        receiver.close()


def test_a_receiver_that_is_down_loses_nothing(service) -> None:  # type: ignore[no-untyped-def]
    _components, client = service
    receiver = Receiver(status=503)
    try:
        verdict = _submit(client, EMBEDDING.reference, receiver.url)
        assert verdict["status"] == "accepted", "the verdict is stored whatever the receiver does"

        def failed() -> bool:
            return client.get(f"/api/submissions/{verdict['id']}").json()["webhook"]["status"] == "failed"

        _until(failed, timeout=30)
        webhook = client.get(f"/api/submissions/{verdict['id']}").json()["webhook"]
        assert webhook["attempts"] >= 2 and "503" in webhook["error"]
        assert len(receiver.received) == webhook["attempts"], "every attempt reached the receiver"
    finally:
        receiver.close()


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",  # link-local: cloud metadata
        "http://localhost:8000/",  # loopback by name
        "http://10.0.0.1/hook",
        "http://[::1]/hook",
        "http://0x7f000001/hook",  # 127.0.0.1 spelled as a number
        "ftp://example.com/hook",
        "not a url",
        "http://user:pass@example.com/",
    ],
)
def test_callbacks_to_internal_addresses_and_non_urls_are_refused(service, url: str) -> None:  # type: ignore[no-untyped-def]
    _components, client = service
    response = client.post(
        "/api/submissions", json={"problem_id": "embedding-layer", "source": EMBEDDING.reference, "callback_url": url}
    )
    assert response.status_code == 422, response.text
    assert response.json()["detail"].startswith("callback_url: ")
