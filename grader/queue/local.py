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
        self._idle = 0  # workers waiting on the queue; a hint, read without the lock
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
        try:
            self._queue.put_nowait((submission_id, taken))
        except queue.Full:
            raise QueueFull from None

    def submit_blocking(self, submission_id: str) -> None:
        """For recovery at start-up: waits for room instead of refusing."""
        self._queue.put((submission_id, None))

    @property
    def idle(self) -> int:
        return self._idle

    @property
    def depth(self) -> int:
        return self._queue.qsize()

    def stop(self) -> None:
        for _ in self._workers:
            try:
                self._queue.put_nowait(None)
            except queue.Full:
                break

    def _work(self) -> None:
        while True:
            with self._count:
                self._idle += 1
            item = self._queue.get()
            with self._count:
                self._idle -= 1
            if item is None:
                return
            try:
                self._handler(*item)
            except Exception:  # a bug in grading must not take the worker down
                log.exception("grading %s failed", item[0])
