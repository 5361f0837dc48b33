"""Which IP addresses a webhook may connect to: global unicast only.

The tables are written out here rather than taken from `ipaddress`'s `is_global`: on the Python this
service runs, `is_global` calls 6to4 (2002::/16), IPv4-compatible (::a.b.c.d), NAT64 and multicast
addresses global, whatever they embed. An IPv6 address that carries an IPv4 address is judged by what
it carries where the operating system (or a NAT64 gateway) reaches that IPv4 address (IPv4-mapped,
NAT64's well-known prefix); every other such form is a tunnel or a deprecated spelling, refused
outright, and its message names the IPv4 address inside when that one is internal too.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

# IANA's IPv4 special-purpose registry, and the ranges that are no unicast at all.
_IPV4: list[tuple[IPv4Network, str]] = [
    (IPv4Network(network), kind)
    for network, kind in [
        ("0.0.0.0/8", "'this network'"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "shared (carrier-grade NAT)"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "reserved for IETF protocols"),
        ("192.0.2.0/24", "documentation"),
        ("192.31.196.0/24", "AS112"),
        ("192.52.193.0/24", "AMT"),
        ("192.88.99.0/24", "a 6to4 relay (deprecated)"),
        ("192.168.0.0/16", "private"),
        ("192.175.48.0/24", "AS112"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),  # 255.255.255.255, the broadcast address, among them
    ]
]

# IPv6 forms that carry an IPv4 address in their last 32 bits, through which that address is reached.
_REACHES_IPV4 = [
    (IPv6Network("::ffff:0:0/96"), "IPv4-mapped"),
    (IPv6Network("64:ff9b::/96"), "NAT64"),
]


def _last_32(ip: IPv6Address) -> list[IPv4Address]:
    return [IPv4Address(int(ip) & 0xFFFFFFFF)]


def _nat64_48(ip: IPv6Address) -> list[IPv4Address]:
    """RFC 6052's /48 layout: the IPv4 address in bits 48-63 and 72-87 (bits 64-71 are zero)."""
    value = int(ip)
    return [IPv4Address(((value >> 64) & 0xFFFF) << 16 | (value >> 40) & 0xFFFF)]


def _sixtofour(ip: IPv6Address) -> list[IPv4Address]:
    return [ip.sixtofour] if ip.sixtofour is not None else []


def _teredo(ip: IPv6Address) -> list[IPv4Address]:
    return list(ip.teredo) if ip.teredo is not None else []  # the server, and the client de-obfuscated


# Forms that embed an IPv4 address but are no way to reach it from here: refused whatever they carry.
_EMBEDS_IPV4: list[tuple[IPv6Network, str, Callable[[IPv6Address], list[IPv4Address]]]] = [
    (IPv6Network("::/96"), "IPv4-compatible (deprecated)", _last_32),
    (IPv6Network("::ffff:0:0:0/96"), "IPv4-translated", _last_32),
    (IPv6Network("64:ff9b:1::/48"), "local-use NAT64", _nat64_48),
    (IPv6Network("2001::/32"), "Teredo", _teredo),
    (IPv6Network("2002::/16"), "6to4", _sixtofour),
]
# Global unicast is 2000::/3; within it, what IANA's IPv6 special-purpose registry sets aside.
_GLOBAL_UNICAST = IPv6Network("2000::/3")
_IPV6: list[tuple[IPv6Network, str]] = [
    (IPv6Network(network), kind)
    for network, kind in [
        ("2001::/23", "reserved for IETF protocols"),
        ("2001:db8::/32", "documentation"),
        ("3fff::/20", "documentation"),
    ]
]
_IPV6_OUTSIDE = [
    (IPv6Network(network), kind)
    for network, kind in [
        ("100::/64", "discard-only"),
        ("fc00::/7", "unique-local"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local (deprecated)"),
        ("ff00::/8", "multicast"),
    ]
]


def _ipv4_refusal(ip: IPv4Address) -> str | None:
    for network, kind in _IPV4:
        if ip in network:
            return f"{ip} is {kind}"
    return None if ip.is_global else f"{ip} is not global"


def _embedded_refusal(ip: IPv6Address, form: str, inside: Callable[[IPv6Address], list[IPv4Address]]) -> str:
    internal = [str(inner) for inner in inside(ip) if _ipv4_refusal(inner) is not None]
    named = f", with the internal {' and '.join(dict.fromkeys(internal))} inside" if internal else ""
    return f"{ip} is {form}{named}"


def _ipv6_refusal(ip: IPv6Address) -> str | None:
    if int(ip) <= 1:  # inside ::/96 below, but no IPv4-compatible address
        return f"{ip} is {'loopback' if int(ip) else 'unspecified'}"
    for network, form in _REACHES_IPV4:
        if ip in network:
            inner = _ipv4_refusal(IPv4Address(int(ip) & 0xFFFFFFFF))
            return f"{ip} is {form}: {inner}" if inner else None
    for network, form, inside in _EMBEDS_IPV4:
        if ip in network:
            return _embedded_refusal(ip, form, inside)
    if ip not in _GLOBAL_UNICAST:
        kind = next((kind for network, kind in _IPV6_OUTSIDE if ip in network), "outside global unicast")
        return f"{ip} is {kind}"
    for network, kind in _IPV6:
        if ip in network:
            return f"{ip} is {kind}"
    return None if ip.is_global else f"{ip} is not global"


def refusal(address: str | IPv4Address | IPv6Address) -> str | None:
    """Why a webhook may not connect to this address ("127.0.0.1 is loopback"); None for global unicast.
    A zone id (fe80::1%eth0) is refused: it only ever names a link."""
    if isinstance(address, str):
        if "%" in address:
            return f"{address} has a zone id (a link-local scope)"
        try:
            address = ipaddress.ip_address(address)
        except ValueError:
            return f"{address!r} is not an IP address"
    if isinstance(address, IPv6Address):
        if address.scope_id:
            return f"{address} has a zone id (a link-local scope)"
        return _ipv6_refusal(address)
    return _ipv4_refusal(address)
