"""The in-process queue: a bounded queue and one worker thread per warm sandbox."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

from grader.queue import QueueFull

__all__ = ["LocalQueue", "QueueFull"]

log = logging.getLogger(__name__)


class LocalQueue:
    immediate = True  # submit() is a put_nowait

    def __init__(self, handler: Callable[[str], None], workers: int, max_size: int) -> None:
        self._handler = handler
        self._queue: queue.Queue[str | None] = queue.Queue(maxsize=max_size)
        self._workers = [
            threading.Thread(target=self._work, name=f"grader-worker-{i}", daemon=True) for i in range(workers)
        ]

    def start(self) -> None:
        for worker in self._workers:
            worker.start()

    def submit(self, submission_id: str) -> None:
        try:
            self._queue.put_nowait(submission_id)
        except queue.Full:
            raise QueueFull from None

    def submit_blocking(self, submission_id: str) -> None:
        """For recovery at start-up: waits for room instead of refusing."""
        self._queue.put(submission_id)

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
            submission_id = self._queue.get()
            if submission_id is None:
                return
            try:
                self._handler(submission_id)
            except Exception:  # a bug in grading must not take the worker down
                log.exception("grading %s failed", submission_id)
