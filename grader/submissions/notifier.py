"""Wakes HTTP requests waiting on a submission (?wait=, event streams) when it changes."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any


class Watch(asyncio.Event):
    """Set when its submission changes. `row`: the submission as stored with its verdict, when the change
    that set it carried it (a grader of this process); then the waiter needs not read it back. `set_at`:
    when it was last set (time.monotonic()), on the event loop: a read started since then sees the change."""

    row: Any = None
    set_at: float = 0.0

    def set(self) -> None:
        self.set_at = time.monotonic()
        super().set()


class Notifier:
    """Wakes HTTP requests waiting on a submission, from the worker threads. With Celery, a worker's
    Notifier relays each wake-up over Redis and the API's wakes its own waiters (`wake`)."""

    def __init__(self, relay: Callable[[str, bool], None] | None = None) -> None:
        self.relay = relay
        # Per submission: (loop, event, woken only by a final change).
        self._waiters: dict[str, list[tuple[asyncio.AbstractEventLoop, Watch, bool]]] = defaultdict(list)
        self._lock = threading.Lock()

    def watch(self, submission_id: str, final_only: bool = False) -> Watch:
        """An event set when the submission changes; with final_only, when it may have become final
        (a ?wait= request needs nothing else; its poll of the database covers a missed wake-up)."""
        event = Watch()
        with self._lock:
            self._waiters[submission_id].append((asyncio.get_running_loop(), event, final_only))
        return event

    def unwatch(self, submission_id: str, event: asyncio.Event) -> None:
        with self._lock:
            waiters = self._waiters.get(submission_id, [])
            self._waiters[submission_id] = [waiter for waiter in waiters if waiter[1] is not event]
            if not self._waiters[submission_id]:
                del self._waiters[submission_id]

    def notify(self, submission_id: str, final: bool = False, row: Any = None) -> None:
        """`row`: the submission's row as just stored with its verdict, handed to this process's waiters."""
        self.wake(submission_id, final, row)
        if self.relay is not None:
            self.relay(submission_id, final)

    def wake(self, submission_id: str, final: bool = True, row: Any = None) -> None:
        """Wakes the waiters of this process only. `final`: the change may be the verdict."""
        with self._lock:
            waiters = list(self._waiters.get(submission_id, []))
        for loop, event, final_only in waiters:
            if final or not final_only:
                if row is not None:
                    event.row = row
                loop.call_soon_threadsafe(event.set)
