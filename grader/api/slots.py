"""Caps on requests that stay open: waiting for a verdict (POST /api/submissions?wait=) and event streams.

Each holds a connection, a task and a Notifier watch for up to a minute (a stream, until the verdict),
so without a cap a few hundred clients could hold all of the server's connections. A request beyond its
cap is answered 429 with Retry-After before it does anything; a request within it holds one slot, given
back however the request ends: an answer, an exception, or the client leaving (FastAPI exits a
dependency's `yield` once the response has been sent or has failed, a stream included).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

from fastapi import HTTPException, Request

RETRY_AFTER_S = 5


class Slots:
    """A counter of at most `limit` holders; safe from the event loop and from threads alike (the lock is
    never held across an await)."""

    def __init__(self, limit: int, refusal: str) -> None:
        self.limit = limit
        self.refusal = refusal  # the 429's message
        self._in_use = 0
        self._lock = threading.Lock()

    @property
    def in_use(self) -> int:
        return self._in_use

    def try_acquire(self) -> bool:
        with self._lock:
            if self._in_use >= self.limit:
                return False
            self._in_use += 1
            return True

    def release(self) -> None:
        with self._lock:
            if self._in_use <= 0:
                raise RuntimeError("a slot was released more often than it was taken")
            self._in_use -= 1

    def refused(self) -> HTTPException:
        return HTTPException(429, self.refusal, headers={"Retry-After": str(RETRY_AFTER_S)})

    @contextmanager
    def holding(self) -> Iterator[None]:
        """One slot for the block, else 429."""
        if not self.try_acquire():
            raise self.refused()
        try:
            yield
        finally:
            self.release()


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
    with request.app.state.streams.holding():
        yield
