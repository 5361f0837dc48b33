"""Wakes HTTP requests waiting on a submission (?wait=, event streams) when it changes."""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from collections.abc import Callable


class Notifier:
    """Wakes HTTP requests waiting on a submission, from the worker threads. With Celery, a worker's
    Notifier relays each wake-up over Redis and the API's wakes its own waiters (`wake`)."""

    def __init__(self, relay: Callable[[str], None] | None = None) -> None:
        self.relay = relay
        self._waiters: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = defaultdict(list)
        self._lock = threading.Lock()

    def watch(self, submission_id: str) -> asyncio.Event:
        event = asyncio.Event()
        with self._lock:
            self._waiters[submission_id].append((asyncio.get_running_loop(), event))
        return event

    def unwatch(self, submission_id: str, event: asyncio.Event) -> None:
        with self._lock:
            waiters = self._waiters.get(submission_id, [])
            self._waiters[submission_id] = [(loop, e) for loop, e in waiters if e is not event]
            if not self._waiters[submission_id]:
                del self._waiters[submission_id]

    def notify(self, submission_id: str) -> None:
        self.wake(submission_id)
        if self.relay is not None:
            self.relay(submission_id)

    def wake(self, submission_id: str) -> None:
        """Wakes the waiters of this process only."""
        with self._lock:
            waiters = list(self._waiters.get(submission_id, []))
        for loop, event in waiters:
            loop.call_soon_threadsafe(event.set)
