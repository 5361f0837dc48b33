"""The Notifier wakes a ?wait= request only when a submission may be final, a stream at every change."""

from __future__ import annotations

import asyncio

from grader.submissions.notifier import Notifier


async def _woken(event: asyncio.Event) -> bool:
    await asyncio.sleep(0.01)  # call_soon_threadsafe runs the set on the next turn of the loop
    return event.is_set()


def test_a_final_only_waiter_sleeps_through_progress_and_wakes_for_the_verdict() -> None:
    async def scenario() -> tuple[bool, bool, bool, bool]:
        notifier = Notifier()
        final_only = notifier.watch("s1", final_only=True)
        every = notifier.watch("s1")
        notifier.notify("s1")  # running, or a test stored
        progress = (await _woken(final_only), await _woken(every))
        every.clear()
        notifier.notify("s1", final=True)
        return (*progress, await _woken(final_only), await _woken(every))

    assert asyncio.run(scenario()) == (False, True, True, True)


def test_a_relayed_change_says_whether_it_may_be_the_verdict() -> None:
    """Under Celery the API wakes its waiters from what the workers relay: progress wakes streams only,
    so that 32 clients waiting with ?wait= do not each read the database at every stored test."""

    async def scenario() -> tuple[bool, bool, bool]:
        notifier = Notifier()
        final_only = notifier.watch("s2", final_only=True)
        every = notifier.watch("s2")
        notifier.wake("s2", final=False)  # a relayed "s2 progress"
        progress = (await _woken(final_only), await _woken(every))
        notifier.wake("s2", final=True)  # a relayed "s2"
        return (*progress, await _woken(final_only))

    assert asyncio.run(scenario()) == (False, True, True)


def test_notify_relays_every_change_and_whether_it_may_be_final() -> None:
    relayed: list[tuple[str, bool]] = []
    notifier = Notifier(relay=lambda submission_id, final: relayed.append((submission_id, final)))
    notifier.notify("s3")
    notifier.notify("s3", final=True)
    assert relayed == [("s3", False), ("s3", True)]


def test_the_stored_verdict_rides_the_wake_up_to_this_process_only() -> None:
    """A grader of this process hands its waiters the row it stored (they need not read it back);
    the relay to other processes carries no row: they read the database."""
    relayed: list[tuple[str, bool]] = []

    async def scenario() -> tuple[object, object, bool]:
        notifier = Notifier(relay=lambda submission_id, final: relayed.append((submission_id, final)))
        final_only = notifier.watch("s4", final_only=True)
        other = notifier.watch("s5", final_only=True)
        notifier.notify("s4", final=True, row="the stored row")
        return final_only.row, other.row, await _woken(final_only)

    assert asyncio.run(scenario()) == ("the stored row", None, True)
    assert relayed == [("s4", True)]
