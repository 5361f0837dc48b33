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


def test_a_change_relayed_from_another_process_wakes_every_waiter() -> None:
    async def scenario() -> bool:
        notifier = Notifier()
        final_only = notifier.watch("s2", final_only=True)
        notifier.wake("s2")  # what the relay calls: it cannot tell a verdict from progress
        return await _woken(final_only)

    assert asyncio.run(scenario())


def test_notify_relays_every_change() -> None:
    relayed: list[str] = []
    notifier = Notifier(relay=relayed.append)
    notifier.notify("s3")
    notifier.notify("s3", final=True)
    assert relayed == ["s3", "s3"]
