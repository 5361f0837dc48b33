"""The in-process queue: its workers, how many of them wait, and a submission handed over already taken."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from grader.queue import QueueFull
from grader.queue.local import LocalQueue


def _until(condition: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    return bool(condition())


def test_idle_counts_the_workers_waiting_and_the_taken_row_reaches_the_handler() -> None:
    handled: list[tuple[str, Any]] = []
    release = threading.Event()

    def handler(submission_id: str, taken: Any) -> None:
        handled.append((submission_id, taken))
        release.wait(5)

    local = LocalQueue(handler, workers=2, max_size=4)
    local.start()
    try:
        assert _until(lambda: local.idle == 2)
        local.submit_taken("a", {"status": "running"})
        # At once, before a worker wakes for it: the next submission must not count on that worker.
        assert local.idle == 1
        local.submit("b")
        assert local.idle == 0
        assert _until(lambda: len(handled) == 2)
        assert sorted(handled, key=lambda item: item[0]) == [("a", {"status": "running"}), ("b", None)]
        local.submit("c")  # both busy: it waits its turn
        assert local.idle == 0 and local.depth == 1
        release.set()
        assert _until(lambda: local.idle == 2 and local.depth == 0)
    finally:
        release.set()
        local.stop()


def test_a_full_queue_refuses_a_taken_submission_too() -> None:
    local = LocalQueue(lambda submission_id, taken: None, workers=1, max_size=1)  # not started: nothing drains
    local.submit("a")
    with pytest.raises(QueueFull):
        local.submit_taken("b", object())
    assert local.depth == 1 and local.idle == 0
