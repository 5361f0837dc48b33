"""The service answers for its own names only: a request whose Host (or, from a trusted proxy, whose
X-Forwarded-Host) names another host is answered 400 before any route, page or body is touched.

Why: a page on another site can make its own name resolve to the service's address (DNS rebinding); the
browser then sends the service requests that are, to it, same-origin (`Sec-Fetch-Site: same-origin`, an
Origin naming the attacker's host), which grader/api/edge.py cannot tell from the service's own pages when
no GRADER_PUBLIC_URL is set. What the browser cannot change is the name in Host: the attacker's.

Answered: GRADER_PUBLIC_URL's host, `localhost`, the compose stack's own service names (SERVICE_NAMES),
the names in GRADER_ALLOWED_HOSTS, and any IP address (a rebinding page needs a name of its own; a client
that reaches the service by its address names no other site). GRADER_ALLOWED_HOSTS=`*` answers every Host
(for a proxy in front that checks Host itself). A request without a Host header (HTTP/1.0) passes.

A pure ASGI middleware, inside the one that believes trusted proxies (grader/api/forwarded.py).
"""

from __future__ import annotations

import ipaddress
import json

from starlette.types import ASGIApp, Receive, Scope, Send

from grader.api.forwarded import FORWARDED_ORIGIN
from grader.api.limits import json_answer

# docker-compose.yml's services that call the API by name (and its health check's loopback).
SERVICE_NAMES = frozenset({"localhost", "api", "proxy"})
MAX_HOST_CHARS = 300  # a host name is at most 253 characters, a port 6 more; longer is no host
SHOWN_CHARS = 100


def host_name(value: str) -> str | None:
    """The host of a Host header's value (`name[:port]`, `[v6]:port`), lowercased, without a trailing dot;
    None when it is none."""
    value = value.strip()
    if not value or len(value) > MAX_HOST_CHARS:
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0 or (value[end + 1 :] and not value[end + 1 :].startswith(":")):
            return None
        return value[1:end].lower()
    host, _, port = value.partition(":")
    if port and not port.isdigit():
        return None
    return host.lower().rstrip(".") or None


def is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


class HostMiddleware:
    """400 for a Host (or trusted X-Forwarded-Host) that is none of the service's names: on every route."""

    def __init__(self, app: ASGIApp, names: frozenset[str] | None) -> None:
        self.app = app
        self.names = None if names is None else frozenset(SERVICE_NAMES | names)  # None: every host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.names is None or scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "http":
            await json_answer(send, 400, refusal)
        else:
            await send({"type": "websocket.close", "code": 1008, "reason": refusal[:120]})

    def refusal(self, scope: Scope) -> str | None:
        """Why the request is not answered, or None."""
        hosts = [value.decode("latin-1") for key, value in scope["headers"] if key.lower() == b"host"]
        if len(hosts) > 1:
            return "more than one Host header"
        _, forwarded = scope.get(FORWARDED_ORIGIN) or (None, None)
        for value in [*hosts, *([forwarded] if forwarded else [])]:
            host = host_name(value)
            if host is None or not (is_address(host) or host in self.names):  # type: ignore[operator]
                shown = json.dumps(value[:SHOWN_CHARS])
                return (
                    f"this service does not answer for the host {shown}: it answers for its own names only "
                    "(GRADER_PUBLIC_URL's host, localhost, an IP address, and GRADER_ALLOWED_HOSTS)"
                )
        return None
