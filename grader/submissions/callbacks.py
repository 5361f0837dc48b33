"""A callback URL, checked: parsed strictly, its host resolved within a deadline, and every address it
resolves to global unicast (grader/submissions/addresses.py), unless the operator allowed the host by
name (GRADER_WEBHOOK_ALLOWED_HOSTS). Checked when a submission is made (422 otherwise) and again at each
delivery attempt, which connects to exactly the addresses checked here: no second lookup to rebind.

Host spellings that resolvers read as numbers (2130706433, 0x7f000001, 0177.0.0.1, 127.1) are refused
as such rather than resolved: an IPv4 address is four decimal numbers, an IPv6 one is in brackets.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import string
import threading
import time
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from grader.config_groups import WebhookSettings
from grader.submissions.addresses import refusal
from grader.submissions.submitters import Refused

MAX_URL = 2048
_URL_CHARACTERS = frozenset(string.ascii_letters + string.digits + "-._~:/?#[]@!$&'()*+,;=%")
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_NUMERIC_LABEL = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)")
_ALLOW_HINT = " (an operator may allow the host by name in GRADER_WEBHOOK_ALLOWED_HOSTS)"


@dataclass(frozen=True)
class Callback:
    """Where one attempt goes: the URL's parts, and the addresses (checked) to connect to, in order."""

    scheme: str
    host: str  # as in the URL, lowercased, no trailing dot: looked up, the TLS server name, the Host header
    port: int
    target: str  # path and query
    host_header: str
    addresses: tuple[str, ...] = ()
    literal: bool = False  # the host is an IP address


class Lookups:
    """Host lookups with a deadline and a bound: getaddrinfo cannot be interrupted, so each runs in a
    thread of its own, at most `limit` at once (a lookup given up on keeps its slot until the resolver
    answers, so a name server that never does cannot make threads pile up)."""

    def __init__(self, limit: int) -> None:
        self._slots = threading.BoundedSemaphore(limit)

    def addresses(self, host: str, port: int, deadline: float) -> list[str]:
        if not self._slots.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise TimeoutError("too many host lookups are waiting for their name servers")
        done = threading.Event()
        found: list[str] = []
        failed: list[BaseException] = []

        def lookup() -> None:
            try:
                infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
                found.extend(dict.fromkeys(str(info[4][0]) for info in infos))
            except BaseException as exc:  # handed to the caller, if it still waits
                failed.append(exc)
            finally:
                self._slots.release()
                done.set()

        threading.Thread(target=lookup, name="webhook-lookup", daemon=True).start()
        if not done.wait(max(0.0, deadline - time.monotonic())):
            raise TimeoutError(f"looking {host} up took longer than the deadline")
        if failed:
            raise failed[0]
        return found


# Intake's lookups, apart from the deliveries' own: a flood of submissions with slow names cannot take
# the slots that deliveries need, nor the other way round.
INTAKE_LOOKUPS = Lookups(32)


def _host(hostname: str, bracketed: bool) -> tuple[str, bool]:
    """The URL's host checked for form, without a trailing dot: (host, is an IP literal); Refused otherwise."""
    if bracketed:
        if "%" in hostname:
            raise Refused(422, "callback_url: an IPv6 address with a zone id is not accepted")
        try:
            return str(ipaddress.IPv6Address(hostname)), True
        except ValueError:
            raise Refused(422, f"callback_url: [{hostname[:64]}] is not an IPv6 address") from None
    name = hostname[:-1] if hostname.endswith(".") else hostname
    labels = name.split(".")
    if len(name) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise Refused(422, "callback_url: the host is not a valid host name (an IDN goes in its xn-- form)")
    if _NUMERIC_LABEL.fullmatch(labels[-1]):  # no top-level domain is numeric: a resolver reads a number
        try:
            address = ipaddress.IPv4Address(name)
        except ValueError:
            address = None
        if address is None or str(address) != name:
            raise Refused(
                422,
                "callback_url: write an IPv4 address as four decimal numbers without leading zeros"
                f" (a.b.c.d); {name[:64]} is read differently by different parsers",
            )
        return name, True
    return name, False


def parse(url: str) -> Callback:
    """A callback URL's parts (no lookup yet); Refused (422) for anything but a plain http(s) URL."""
    if len(url) > MAX_URL:
        raise Refused(422, f"callback_url: longer than {MAX_URL} characters")
    if not set(url) <= _URL_CHARACTERS:
        raise Refused(422, "callback_url: not a URL (spaces, control characters, backslashes or non-ASCII)")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise Refused(422, "callback_url: not a URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Refused(422, "callback_url: an http:// or https:// URL with a host is required")
    if "@" in parts.netloc:
        raise Refused(422, "callback_url: credentials (user@) in the URL are not accepted")
    if port == 0 or parts.netloc.endswith(":"):
        raise Refused(422, "callback_url: the port must be a number from 1 to 65535")
    host, literal = _host(parts.hostname, "[" in parts.netloc)
    default = 443 if parts.scheme == "https" else 80
    shown = f"[{host}]" if ":" in host else host
    return Callback(
        scheme=parts.scheme,
        host=host,
        port=port or default,
        target=(parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
        host_header=shown if port in (None, default) else f"{shown}:{port}",
        literal=literal,
    )


def resolve(callback: Callback, webhooks: WebhookSettings, lookups: Lookups, deadline: float) -> Callback:
    """The callback with the addresses to connect to, each checked; Refused (422) when one is internal
    and the host is not allowed, OSError/TimeoutError when the host does not resolve in time."""
    name = callback.host
    allowed = name in webhooks.hosts
    if not allowed and (name == "localhost" or name.endswith(".localhost")):
        raise Refused(422, f"callback_url: {name} is loopback" + _ALLOW_HINT)
    if callback.literal:
        addresses = [callback.host]
    else:
        addresses = lookups.addresses(callback.host, callback.port, deadline)
    if not addresses:
        raise Refused(422, f"callback_url: {name} has no address")
    if not allowed:
        for address in addresses:
            reason = refusal(address)
            if reason is not None:
                where = "" if callback.literal else f"{name} resolves to "
                raise Refused(422, f"callback_url: {where}{reason}, not a global unicast address" + _ALLOW_HINT)
    return replace(callback, addresses=tuple(addresses))


def check(url: str, webhooks: WebhookSettings) -> Callback:
    """The intake's check: parsed and resolved within GRADER_WEBHOOK_TIMEOUT_S; Refused (422) otherwise."""
    callback = parse(url)
    try:
        return resolve(callback, webhooks, INTAKE_LOOKUPS, time.monotonic() + webhooks.timeout_s)
    except (OSError, UnicodeError) as exc:  # socket.gaierror and TimeoutError among them
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise Refused(422, f"callback_url: {callback.host} does not resolve ({detail[:200]})") from None
