"""Webhooks cannot be held or pointed inward, through the real service (real sandboxes, a real database)
and real receivers on this machine's loopback (allowed by GRADER_WEBHOOK_ALLOWED_HOSTS, since loopback
is otherwise exactly what the service refuses to call). Names that must resolve somewhere else go
through a fake getaddrinfo (tests/webhook_dns.py), the one edge faked.

Before: deliveries ran one at a time, each read of an answer with its own timeout, so a receiver that
trickled a byte a second held every other submission's webhook for as long as it liked; IPv6 forms
with an internal IPv4 address inside, and numeric spellings, passed the check; a retry's body
differed from the first attempt's, and no header identified the delivery.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from grader.components import Components, build
from tests.conftest import make_settings, wait_until_ready
from tests.receivers import Receiver, Trickler
from tests.security.attacks import CORRECT
from tests.webhook_dns import NAMES, REFUSED_URLS, FakeDNS

pytestmark = pytest.mark.docker

SECRET = "webhook-security-secret-0123456789"
TIMEOUT_S = 3.0
# What a loaded machine may add to a delivery that is due now (a claim, a thread, a POST on loopback).
PROMPT_S = 2.0


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Components, TestClient]]:
    from grader.app import create_app

    settings = make_settings(
        tmp_path_factory.mktemp("webhooks"),
        webhook_secret=SECRET,
        webhook_allowed_hosts="127.0.0.1",
        webhook_timeout_s=TIMEOUT_S,
        webhook_retry_s=120,
    )
    components = build(settings)
    components.start()
    try:
        wait_until_ready(components)
        with TestClient(create_app(settings, components=components)) as client:
            yield components, client
    finally:
        components.stop()


def _submit(client: TestClient, callback: str) -> dict:
    response = client.post(
        "/api/submissions?wait=60", json={"problem_id": "embedding-layer", "source": CORRECT, "callback_url": callback}
    )
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _until(predicate: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _counter(client: TestClient, name: str, label: str) -> float:
    text = client.get("/metrics").text
    found = re.search(rf"^{name}_total\{{[a-z]+=\"{label}\"\}} ([0-9.e+]+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def _webhook(client: TestClient, submission_id: str) -> dict:
    return client.get(f"/api/submissions/{submission_id}").json()["webhook"]  # type: ignore[no-any-return]


def test_a_trickling_receiver_holds_no_one_elses_webhook(service) -> None:  # type: ignore[no-untyped-def]
    _components, client = service
    timeouts = _counter(client, "torchjudge_webhook_attempts", "timeout")
    # A byte of its answer every second, for 40 s: each read comes well within any timeout per read.
    trickler = Trickler(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", interval=1.0)
    receiver = Receiver()
    try:
        held = _submit(client, trickler.url())
        _until(lambda: trickler.accepted, 20, "the trickler's connection")
        victim = _submit(client, receiver.url())
        verdict_at = time.monotonic()
        _until(lambda: receiver.received, 30, "the other receiver's webhook")
        assert receiver.received[0][2] - verdict_at < PROMPT_S, "the other webhook waited for the trickler"
        assert json.loads(receiver.received[0][1])["id"] == victim["id"]

        # The trickler's attempt is cut at its deadline (seen within the trickler's 1 s between bytes).
        _until(lambda: trickler.cut, TIMEOUT_S + 10, "the trickler's connection to be cut")
        held_for = trickler.cut[0] - trickler.accepted[0]
        assert TIMEOUT_S * 0.9 <= held_for < TIMEOUT_S + 1.0 + PROMPT_S, held_for
        _until(lambda: _webhook(client, held["id"])["attempts"] >= 1, 10, "the attempt to be recorded")
        webhook = _webhook(client, held["id"])
        assert webhook["status"] == "pending" and "deadline" in webhook["error"], webhook
        assert _counter(client, "torchjudge_webhook_attempts", "timeout") >= timeouts + 1
    finally:
        trickler.close()
        receiver.close()


def _verify_standard(headers: dict[str, str], body: bytes) -> bool:
    """Standard Webhooks' check, written from the specification: HMAC-SHA256 over "{id}.{timestamp}.{body}",
    base64, in one of the space-separated `v1,<signature>` entries."""
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = base64.b64encode(hmac.new(SECRET.encode(), signed, hashlib.sha256).digest()).decode()
    entries = headers["webhook-signature"].split(" ")
    return any(hmac.compare_digest(entry, f"v1,{expected}") for entry in entries)


def test_every_retry_sends_the_same_body_under_one_id_signed_both_ways(service) -> None:  # type: ignore[no-untyped-def]
    components, client = service
    delivered = _counter(client, "torchjudge_webhook_deliveries", "delivered")
    rejected = _counter(client, "torchjudge_webhook_attempts", "rejected")
    receiver = Receiver(statuses=[500, 200])
    try:
        verdict = _submit(client, receiver.url())
        _until(lambda: _webhook(client, verdict["id"])["status"] == "delivered", 30, "the second attempt")
        assert len(receiver.received) == 2
        (first, first_body, _), (second, second_body, _) = receiver.received
        assert first_body == second_body, "a retry sends the very bytes of the first attempt"
        assert first["webhook-id"] == second["webhook-id"] and first["webhook-id"].startswith("msg_")
        assert int(first["webhook-timestamp"]) <= int(second["webhook-timestamp"]) <= time.time()
        for headers, body in ((first, first_body), (second, second_body)):
            assert _verify_standard(headers, body)
            legacy = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
            assert headers["X-Torchjudge-Signature"] == legacy
        sent = json.loads(first_body)
        assert sent["id"] == verdict["id"] and sent["status"] == verdict["status"] and "webhook" not in sent
        assert _counter(client, "torchjudge_webhook_attempts", "rejected") >= rejected + 1
        assert _counter(client, "torchjudge_webhook_deliveries", "delivered") >= delivered + 1
        from grader.storage.db import WebhookMessage

        with components.db.session() as session:  # a delivery that ended keeps no copy of its body
            assert (
                session.scalars(select(WebhookMessage).where(WebhookMessage.submission_id == verdict["id"])).all() == []
            )
    finally:
        receiver.close()


def test_a_name_that_resolves_inward_at_delivery_is_refused(service, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    _components, client = service
    refused = _counter(client, "torchjudge_webhook_attempts", "refused")
    receiver = Receiver()
    answers = [["93.184.215.14"]]  # global while the submission is made; loopback from then on
    dns = FakeDNS(monkeypatch, {"rebind.test": lambda: answers.pop() if answers else ["127.0.0.1"]}, fallback=True)
    try:
        verdict = _submit(client, receiver.url("rebind.test"))
        _until(lambda: _webhook(client, verdict["id"])["attempts"] >= 1, 20, "the attempt")
        webhook = _webhook(client, verdict["id"])
        assert "rebind.test resolves to 127.0.0.1 is loopback" in webhook["error"], webhook
        assert receiver.received == [] and len(dns.lookups) >= 2
        assert _counter(client, "torchjudge_webhook_attempts", "refused") >= refused + 1
    finally:
        receiver.close()


REFUSED_HERE_BY_NAME = {"http://127.0.0.1/", "http://127.0.0.1./"}


# All but those that this service allows (127.0.0.1, for the receivers above) or that its request schema
# refuses first (over 2048 characters).
INTAKE = [(url, why) for url, why in REFUSED_URLS if len(url) <= 2048 and url not in REFUSED_HERE_BY_NAME]


@pytest.mark.parametrize(("url", "reason"), INTAKE)
def test_the_service_refuses_every_inward_callback_at_intake(service, monkeypatch, url: str, reason: str) -> None:  # type: ignore[no-untyped-def]
    _components, client = service
    FakeDNS(monkeypatch, dict(NAMES), fallback=True)
    body = {"problem_id": "embedding-layer", "source": CORRECT, "callback_url": url}
    response = client.post("/api/submissions", json=body)
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert detail.startswith("callback_url: ") and reason in detail, detail
