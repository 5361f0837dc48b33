"""The in-process queue: a bounded queue and one worker thread per warm sandbox."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from grader.queue import QueueFull

__all__ = ["LocalQueue", "QueueFull"]

log = logging.getLogger(__name__)


class LocalQueue:
    immediate = True  # submit() is a put_nowait

    def __init__(self, handler: Callable[[str, Any], None], workers: int, max_size: int) -> None:
        self._handler = handler  # (submission id, its row when stored already taken, else None)
        self._queue: queue.Queue[tuple[str, Any] | None] = queue.Queue(maxsize=max_size)
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

    def submit(self, submission_id: str) -> None:
        self.submit_taken(submission_id, None)

    def submit_taken(self, submission_id: str, taken: Any) -> None:
        with self._count:
            try:
                self._queue.put_nowait((submission_id, taken))
            except queue.Full:
                raise QueueFull from None
            self._free -= 1

    def submit_blocking(self, submission_id: str) -> None:
        """For recovery at start-up: waits for room instead of refusing."""
        with self._count:
            self._free -= 1  # before the wait: meanwhile, `idle` errs low (nothing is stored taken)
        self._queue.put((submission_id, None))

    @property
    def idle(self) -> int:
        """Workers waiting with nothing put for them yet."""
        return max(0, self._free)

    @property
    def depth(self) -> int:
        return self._queue.qsize()

    def broker_error(self) -> str | None:
        return None  # nothing between this process and its graders

    def stop(self) -> None:
        for _ in self._workers:
            try:
                self._queue.put_nowait(None)
            except queue.Full:
                break

    def _work(self) -> None:
        while True:
            with self._count:
                self._free += 1
            item = self._queue.get()
            if item is None:
                return
            try:
                self._handler(*item)
            except Exception:  # a bug in grading must not take the worker down
                log.exception("grading %s failed", item[0])
