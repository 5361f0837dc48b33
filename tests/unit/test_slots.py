"""grader/api/slots.py: the counter behind GRADER_MAX_WAITERS and GRADER_MAX_STREAMS. The caps at work, over
HTTP against the real service: tests/integration/test_http_caps.py."""

from __future__ import annotations

import threading

import pytest
from fastapi import HTTPException
from pydantic import ValidationError

from grader.api.slots import RETRY_AFTER_S, stream_slots, waiter_slots
from grader.config import Settings


def test_a_slot_beyond_the_limit_is_refused_until_one_comes_back() -> None:
    slots = waiter_slots(2)
    assert slots.try_acquire("a") and slots.try_acquire("b")
    assert not slots.try_acquire("c")
    assert slots.in_use == 2
    slots.release("a")
    assert slots.try_acquire("c")
    assert slots.in_use == 2


def test_one_client_holds_at_most_its_share_and_the_rest_stay_for_others() -> None:
    """Issue 41, point 2: 250 streams from one client (under a process-wide cap of 256) held everyone else's."""
    slots = stream_slots(256)
    assert slots.per_client == 32
    taken = sum(slots.try_acquire("address:203.0.113.9") for _ in range(250))
    assert taken == 32 and slots.in_use == 32
    with pytest.raises(HTTPException) as refused:
        with slots.holding("address:203.0.113.9"):
            pass
    assert refused.value.status_code == 429 and "its share of 256" in refused.value.detail
    assert all(slots.try_acquire(f"address:198.51.100.{i}") for i in range(100))  # the others get theirs
    assert slots.in_use == 132
    with pytest.raises(RuntimeError):
        slots.release("address:192.0.2.1")  # a client that holds none gives none back


def test_holding_refuses_with_429_retry_after_and_a_message() -> None:
    slots = stream_slots(1)
    with slots.holding():
        with pytest.raises(HTTPException) as refused:
            with slots.holding():
                pass
    assert refused.value.status_code == 429
    assert refused.value.headers == {"Retry-After": str(RETRY_AFTER_S)}
    assert "event streams" in refused.value.detail and "at most 1" in refused.value.detail
    assert slots.in_use == 0


def test_holding_gives_the_slot_back_on_an_exception() -> None:
    slots = waiter_slots(1)
    with pytest.raises(ZeroDivisionError):
        with slots.holding():
            1 / 0  # noqa: B018
    assert slots.in_use == 0


def test_releasing_more_than_was_taken_is_a_bug_not_a_free_slot() -> None:
    slots = waiter_slots(1)
    with pytest.raises(RuntimeError):
        slots.release()
    assert slots.in_use == 0


def test_threads_racing_never_exceed_the_limit() -> None:
    slots = waiter_slots(5)
    held: list[bool] = []
    start = threading.Barrier(20)

    def take(number: int) -> None:
        start.wait()
        held.append(slots.try_acquire(f"client {number}"))

    threads = [threading.Thread(target=take, args=(number,)) for number in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert held.count(True) == 5 and slots.in_use == 5


def test_the_caps_must_leave_connections_free() -> None:
    assert (Settings().http.max_waiters, Settings().http.max_streams) == (256, 256)
    with pytest.raises(ValidationError, match="GRADER_MAX_CONNECTIONS"):
        Settings(max_waiters=500, max_streams=500, max_connections=1000)
    with pytest.raises(ValidationError):
        Settings(max_waiters=0)
    with pytest.raises(ValidationError):
        Settings(max_streams=0)
