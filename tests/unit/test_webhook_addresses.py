"""Where a webhook may point: global unicast only, whatever the spelling of the URL, the form of the
address (IPv4 inside IPv6 included) or what the host's name resolves to. Names resolve through a fake
getaddrinfo (tests/webhook_dns.py); the check itself is the real one, as intake and delivery call it."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.config import Settings
from grader.submissions.addresses import refusal
from grader.submissions.callbacks import check
from grader.submissions.submitters import Refused
from grader.submissions.webhooks import check_callback
from tests.webhook_dns import NAMES, REFUSED_URLS, FakeDNS

SECRET = "webhook-test-secret-0123456789"

INTERNAL_IPV4 = [
    "0.0.0.0",
    "0.1.2.3",  # 0.0.0.0/8: "this network", which Linux connects to as the local host
    "10.0.0.1",
    "100.64.0.1",  # shared address space (carrier-grade NAT)
    "100.127.255.254",
    "127.0.0.1",
    "127.255.255.254",
    "169.254.169.254",  # link-local: cloud metadata services
    "172.16.0.1",
    "172.31.255.255",
    "192.0.0.1",
    "192.0.0.9",
    "192.0.2.1",
    "192.88.99.1",
    "192.168.1.1",
    "198.18.0.1",  # benchmarking, 198.18.0.0/15
    "198.19.255.255",
    "198.51.100.7",
    "203.0.113.7",
    "224.0.0.1",  # multicast
    "239.255.255.250",
    "240.0.0.1",  # reserved
    "255.255.255.255",  # broadcast
]
INTERNAL_IPV6 = [
    "::",
    "::1",
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "::127.0.0.1",  # IPv4-compatible (deprecated)
    "::8.8.8.8",  # refused whatever it carries
    "::ffff:0:127.0.0.1",  # IPv4-translated
    "::ffff:0:8.8.8.8",
    "2002:7f00:1::",  # 6to4 of 127.0.0.1
    "2002:a00:1::1",  # 6to4 of 10.0.0.1
    "2002:808:808::1",  # 6to4 of a global address: still a tunnel
    "64:ff9b::127.0.0.1",  # NAT64 of loopback
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "64:ff9b:1::1",  # local-use NAT64
    "64:ff9b:1:7f00:0:100::",  # local-use NAT64, RFC 6052 /48 layout, of 127.0.0.1
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo: client 127.0.0.1 (obfuscated)
    "2001:0:7f00:1::",  # Teredo: server 127.0.0.1
    "2001:0:808:808:8000:63bf:f7f7:f7f7",  # Teredo of global addresses: still a tunnel
    "2001:db8::1",  # documentation
    "3fff::1",
    "2001:2::1",  # IETF protocol assignments (benchmarking)
    "100::1",  # discard-only
    "fc00::1",  # unique-local
    "fd12:3456:789a::1",
    "fe80::1",  # link-local
    "fec0::1",  # site-local
    "ff02::1",  # multicast
    "ff05::2",
    "4000::1",  # outside global unicast
]
GLOBAL = ["8.8.8.8", "1.1.1.1", "93.184.215.14", "2606:4700:4700::1111", "2001:4860:4860::8888"]
# How the OS reaches IPv4 hosts from IPv6 sockets, or through a DNS64/NAT64 gateway: judged by what they carry.
GLOBAL_EMBEDDED = ["::ffff:8.8.8.8", "64:ff9b::808:808"]


@pytest.mark.parametrize("address", INTERNAL_IPV4 + INTERNAL_IPV6)
def test_every_internal_form_of_an_address_is_refused(address: str) -> None:
    assert refusal(address) is not None


@pytest.mark.parametrize("address", GLOBAL + GLOBAL_EMBEDDED)
def test_global_unicast_is_accepted(address: str) -> None:
    assert refusal(address) is None


@pytest.mark.parametrize(
    ("address", "named"),
    [
        ("::ffff:127.0.0.1", "127.0.0.1"),
        ("2002:7f00:1::", "127.0.0.1"),
        ("64:ff9b::a9fe:a9fe", "169.254.169.254"),
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "127.0.0.1"),
        ("::ffff:0:10.1.2.3", "10.1.2.3"),
    ],
)
def test_the_message_names_the_ipv4_address_inside(address: str, named: str) -> None:
    assert named in (refusal(address) or "")


def test_a_zone_id_is_refused() -> None:
    assert refusal("fe80::1%eth0") is not None
    assert refusal("2606:4700:4700::1111%2") is not None


# -- the URL, as a submitter writes it ----------------------------------------------------------------
@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, webhook_secret=SECRET, webhook_timeout_s=2.0)


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> FakeDNS:
    return FakeDNS(monkeypatch, dict(NAMES))


@pytest.mark.parametrize(("url", "reason"), REFUSED_URLS)
def test_callbacks_to_anything_but_a_global_host_are_refused(
    url: str, reason: str, settings: Settings, dns: FakeDNS
) -> None:
    with pytest.raises(Refused) as refused:
        check_callback(url, settings.webhooks)
    assert refused.value.status == 422
    detail = refused.value.detail
    assert detail.startswith("callback_url: ") and reason in detail and len(detail) < 400, detail


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.org/torchjudge",
        "http://hooks.example.org:8080/a/b?c=d",
        "HTTPS://HOOKS.example.org./hook",
        "https://8.8.8.8/hook",
        "https://[2606:4700:4700::1111]:8443/hook",
        "http://[::ffff:8.8.8.8]/",
    ],
)
def test_global_callbacks_are_accepted(url: str, settings: Settings, dns: FakeDNS) -> None:
    assert check_callback(url, settings.webhooks) == url


def test_numeric_spellings_are_refused_before_any_lookup(settings: Settings, dns: FakeDNS) -> None:
    for url in ("http://2130706433/", "http://0x7f000001/", "http://0177.0.0.1/", "http://127.1/"):
        with pytest.raises(Refused, match="four decimal numbers"):
            check_callback(url, settings.webhooks)
    assert dns.lookups == []


def test_every_address_of_a_name_is_checked(settings: Settings, dns: FakeDNS) -> None:
    with pytest.raises(Refused, match=r"half\.example\.org resolves to 127\.0\.0\.1 is loopback"):
        check_callback("http://half.example.org/", settings.webhooks)
    callback = check("https://hooks.example.org/x", settings.webhooks)
    assert callback.addresses == ("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c")
    assert (callback.host, callback.port, callback.target, callback.host_header) == (
        "hooks.example.org",
        443,
        "/x",
        "hooks.example.org",
    )


def test_an_operator_may_allow_an_internal_host_by_name(tmp_path: Path, dns: FakeDNS) -> None:
    settings = Settings(data_dir=tmp_path, webhook_secret=SECRET, webhook_allowed_hosts=" Hooks.Internal. ,other")
    for url in ("http://hooks.internal:9000/hook", "http://HOOKS.INTERNAL./hook"):
        assert check(url, settings.webhooks).addresses == ("10.9.9.9",)
    with pytest.raises(Refused):  # allowing one name allows no other
        check("http://internal.example.org/", settings.webhooks)
    with pytest.raises(Refused):  # nor credentials, nor a spelling
        check("http://x@hooks.internal/", settings.webhooks)


def test_webhooks_off_refuses_every_callback(tmp_path: Path, dns: FakeDNS) -> None:
    with pytest.raises(Refused, match="webhooks are off"):
        check_callback("https://hooks.example.org/", Settings(data_dir=tmp_path).webhooks)


def test_a_whsec_secret_must_be_base64(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="whsec_"):
        Settings(data_dir=tmp_path, webhook_secret="whsec_not base64 at all!!")
    with pytest.raises(ValueError, match="whsec_"):
        Settings(data_dir=tmp_path, webhook_secret="whsec_c2hvcnQ=")  # 5 bytes
    key = Settings(data_dir=tmp_path, webhook_secret="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").webhooks.signing_key
    assert len(key) == 24
