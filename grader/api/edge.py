"""What a browser may do to the service: state-changing requests come from its own pages (or from an
origin on GRADER_CORS_ORIGINS), and carry the content type their route declares.

A pure ASGI middleware, run before the body is read. Safe methods (GET, HEAD, OPTIONS) pass untouched;
every other request is refused

- 403 when it is cross-site: `Sec-Fetch-Site: cross-site` or `same-site` from an origin not on the
  allow-list, or an `Origin` header that is neither the service's own origin nor on the allow-list
  (`Origin: null`, what a sandboxed page or a redirect sends, never matches);
- 415 when it has a body whose Content-Type is not its route's: JSON (`application/json`, parameters
  allowed) everywhere, YAML for problem uploads.

The service's own origin is GRADER_PUBLIC_URL's when that is set (then the Host header plays no part,
so a DNS-rebinding page, whose origin names the attacker's host, cannot pass for it); otherwise the
request's scheme and Host, or X-Forwarded-Proto / X-Forwarded-Host where a trusted proxy sent them
(grader/api/forwarded.py). Clients that send neither header (curl, the CLI, harnesses) are not browsers
and pass. The content type is the second lock: a cross-site form or a no-CORS fetch can only send
text/plain, urlencoded or multipart bodies, which no route accepts, even from a browser that sends no
Origin.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from grader.api.forwarded import FORWARDED_ORIGIN
from grader.api.limits import has_body, json_answer
from grader.origins import MAX_ORIGIN_CHARS, origin_of, parse_origin

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
JSON_TYPES = frozenset({"application/json"})
YAML_TYPES = frozenset({"application/yaml", "application/x-yaml", "text/yaml"})
# What a page can send to another origin without asking it first (no CORS preflight): refused on every
# route that does not declare it, as is a body with no Content-Type (what a no-CORS fetch of a Blob sends).
FORM_TYPES = frozenset({"text/plain", "application/x-www-form-urlencoded", "multipart/form-data"})
# Longer values are no origin or media type a client has reason to send; they are refused unparsed.
MAX_HEADER_CHARS = MAX_ORIGIN_CHARS
# What an answer repeats of a header the client sent.
SHOWN_CHARS = 100
# CORS for GRADER_CORS_ORIGINS: what their pages may send and read. No credentials: the API takes its
# keys and tokens from headers, never from cookies.
CORS_METHODS = ("GET", "POST", "PUT", "DELETE")
CORS_HEADERS = ("Authorization", "Content-Type", "X-API-Key", "X-Owner-Token", "Idempotency-Key", "Last-Event-ID")
CORS_EXPOSED = ("Location", "Retry-After", "Idempotent-Replayed")


class DeclaredBodies:
    """The media types each operation declares for its body, read from the app's OpenAPI document (what
    /docs shows): None for an operation that takes no body, and for a path outside the document (web pages,
    static files, or none at all: the router answers those)."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self._table: list[tuple[str, re.Pattern[str], frozenset[str] | None]] | None = None

    def __call__(self, scope: Scope) -> frozenset[str] | None:
        if self._table is None:
            self._table = self._build()
        method, path = scope["method"], scope["path"]
        return next((media for m, pattern, media in self._table if m == method and pattern.match(path)), None)

    def _build(self) -> list[tuple[str, re.Pattern[str], frozenset[str] | None]]:
        entries = []
        for path, operations in self.app.openapi().get("paths", {}).items():
            # A template's {parameter} is one segment; literal paths sort first, so /x/batch wins over /x/{id}.
            segments = ["[^/]+" if s.startswith("{") and s.endswith("}") else re.escape(s) for s in path.split("/")]
            pattern = re.compile("/".join(segments) + r"\Z")
            literal = sum(len(s) for s in path.split("/") if not s.startswith("{"))
            for method, operation in operations.items():
                body = operation.get("requestBody") if isinstance(operation, dict) else None
                media = frozenset(str(name).lower() for name in (body or {}).get("content") or {}) or None
                entries.append((-literal, method.upper(), pattern, media))
        entries.sort(key=lambda entry: entry[0])
        return [(method, pattern, media) for _, method, pattern, media in entries]


def _shown(value: str) -> str:
    return repr(value if len(value) <= SHOWN_CHARS else value[:SHOWN_CHARS] + "…")


def _header(scope: Scope, name: bytes) -> list[str]:
    return [value.decode("latin-1") for key, value in scope["headers"] if key.lower() == name]


def own_origin(scope: Scope) -> str | None:
    """This service's origin as the request reached it: the scheme and Host, or what a trusted proxy says
    of them."""
    proto, forwarded_host = scope.get(FORWARDED_ORIGIN) or (None, None)
    hosts = _header(scope, b"host")
    host = forwarded_host or (hosts[0] if len(hosts) == 1 else None)
    if host is None:
        return None
    return origin_of(proto or scope.get("scheme", "http"), host.strip())


class EdgeMiddleware:
    """Refuses cross-site state-changing requests (403) and bodies of the wrong content type (415)."""

    def __init__(
        self,
        app: ASGIApp,
        public_origin: str | None,
        allowed_origins: frozenset[str],
        media_for: Callable[[Scope], frozenset[str] | None],
    ) -> None:
        self.app = app
        self.public_origin = public_origin
        self.allowed = allowed_origins
        self.media_for = media_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in SAFE_METHODS:
            await self.app(scope, receive, send)
            return
        refusal = self.cross_site(scope)
        if refusal is not None:
            await json_answer(send, 403, refusal)
            return
        refusal = self.wrong_media(scope)
        if refusal is not None:
            await json_answer(send, 415, refusal)
            return
        await self.app(scope, receive, send)

    def cross_site(self, scope: Scope) -> str | None:
        """Why the request is refused as cross-site, or None."""
        origins = _header(scope, b"origin")
        if len(origins) > 1:
            return "cross-site request refused: more than one Origin header"
        origin = parse_origin(origins[0]) if origins and len(origins[0]) <= MAX_HEADER_CHARS else None
        allowed = origin is not None and origin in self.allowed
        site = [value.strip().lower() for value in _header(scope, b"sec-fetch-site")]
        other = next((value for value in site if value in ("cross-site", "same-site")), None)
        if other is not None and not allowed:
            return (
                f"cross-site request refused: the browser says it comes from another site (Sec-Fetch-Site: {other})"
                " and its Origin is not on GRADER_CORS_ORIGINS"
            )
        if not origins or allowed:
            return None
        own = self.public_origin or own_origin(scope)
        if origin is not None and origin == own:
            return None
        return (
            f"cross-site request refused: Origin {_shown(origins[0])} is neither this service's origin"
            f" ({_shown(own) if own else 'unknown: the request names no host'}) nor on GRADER_CORS_ORIGINS"
        )

    def wrong_media(self, scope: Scope) -> str | None:
        """Why the request's body is refused for its content type, or None."""
        if not has_body(scope):
            return None
        values = {value.strip() for value in _header(scope, b"content-type")}
        value = next(iter(values)) if len(values) == 1 else None
        media = value.split(";", 1)[0].strip().lower() if value and len(value) <= MAX_HEADER_CHARS else None
        sent = "no Content-Type" if not values else ("several Content-Types" if value is None else _shown(value))
        accepted = self.media_for(scope)
        if accepted is None:  # a body nobody reads: refused only if a cross-site form could have sent it
            if media is None or media in FORM_TYPES:
                return f"this request takes no body, and not one sent as {sent}"
            return None
        if media in accepted:
            return None
        return f"send this body as {' or '.join(sorted(accepted))}, not {sent}"
