"""The in-process queue takes turns between submitters (grader/queue/local.py): one client's batch of many
makes another's single submission wait for one of its items per worker, not for all of them (issue 41, point 2:
batch intake without fair shares). Before, the queue was first in, first out."""

from __future__ import annotations

import threading

import pytest

from grader.queue import QueueFull
from grader.queue.local import LocalQueue


def _graded_order(puts: list[tuple[str, str]], workers: int = 1) -> list[str]:
    order: list[str] = []
    done = threading.Event()

    def handler(submission_id: str, taken: object) -> None:
        order.append(submission_id)
        if len(order) == len(puts):
            done.set()

    queue = LocalQueue(handler, workers=workers, max_size=1000)
    for submission_id, owner in puts:  # all put before any worker runs: the order is the queue's alone
        queue.submit(submission_id, owner)
    queue.start()
    assert done.wait(30)
    queue.stop()
    return order


def test_a_single_submission_waits_behind_one_of_a_batchs_not_all() -> None:
    batch = [(f"batch-{i}", "address:203.0.113.7") for i in range(200)]
    order = _graded_order([*batch, ("victim", "address:198.51.100.2")])
    assert order.index("victim") == 1, order[:5]
    assert [i for i in order if i != "victim"] == [i for i, _ in batch]  # each submitter's own stay in order


def test_three_submitters_take_turns() -> None:
    puts = [(f"{owner}-{i}", owner) for owner in "abc" for i in range(3)]
    assert _graded_order(puts) == ["a-0", "b-0", "c-0", "a-1", "b-1", "c-1", "a-2", "b-2", "c-2"]


def test_the_bound_holds_across_submitters() -> None:
    queue = LocalQueue(lambda *_: None, workers=1, max_size=3)
    for i, owner in enumerate("abc"):
        queue.submit(f"s{i}", owner)
    with pytest.raises(QueueFull):
        queue.submit("s3", "d")
    assert queue.depth == 3
