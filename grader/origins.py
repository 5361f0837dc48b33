"""Names as clients give them: browsers' origins (grader/api/edge.py), host names (GRADER_ALLOWED_HOSTS,
grader/api/hosts.py), parsed and normalised without trusting them; and who a client is, for fair shares."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# Longer than any origin a client has reason to send (a host name is at most 253 characters).
MAX_ORIGIN_CHARS = 1024
# A host name as GRADER_ALLOWED_HOSTS takes it: labels of letters, digits and '-', dot-separated.
HOST_NAME = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9-]{1,63}(?<!-))*\.?")


def origin_of(scheme: str, netloc: str) -> str | None:
    """`scheme://host[:port]`, in lower case, without the scheme's default port; None unless it is an
    http(s) origin."""
    scheme = scheme.lower()
    if scheme not in ("http", "https") or not netloc or len(netloc) > MAX_ORIGIN_CHARS:
        return None
    if not netloc.isprintable() or any(char in netloc for char in " /?#@\\"):
        return None
    try:
        parts = urlsplit(f"{scheme}://{netloc}")
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host:
        return None
    host = f"[{host}]" if ":" in host else host
    default = 443 if scheme == "https" else 80
    return f"{scheme}://{host}" + (f":{port}" if port is not None and port != default else "")


def parse_origin(value: str) -> str | None:
    """An Origin header's value (or a URL's origin part) normalised; None for `null` and anything else."""
    scheme, sep, rest = value.strip().partition("://")
    return origin_of(scheme, rest.removesuffix("/")) if sep else None


def client_identity(key_hash: str | None, address: str | None) -> str:
    """Who a client is for every fair share (open requests, the queue's turns, webhook senders): the hash of
    its API key where it has one, else its address (as a trusted proxy names it). Never an X-Owner-Token,
    which a script mints at will. The one rule: every part that shares by client asks it here."""
    return "key:" + key_hash if key_hash else "address:" + (address or "")
