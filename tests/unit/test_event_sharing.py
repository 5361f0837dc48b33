"""The event streams of one submission share their work (grader/api/events.py `SharedReads`): streams woken
together read the stored submission once and encode each event once. Before, every stream re-read and
re-encoded the whole row at every wake-up: 250 streams of slow submissions with large rows held other clients'
requests 1.3 s (issue 41, point 2). A real service (SQLite, the problems of problems/), not started: the
submission is stored and finished as the grader would, and the streams are the route's own generator."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from grader.api import events
from grader.components import build
from grader.config import Settings
from grader.grading import verdict as verdicts
from grader.grading.verdict import Status
from grader.storage import crud
from tests.conftest import PROBLEMS_DIR

STREAMS = 60


def test_streams_of_one_submission_share_each_read_and_each_encoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = build(Settings(data_dir=tmp_path, problems_dir=PROBLEMS_DIR))  # type: ignore[call-arg]
    service.db.create_all()
    service.watcher.poll()
    problem = service.registry.get("embedding-layer")
    assert problem is not None
    with service.db.session() as session:
        submission_id = crud.create_submission(
            session, problem_id=problem.id, problem_version=problem.version, source="x = 1\n"
        ).id
    loads: list[int] = []
    encodings: list[int] = []
    real_load, real_event = events._load, events._event

    def counted_load(*args: object) -> object:
        loads.append(1)
        return real_load(*args)  # type: ignore[arg-type]

    def counted_event(*args: object) -> str:
        encodings.append(1)
        return real_event(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(events, "_load", counted_load)
    monkeypatch.setattr(events, "_event", counted_event)

    def finish() -> None:
        tests = [
            verdicts.TestResult(index=i, name=t.name, visible=t.visible, status=verdicts.TestStatus.PASSED)
            for i, t in enumerate(problem.tests)
        ]
        with service.db.session() as session:
            crud.finish_submission(
                session, submission_id=submission_id, verdict=verdicts.Verdict(status=Status.ACCEPTED, tests=tests)
            )
        service.notifier.notify(submission_id, final=True)

    async def one_stream() -> list[str]:
        return [text async for text in events.stream_submission(
            service.db, service.registry, service.notifier, submission_id
        )]  # fmt: skip

    first_reads: list[int] = []

    async def all_streams() -> list[list[str]]:
        streams = [asyncio.ensure_future(one_stream()) for _ in range(STREAMS)]
        for _ in range(600):  # every stream has read the queued submission and waits (however loaded the machine)
            if len(loads) >= STREAMS:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.1)
        first_reads.extend((len(loads), len(encodings)))  # each its own: a stream reads after it watches
        threading.Thread(target=finish).start()
        return await asyncio.wait_for(asyncio.gather(*streams), timeout=60)

    received = asyncio.run(all_streams())
    verdict_events = [sum(1 for text in got if "event: verdict" in text) for got in received]
    assert verdict_events == [1] * STREAMS  # every stream had its verdict, once
    assert all(got[1:] == received[0][1:] for got in received)  # the same events for all
    events_per_stream = len(received[0]) - 1
    woken_reads = len(loads) - first_reads[0]
    # Before: one read each (60). Shared: one per wave of wake-ups, a few on a quiet machine, 6-8 seen while
    # another process kept both CPUs busy; a quarter of the streams holds that on a machine three times slower.
    assert woken_reads <= STREAMS // 4, f"{woken_reads} reads for {STREAMS} streams woken together"
    woken_encodings = len(encodings) - first_reads[1]
    assert woken_encodings <= woken_reads * events_per_stream, (  # each event once per read, not once per stream
        f"{woken_encodings} encodings of {events_per_stream} new events, {woken_reads} reads"
    )
    assert events.STREAMS == {} and events.SHARED._reads == {}  # nothing is kept once the streams end
