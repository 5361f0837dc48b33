"""A fake resolver for webhook tests, at the one edge that needs it (socket.getaddrinfo), and the
callback URLs that every check must refuse, with the names they use.

Names map to lists of addresses, or to a callable that gives them (a name whose answer changes between
lookups, or one that never answers); every lookup of them is recorded. Unknown names do not resolve, or,
with `fallback`, go to the real resolver (for a whole service that may look other names up).
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest

Answer = list[str] | Callable[[], list[str]]


class FakeDNS:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, names: dict[str, Answer], fallback: bool = False) -> None:
        self.names = names
        self.lookups: list[str] = []
        self._real = socket.getaddrinfo if fallback else None
        monkeypatch.setattr(socket, "getaddrinfo", self.getaddrinfo)

    def getaddrinfo(self, host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0):  # noqa: A002, ANN201
        name = host.decode() if isinstance(host, bytes) else str(host)
        answer = self.names.get(name)
        if answer is None and self._real is not None:
            return self._real(host, port, family, type, proto, flags)
        self.lookups.append(name)
        if answer is None:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        addresses = answer() if callable(answer) else answer
        return [
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, int(port or 0), 0, 0))
            if ":" in address
            else (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port or 0)))
            for address in addresses
        ]


# What the names below resolve to, as the tests' fake resolver answers.
NAMES: dict[str, Answer] = {
    "hooks.example.org": ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
    "internal.example.org": ["10.1.2.3"],
    "metadata.example.org": ["169.254.169.254"],
    "half.example.org": ["93.184.215.14", "127.0.0.1"],  # one bad address is enough
    "mapped.example.org": ["::ffff:127.0.0.1"],
    "sixtofour.example.org": ["2002:a9fe:a9fe::1"],
    "nat64.example.org": ["64:ff9b::7f00:1"],
    "teredo.example.org": ["2001:0:4136:e378:8000:63bf:80ff:fffe"],
    "ula.example.org": ["fd00::1"],
    "cgnat.example.org": ["100.64.1.1"],
    "nothing.example.org": [],
    "hooks.internal": ["10.9.9.9"],
}

NUMERIC = "four decimal numbers"
NOT_GLOBAL = "not a global unicast address"
# Each URL, and what its refusal must say: refused for the right reason, not by accident.
REFUSED_URLS = [
    # IPv4, spelled every way a resolver accepts
    ("http://127.0.0.1/", "127.0.0.1 is loopback"),
    ("http://2130706433/", NUMERIC),  # decimal
    ("http://0x7f000001/", NUMERIC),  # hex
    ("http://0x7f.0x0.0x0.0x1/", NUMERIC),
    ("http://0177.0.0.1/", NUMERIC),  # octal
    ("http://0177.0000.0000.0001/", NUMERIC),
    ("http://127.1/", NUMERIC),  # short
    ("http://127.0.1/", NUMERIC),
    ("http://0/", NUMERIC),
    ("http://0.0.0.0/", "0.0.0.0 is 'this network'"),
    ("http://127.0.0.1./", "127.0.0.1 is loopback"),  # trailing dot
    ("http://%31%32%37.0.0.1/", "not a valid host name"),  # percent-encoded
    ("http://127.0.0.1%2e/", "not a valid host name"),
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://100.64.0.1/", "carrier-grade NAT"),
    ("http://198.18.0.1/", "benchmarking"),
    ("http://224.0.0.1/", "multicast"),
    ("http://255.255.255.255/", "reserved"),
    # IPv6 literals
    ("http://[::1]/", "::1 is loopback"),
    ("http://[::]/", "unspecified"),
    ("http://[0:0:0:0:0:0:0:1]/", "::1 is loopback"),
    ("http://[::ffff:127.0.0.1]/", "IPv4-mapped: 127.0.0.1 is loopback"),
    ("http://[::ffff:7f00:1]/", "IPv4-mapped: 127.0.0.1 is loopback"),
    ("http://[::127.0.0.1]/", "IPv4-compatible"),
    ("http://[::ffff:0:127.0.0.1]/", "IPv4-translated"),
    ("http://[2002:7f00:1::]/", "6to4, with the internal 127.0.0.1"),
    ("http://[64:ff9b::127.0.0.1]/", "NAT64: 127.0.0.1 is loopback"),
    ("http://[64:ff9b:1::1]/", "local-use NAT64"),
    ("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "Teredo, with the internal 127.0.0.1"),
    ("http://[fe80::1%25eth0]/", "zone id"),
    ("http://[fe80::1]/", "link-local"),
    ("http://[fd00::1]/", "unique-local"),
    ("http://[ff02::1]/", "multicast"),
    ("http://[v1.fe80::1]/", "not an IPv6 address"),  # IPvFuture
    # names
    ("http://localhost/", "localhost is loopback"),
    ("http://LOCALHOST/", "localhost is loopback"),  # uppercase
    ("http://localhost./", "localhost is loopback"),
    ("http://anything.localhost/", "anything.localhost is loopback"),
    ("http://a.b.LocalHost./", "a.b.localhost is loopback"),
    ("http://internal.example.org/", "internal.example.org resolves to 10.1.2.3 is private"),
    ("http://INTERNAL.Example.ORG./hook", "internal.example.org resolves to 10.1.2.3 is private"),
    ("http://metadata.example.org/", "169.254.169.254 is link-local"),
    ("http://half.example.org/", "127.0.0.1 is loopback"),
    ("http://mapped.example.org/", "IPv4-mapped: 127.0.0.1 is loopback"),
    ("http://sixtofour.example.org/", "6to4, with the internal 169.254.169.254"),
    ("http://nat64.example.org/", "NAT64: 127.0.0.1 is loopback"),
    ("http://teredo.example.org/", "Teredo"),
    ("http://ula.example.org/", "unique-local"),
    ("http://cgnat.example.org/", "carrier-grade NAT"),
    ("http://nothing.example.org/", "has no address"),
    ("http://unknown.example.org/", "does not resolve"),
    # userinfo, schemes and other tricks
    ("http://hooks.example.org@127.0.0.1/", "credentials"),
    ("http://user:pass@hooks.example.org/", "credentials"),
    ("http://hooks.example.org:80@internal.example.org/", "credentials"),
    ("http://127.0.0.1\\@hooks.example.org/", "not a URL"),
    ("http://127.0.0.1\t/", "not a URL"),
    ("http://hooks.example.org /", "not a URL"),
    ("http://hooks.\u00e9xample.org/", "not a URL"),
    ("ftp://hooks.example.org/", "http:// or https://"),
    ("file:///etc/passwd", "http:// or https://"),
    ("gopher://hooks.example.org/", "http:// or https://"),
    ("javascript:alert(1)", "http:// or https://"),
    ("//hooks.example.org/", "http:// or https://"),
    ("hooks.example.org/hook", "http:// or https://"),
    ("http:///hook", "http:// or https://"),
    ("http://:80/", "http:// or https://"),
    ("http://hooks.example.org:0/", "port"),
    ("http://hooks.example.org:65536/", "not a URL"),
    ("http://hooks.example.org:/", "port"),
    ("http://[::1/", "not a URL"),
    ("http://" + "a" * 64 + ".example.org/", "not a valid host name"),
    ("https://hooks.example.org/" + "a" * 2048, "longer than 2048"),
]
