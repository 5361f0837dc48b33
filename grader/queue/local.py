"""The in-process queue: a bounded queue and one worker thread per warm sandbox.

Fair between submitters: each submitter (its API key, else its address: intake.py `owner_of`) has a line of
its own, and the workers take from the lines in turn, so that one client's batch of a thousand makes another's
single submission wait for at most one of its items per worker, not for all of them."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

from grader.queue import QueueFull

__all__ = ["LocalQueue", "QueueFull"]

log = logging.getLogger(__name__)


class LocalQueue:
    immediate = True  # submit() is a put_nowait

    def __init__(self, handler: Callable[[str, Any], None], workers: int, max_size: int) -> None:
        self._handler = handler  # (submission id, its row when stored already taken, else None)
        self._max_size = max_size
        self._lines: OrderedDict[str, deque[tuple[str, Any]]] = OrderedDict()  # per submitter, in turn
        self._size = 0
        self._stopping = 0  # workers still to stop
        self._ready = threading.Condition(threading.Lock())
        # Workers waiting on the queue less the items already put for them: counted down when an item is
        # put (not when a worker wakes for it), so that a submission stored next does not count on a
        # worker that an earlier one has as good as taken.
        self._free = 0
        self._count = threading.Lock()
        self._workers = [
            threading.Thread(target=self._work, name=f"grader-worker-{i}", daemon=True) for i in range(workers)
        ]

    def start(self) -> None:
        for worker in self._workers:
            worker.start()

    def submit(self, submission_id: str, owner: str = "") -> None:
        self.submit_taken(submission_id, None, owner)

    def submit_taken(self, submission_id: str, taken: Any, owner: str = "") -> None:
        with self._count:
            if not self._put((submission_id, taken), owner, wait=False):
                raise QueueFull
            self._free -= 1

    def submit_blocking(self, submission_id: str, owner: str = "") -> None:
        """For recovery at start-up: waits for room instead of refusing."""
        with self._count:
            self._free -= 1  # before the wait: meanwhile, `idle` errs low (nothing is stored taken)
        self._put((submission_id, None), owner, wait=True)

    def _put(self, item: tuple[str, Any], owner: str, wait: bool) -> bool:
        with self._ready:
            while self._size >= self._max_size:
                if not wait:
                    return False
                self._ready.wait()
            self._lines.setdefault(owner, deque()).append(item)
            self._size += 1
            self._ready.notify_all()
        return True

    def _take(self) -> tuple[str, Any] | None:
        """The next item, from the submitter whose turn it is (None: stop)."""
        with self._ready:
            while not self._size and not self._stopping:
                self._ready.wait()
            if self._stopping and not self._size:
                self._stopping -= 1
                return None
            owner, line = next(iter(self._lines.items()))
            item = line.popleft()
            del self._lines[owner]
            if line:  # its next one waits for every other submitter's turn
                self._lines[owner] = line
            self._size -= 1
            self._ready.notify_all()
            return item

    @property
    def idle(self) -> int:
        """Workers waiting with nothing put for them yet."""
        return max(0, self._free)

    @property
    def depth(self) -> int:
        return self._size

    def broker_error(self) -> str | None:
        return None  # nothing between this process and its graders

    def stop(self) -> None:
        with self._ready:  # each worker stops once what was put before is taken, as before a stop
            self._stopping = len(self._workers)
            self._ready.notify_all()

    def _work(self) -> None:
        while True:
            with self._count:
                self._free += 1
            item = self._take()
            if item is None:
                return
            try:
                self._handler(*item)
            except Exception:  # a bug in grading must not take the worker down
                log.exception("grading %s failed", item[0])
