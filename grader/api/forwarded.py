"""The client's address behind a reverse proxy, believed only from the proxies GRADER_TRUSTED_PROXIES names.

A pure ASGI middleware. When the peer of a connection is a trusted proxy, the client is the last address
of X-Forwarded-For (what that proxy saw: the front door of docker-compose.yml sets the header to its peer,
replacing whatever the client sent), else X-Real-IP; the request's `client` becomes that address, so that
per-client limits (anonymous submitters' rate limit, runs) count real clients, not the proxy. From any
other peer both headers are ignored: a client cannot choose its own address. uvicorn's own proxy
headers are off (grader/api/server.py): it would trust 127.0.0.1 without being told.

From a trusted proxy, X-Forwarded-Proto and X-Forwarded-Host (the last entry of each) are also kept, in
the scope under FORWARDED_ORIGIN, as the scheme and host the client used: grader/api/edge.py compares a
browser's Origin with them.

Entries are IP addresses, networks (CIDR) or host names; a name is looked up again every NAME_TTL_S (in a
compose stack the proxy's address is known by its service name only, and changes when it is recreated).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import time

from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger(__name__)

NAME_TTL_S = 30.0
# The scope key of (scheme, host) as a trusted proxy names them, each None where it names none.
FORWARDED_ORIGIN = "torchjudge.forwarded_origin"
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(text.strip().split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


class TrustedProxies:
    """Which peers are trusted proxies: fixed networks, and host names resolved (and cached) on demand."""

    def __init__(self, entries: list[str]) -> None:
        self.networks: list[Network] = []
        self.names: list[str] = []
        for entry in entries:
            try:
                self.networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                self.names.append(entry.lower())
        self._resolved: list[Network] = []
        self._resolved_at = float("-inf")

    def __bool__(self) -> bool:
        return bool(self.networks or self.names)

    async def trusts(self, peer: str) -> bool:
        address = _address(peer)
        if address is None:
            return False
        if any(address in network for network in self.networks):
            return True
        if not self.names:
            return False
        if time.monotonic() - self._resolved_at > NAME_TTL_S or not any(address in n for n in self._resolved):
            await self._resolve()
        return any(address in network for network in self._resolved)

    async def _resolve(self) -> None:
        if time.monotonic() - self._resolved_at < 1.0:  # a peer that is not the proxy cannot force lookups
            return
        self._resolved_at = time.monotonic()
        loop = asyncio.get_running_loop()
        resolved: list[Network] = []
        for name in self.names:
            try:
                infos = await asyncio.wait_for(loop.getaddrinfo(name, None, type=socket.SOCK_STREAM), 5.0)
            except (OSError, TimeoutError) as exc:  # not up yet: its requests are taken as its own meanwhile
                log.debug("trusted proxy %s does not resolve: %s", name, exc)
                continue
            for info in infos:
                address = _address(str(info[4][0]))
                if address is not None:
                    resolved.append(ipaddress.ip_network(address))
        self._resolved = resolved


def forwarded_client(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The client a trusted proxy names: the last valid X-Forwarded-For entry, else X-Real-IP."""
    forwarded = [value for name, value in headers if name.lower() == b"x-forwarded-for"]
    if forwarded:
        last = forwarded[-1].decode("latin-1").split(",")[-1]
        address = _address(last)
        return str(address) if address is not None else None
    real = [value for name, value in headers if name.lower() == b"x-real-ip"]
    if real:
        address = _address(real[-1].decode("latin-1"))
        return str(address) if address is not None else None
    return None


def _last(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    values = [value for key, value in headers if key.lower() == name]
    last = values[-1].decode("latin-1").split(",")[-1].strip() if values else ""
    return last or None


def forwarded_origin(headers: list[tuple[bytes, bytes]]) -> tuple[str | None, str | None]:
    """The scheme (http or https) and host a trusted proxy names, from X-Forwarded-Proto and -Host."""
    proto = (_last(headers, b"x-forwarded-proto") or "").lower()
    return (proto if proto in ("http", "https") else None), _last(headers, b"x-forwarded-host")


class ForwardedMiddleware:
    def __init__(self, app: ASGIApp, proxies: list[str]) -> None:
        self.app = app
        self.proxies = TrustedProxies(proxies)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = scope.get("client")
        if self.proxies and scope["type"] in ("http", "websocket") and client and await self.proxies.trusts(client[0]):
            address = forwarded_client(scope["headers"])
            scope = {**scope, FORWARDED_ORIGIN: forwarded_origin(scope["headers"])}
            if address is not None:
                scope["client"] = (address, 0)
        await self.app(scope, receive, send)
