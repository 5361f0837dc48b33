"""Caps on requests that stay open: waiting for a verdict (POST /api/submissions?wait=) and event streams.

Each holds a connection, a task and a Notifier watch for up to a minute (a stream, until the verdict),
so without a cap a few hundred clients could hold all of the server's connections. A request beyond its
cap is answered 429 with Retry-After before it does anything; a request within it holds one slot, given
back however the request ends: an answer, an exception, or the client leaving (FastAPI exits a
dependency's `yield` once the response has been sent or has failed, a stream included).

The cap is also shared fairly: one client (its API key where it sends a valid one, else its address as a
trusted proxy names it: `client_key`) holds at most SHARE of the slots, so that one client's flood leaves the
rest to the others (a client's own slots refused with a 429 that says so).
"""

from __future__ import annotations

import math
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

from fastapi import HTTPException, Request

from grader.origins import client_identity
from grader.submissions.submitters import Refused

RETRY_AFTER_S = 5
SHARE = 1 / 8  # of a cap's slots, the most one client holds
MIN_SHARE = 4  # ... but at least this many (all of a smaller cap)


class Slots:
    """A counter of at most `limit` holders, at most `per_client` of them one client's; safe from the event
    loop and from threads alike (the lock is never held across an await)."""

    def __init__(self, limit: int, refusal: str, share: float = SHARE) -> None:
        self.limit = limit
        self.per_client = min(limit, max(MIN_SHARE, math.ceil(limit * share)))
        self.refusal = refusal  # the 429's message
        self._in_use = 0
        self._held: dict[str, int] = {}  # client -> slots it holds (only those holding any)
        self._lock = threading.Lock()

    @property
    def in_use(self) -> int:
        return self._in_use

    def try_acquire(self, client: str = "") -> bool:
        return self.acquire(client) is None

    def acquire(self, client: str) -> str | None:
        """None when a slot was taken for `client`, else why not (the 429's message)."""
        with self._lock:
            if self._in_use >= self.limit:
                return self.refusal
            if self._held.get(client, 0) >= self.per_client:
                return f"this client holds {self.per_client} already, its share of {self.limit}: {self.refusal}"
            self._in_use += 1
            self._held[client] = self._held.get(client, 0) + 1
            return None

    def release(self, client: str = "") -> None:
        with self._lock:
            if self._in_use <= 0 or self._held.get(client, 0) <= 0:
                raise RuntimeError("a slot was released more often than it was taken")
            self._in_use -= 1
            self._held[client] -= 1
            if not self._held[client]:
                del self._held[client]

    def refused(self, message: str | None = None) -> HTTPException:
        return HTTPException(429, message or self.refusal, headers={"Retry-After": str(RETRY_AFTER_S)})

    @contextmanager
    def holding(self, client: str = "") -> Iterator[None]:
        """One slot for the block, else 429."""
        why = self.acquire(client)
        if why is not None:
            raise self.refused(why)
        try:
            yield
        finally:
            self.release(client)


def client_key(request: Request) -> str:
    """Who holds a slot, for fair shares: the hash of a valid API key the request carries, else the client's
    address (a trusted proxy's word for it, grader/api/forwarded.py). Never a token the client makes up
    freely (an X-Owner-Token is one per browser, and as many as a script wants)."""
    components = getattr(request.app.state, "components", None)
    submitters = getattr(components, "submitters", None)
    if submitters is not None:
        try:
            submitter = submitters.identify(request.headers)
        except Refused:
            submitter = None
        if submitter is not None and submitter.key_hash:
            return client_identity(submitter.key_hash, None)
    return client_identity(None, request.client.host if request.client else None)


def waiter_slots(limit: int) -> Slots:
    return Slots(
        limit,
        f"too many requests are waiting for a verdict (at most {limit} at once): retry after a few seconds,"
        " or submit without ?wait= and poll the Location",
    )


def stream_slots(limit: int) -> Slots:
    return Slots(
        limit,
        f"too many event streams are open (at most {limit} at once): retry after a few seconds,"
        " or poll GET /api/submissions/{id}",
    )


async def hold_stream_slot(request: Request) -> AsyncIterator[None]:
    """Dependency of the event stream route: a slot of app.state.streams for the stream's whole life."""
    with request.app.state.streams.holding(client_key(request)):
        yield
