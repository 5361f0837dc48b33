"""One webhook attempt against real receivers on loopback: a whole deadline, however the receiver
trickles; the answer read within bounds; no redirect followed; the connection made to the address
checked, with the URL's name kept for Host, SNI and the certificate; signed both ways.

Names resolve through a fake getaddrinfo (tests/webhook_dns.py); everything else is real sockets.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.config import Settings
from grader.submissions.callbacks import Callback, Lookups
from grader.submissions.webhook_http import AttemptTimeout, post
from grader.submissions.webhooks import MAX_ERROR, attempt, check_callback, standard_signature
from tests.receivers import Receiver, Trickler
from tests.webhook_dns import FakeDNS

SECRET = "webhook-test-secret-0123456789"
DEADLINE_S = 0.8
# Well past the deadline, yet within what a loaded machine needs to notice it.
SLACK_S = 1.5
BODY = b'{"id":"abc","status":"accepted"}'


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        data_dir=tmp_path,
        webhook_secret=SECRET,
        webhook_timeout_s=DEADLINE_S,
        webhook_allowed_hosts="127.0.0.1,hooks.test,other.test",
    )


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> FakeDNS:
    return FakeDNS(monkeypatch, {"hooks.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})


@pytest.fixture
def tls() -> ssl.SSLContext:
    return ssl.create_default_context()


def _attempt(url: str, settings: Settings, tls: ssl.SSLContext, body: bytes = BODY) -> tuple[str, str | None, float]:
    started = time.monotonic()
    result = attempt(url, "msg_test", body, settings.webhooks, Lookups(4), tls)
    return result.outcome, result.error, time.monotonic() - started


@pytest.fixture
def trickler() -> Iterator[list[Trickler]]:
    made: list[Trickler] = []
    yield made
    for server in made:
        server.close()


# -- the deadline: whatever the receiver trickles, the attempt ends at it --------------------------
# Each answer comes a byte every 0.1 s: every read waits far less than the deadline, so a timeout per
# read (what http.client has) would never fire.
TRICKLED = {
    "the status line": (b"", b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
    "the headers": (b"HTTP/1.1 200 OK\r\n", b"X-Slow: " + b"a" * 200 + b"\r\nContent-Length: 0\r\n\r\n"),
    "the body": (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", b"x" * 100),
    "a body that never ends": (b"HTTP/1.1 200 OK\r\n\r\n", b""),  # no length: until the receiver closes
    "nothing at all": (b"", b""),
}


@pytest.mark.parametrize("part", sorted(TRICKLED))
def test_a_trickling_receiver_is_cut_at_the_deadline(
    part: str, settings: Settings, tls: ssl.SSLContext, trickler: list[Trickler]
) -> None:
    prefix, trickled = TRICKLED[part]
    server = Trickler(trickled, interval=0.1, prefix=prefix)
    trickler.append(server)
    outcome, error, elapsed = _attempt(server.url(), settings, tls)
    assert outcome == "timeout", error
    assert DEADLINE_S * 0.9 <= elapsed < DEADLINE_S + SLACK_S
    assert error is not None and "deadline" in error
    deadline = time.monotonic() + 5
    while not server.cut and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.cut and server.cut[0] - server.accepted[0] < DEADLINE_S + SLACK_S, "the connection was closed"


def test_a_tls_handshake_that_never_ends_is_cut_at_the_deadline(
    settings: Settings, tls: ssl.SSLContext, trickler: list[Trickler]
) -> None:
    server = Trickler(b"\x16\x03\x01", interval=0.1, read_request=False)  # the start of a record, no more
    trickler.append(server)
    outcome, error, elapsed = _attempt(server.url(scheme="https"), settings, tls)
    assert outcome == "timeout", error
    assert elapsed < DEADLINE_S + SLACK_S


def test_a_receiver_that_does_not_read_the_request_is_cut_at_the_deadline(
    settings: Settings, tls: ssl.SSLContext, trickler: list[Trickler]
) -> None:
    server = Trickler(b"", interval=0.1, read_request=False)
    trickler.append(server)
    body = b"x" * (64 * 1024 * 1024)  # more than the socket buffers hold: sending must wait for the reader
    outcome, error, elapsed = _attempt(server.url(), settings, tls, body=body)
    assert outcome == "timeout", error
    assert elapsed < DEADLINE_S + SLACK_S


def test_a_lookup_that_never_answers_is_cut_at_the_deadline(
    monkeypatch: pytest.MonkeyPatch, settings: Settings, tls: ssl.SSLContext
) -> None:
    release = threading.Event()

    def hang() -> list[str]:
        release.wait(10)
        return ["127.0.0.1"]

    FakeDNS(monkeypatch, {"slow.test": hang})
    lookups = Lookups(2)
    try:
        started = time.monotonic()
        result = attempt("http://slow.test/", "msg_test", BODY, settings.webhooks, lookups, tls)
        assert result.outcome == "timeout" and time.monotonic() - started < DEADLINE_S + SLACK_S
        attempt("http://slow.test/", "msg_test", BODY, settings.webhooks, lookups, tls)
        # Both lookups still hang, each holding its slot: a third waits for none and creates no thread.
        threads = threading.active_count()
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="too many host lookups"):
            lookups.addresses("slow.test", 80, time.monotonic() + 0.2)
        assert time.monotonic() - started < 0.2 + SLACK_S and threading.active_count() == threads
    finally:
        release.set()


# -- the answer: bounded, and a redirect is an answer ----------------------------------------------
def test_a_huge_answer_is_read_only_up_to_its_bound(settings: Settings, tls: ssl.SSLContext) -> None:
    sent = [0]
    listener = socket.create_server(("127.0.0.1", 0))

    def flood() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n")
            chunk = b"x" * 65536
            try:
                while sent[0] < 1024**3:
                    connection.sendall(chunk)
                    sent[0] += len(chunk)
            except OSError:
                pass

    thread = threading.Thread(target=flood, daemon=True)
    thread.start()
    try:
        outcome, error, _ = _attempt(f"http://127.0.0.1:{listener.getsockname()[1]}/", settings, tls)
        thread.join(5)
        assert outcome == "delivered", error
        assert sent[0] < 64 * 1024 * 1024, "the rest of the answer was not read"
    finally:
        listener.close()


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n",  # headers past h11's 16 KiB
        b"\x00\x1b[31mNOT HTTP " * 20_000 + b"\r\n\r\n",  # control characters, 200 KB of them
    ],
)
def test_what_a_receiver_sends_is_kept_only_within_bounds(
    answer: bytes, settings: Settings, tls: ssl.SSLContext, trickler: list[Trickler]
) -> None:
    server = Trickler(b"", prefix=answer)
    trickler.append(server)
    outcome, error, _ = _attempt(server.url(), settings, tls)
    assert outcome == "error"
    assert error is not None and len(error) <= MAX_ERROR and error.isprintable()


def test_a_redirect_is_a_failed_attempt_and_is_not_followed(settings: Settings, tls: ssl.SSLContext) -> None:
    target = Receiver()
    redirecting = Receiver(statuses=[302], headers={"Location": target.url()})
    try:
        outcome, error, _ = _attempt(redirecting.url(), settings, tls)
        assert outcome == "rejected" and error == "the receiver answered 302 (redirects are not followed)"
        assert len(redirecting.received) == 1 and target.received == []
    finally:
        target.close()
        redirecting.close()


# -- the connection goes where the check said, named as the URL names it ---------------------------
def test_the_address_checked_is_the_one_connected_to(settings: Settings, tls: ssl.SSLContext, dns: FakeDNS) -> None:
    receiver = Receiver()
    try:
        outcome, error, _ = _attempt(receiver.url("hooks.test"), settings, tls)
        assert outcome == "delivered", error
        assert dns.lookups == ["hooks.test"], "one lookup: the check's; none by the HTTP client"
        headers, body, _ = receiver.received[0]
        assert headers["Host"] == f"hooks.test:{receiver.port}" and body == BODY
    finally:
        receiver.close()


def test_a_name_that_now_resolves_inward_is_refused_at_the_attempt(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tls: ssl.SSLContext
) -> None:
    receiver = Receiver()
    answers = iter([["93.184.215.14"], ["127.0.0.1"]])
    dns = FakeDNS(monkeypatch, {"rebind.test": lambda: next(answers)})
    settings = Settings(data_dir=tmp_path, webhook_secret=SECRET, webhook_timeout_s=DEADLINE_S)
    try:
        url = receiver.url("rebind.test")
        assert check_callback(url, settings.webhooks) == url  # at intake, the name was global
        outcome, error, _ = _attempt(url, settings, tls)
        assert outcome == "refused" and error is not None and "rebind.test resolves to 127.0.0.1" in error
        assert receiver.received == [] and dns.lookups == ["rebind.test", "rebind.test"]
    finally:
        receiver.close()


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.fail("openssl is not installed: no certificate for the TLS test")
    where = tmp_path_factory.mktemp("tls")
    cert, key = where / "cert.pem", where / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=hooks.test"]
        + ["-addext", "subjectAltName=DNS:hooks.test", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    return cert, key


def test_https_keeps_the_host_name_for_sni_and_the_certificate(
    settings: Settings, dns: FakeDNS, certificate: tuple[Path, Path]
) -> None:
    cert, key = certificate
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(cert, key)
    receiver = Receiver(tls=server_tls)
    client_tls = ssl.create_default_context(cafile=str(cert))
    try:
        outcome, error, _ = _attempt(receiver.url("hooks.test", scheme="https"), settings, client_tls)
        assert outcome == "delivered", error
        assert receiver.server_names == ["hooks.test"] and dns.lookups == ["hooks.test"]
        assert receiver.received[0][0]["Host"] == f"hooks.test:{receiver.port}"
        # The same address under another name: its certificate does not match, so nothing is sent.
        outcome, error, _ = _attempt(receiver.url("other.test", scheme="https"), settings, client_tls)
        assert outcome == "error" and error is not None and "certificate" in error.lower()
        assert len(receiver.received) == 1
    finally:
        receiver.close()


def test_post_raises_attempt_timeout_past_the_deadline() -> None:
    callback = Callback(scheme="http", host="h", port=9, target="/", host_header="h", addresses=("127.0.0.1",))
    with pytest.raises(AttemptTimeout):
        post(callback, [], b"", time.monotonic() - 1, ssl.create_default_context())


# -- signatures --------------------------------------------------------------------------------------
def test_the_standard_webhooks_signature_matches_the_specifications_example() -> None:
    key = base64.b64decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
    signature = standard_signature(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, b'{"test": 2432232314}')
    assert signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_an_attempt_is_signed_both_ways(settings: Settings, tls: ssl.SSLContext) -> None:
    receiver = Receiver()
    try:
        before = int(time.time())
        outcome, error, _ = _attempt(receiver.url(), settings, tls)
        assert outcome == "delivered", error
        headers, body, _ = receiver.received[0]
        assert headers["webhook-id"] == "msg_test"
        timestamp = int(headers["webhook-timestamp"])
        assert before <= timestamp <= int(time.time())
        signed = f"msg_test.{timestamp}.".encode() + body
        expected = base64.b64encode(hmac.new(SECRET.encode(), signed, hashlib.sha256).digest()).decode()
        assert headers["webhook-signature"] == f"v1,{expected}"
        legacy = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        assert headers["X-Torchjudge-Signature"] == legacy
        assert headers["Content-Type"] == "application/json"
    finally:
        receiver.close()
