"""GET /api/submissions/{id}/events: a submission's progress as server-sent events.

One stream is the submission's history, each event once, in this order, each with an `id:`:

- `status` (id 0 `queued`, id 1 `running`): `{"id", "status", "tests_total"}`. A submission that is
  already final when the stream starts is replayed: `running`, its tests, its verdict.
- `test` (id 2 + i for the test at position i): `{"index", "name", "visible", "status", ...}`, one per
  test in file order, never sent twice; a test's hint comes with the verdict only. A visible test goes out
  once it and every test before it have finished. A hidden test goes out with the verdict, all of them at
  once (batched): its progress, with no status unless the problem opts into per-test statuses, and never
  at a time that would tell how long it ran. The admin's stream (admin token) carries every test whole,
  as it lands.
- `verdict` (id 2 + the number of tests): the same JSON as GET /api/submissions/{id}, always the last
  event; then the stream ends.

A client that reconnects with `Last-Event-ID: N` gets the events after N and nothing it had; one that had
the verdict gets 204 (which tells an EventSource to stop reconnecting). A comment line goes out every
HEARTBEAT_S seconds of silence so that proxies keep the connection open.

The worker threads wake the stream through the service's Notifier; the stream then re-reads the stored
submission through the same public view as the JSON API and sends what is new, so a missed wake-up costs
at most one heartbeat interval. The streams of one submission share that work (`SharedReads`): one read,
and each event encoded once, for all the streams woken together, however many they are.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, HTTPException, Response
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from grader.api.deps import AdminCallerDep, DatabaseDep, NotifierDep, RegistryDep
from grader.api.schemas import shown
from grader.api.slots import hold_stream_slot
from grader.grading.verdict import FINAL, Status
from grader.problems.registry import Registry
from grader.storage.db import Database
from grader.submissions.notifier import Notifier
from grader.submissions.public import SubmissionPublic, read_submission

HEARTBEAT_S = 15.0
RETRY_MS = 2000  # how long a browser's EventSource waits before reconnecting after a dropped stream
STATUS_IDS = {Status.QUEUED: 0, Status.RUNNING: 1}
FIRST_TEST_ID = 2
MAX_EVENT_ID = 10**9

events_router = APIRouter(tags=["submissions"])

Event = tuple[int, str, Any]  # (id, kind, data)


def _load(db: Database, registry: Registry, submission_id: str, admin: bool) -> SubmissionPublic | None:
    view = read_submission(db, registry, submission_id, admin=admin)
    return view.public if view is not None else None


class Snapshot:
    """One read of a submission, shared by the streams that asked for it: its events, each encoded once."""

    def __init__(self, public: SubmissionPublic | None) -> None:
        self.public = public
        self._encoded: dict[int, str] = {}

    def events_after(self, after: int) -> list[tuple[int, str]]:
        """(id, the event's text) of the events after `after`, each encoded once for every stream."""
        assert self.public is not None
        found = []
        for event_id, kind, data in pending_events(self.public, after):
            if event_id not in self._encoded:
                self._encoded[event_id] = _event(event_id, kind, data)
            found.append((event_id, self._encoded[event_id]))
        return found


class SharedReads:
    """The reads of the streams of one submission, shared: a stream woken at `since` takes the read in flight
    or done that started no earlier (it saw every change the stream was woken for), else starts one. The
    event loop's own: no lock (one thread), and at most one entry per watched submission and view."""

    def __init__(self) -> None:
        self._reads: dict[tuple[int, str, bool], tuple[float, asyncio.Future[Snapshot]]] = {}

    async def read(self, db: Database, registry: Registry, submission_id: str, admin: bool, since: float) -> Snapshot:
        key = (id(db), submission_id, admin)
        found = self._reads.get(key)
        if found is not None and found[0] >= since and found[1].get_loop() is asyncio.get_running_loop():
            return await asyncio.shield(found[1])
        started = time.monotonic()
        future: asyncio.Future[Snapshot] = asyncio.get_running_loop().create_future()
        self._reads[key] = (started, future)
        try:
            snapshot = Snapshot(await run_in_threadpool(_load, db, registry, submission_id, admin))
        except BaseException as exc:
            if self._reads.get(key, (0, None))[1] is future:
                del self._reads[key]
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning when no other stream waits
            raise
        future.set_result(snapshot)
        return snapshot

    def forget(self, key: tuple[int, str, bool]) -> None:
        """Drops a submission's read once no stream of it is left."""
        self._reads.pop(key, None)


SHARED = SharedReads()
STREAMS: dict[tuple[int, str, bool], int] = {}  # open streams per database, submission and view


def _event(event_id: int, kind: str, data: Any) -> str:
    # json.dumps never emits a raw newline, so the payload always fits on one `data:` line; the view's
    # values are plain JSON (public.plain_details), and anything else would still be written as text.
    payload = json.dumps(data, separators=(",", ":"), default=str)
    return f"id: {event_id}\nevent: {kind}\ndata: {payload}\n\n"


def verdict_id(public: SubmissionPublic) -> int:
    return FIRST_TEST_ID + len(public.tests)


def pending_events(public: SubmissionPublic, after: int) -> list[Event]:
    """The events of the submission as it is now that come after event `after`, in order."""
    final = public.status in FINAL
    events: list[Event] = []
    status = Status.RUNNING if final else public.status
    if STATUS_IDS[status] > after:
        events.append(
            (STATUS_IDS[status], "status", {"id": public.id, "status": status.value, "tests_total": public.tests_total})
        )
    for position, test in enumerate(public.tests):
        if FIRST_TEST_ID + position > after:
            events.append((FIRST_TEST_ID + position, "test", test.model_dump(mode="json") | {"hint": None}))
    if final and verdict_id(public) > after:
        events.append((verdict_id(public), "verdict", public.model_dump(mode="json")))
    return events


async def stream_submission(
    db: Database, registry: Registry, notifier: Notifier, submission_id: str, after: int = -1, admin: bool = False
) -> AsyncIterator[str]:
    """The events of one submission after event `after`, ending after its verdict (or if it disappears)."""
    # Watch before the first read: a test that lands between the read and the watch would otherwise
    # go unnoticed until the next heartbeat.
    wake = notifier.watch(submission_id)
    key = (id(db), submission_id, admin)
    STREAMS[key] = STREAMS.get(key, 0) + 1
    try:
        yield f"retry: {RETRY_MS}\n\n"
        since = time.monotonic()
        while True:
            wake.clear()
            snapshot = await SHARED.read(db, registry, submission_id, admin, since)
            if snapshot.public is None:
                return
            for event_id, text in snapshot.events_after(after):
                after = event_id
                yield text
            if snapshot.public.status in FINAL:
                return
            try:
                await asyncio.wait_for(wake.wait(), timeout=HEARTBEAT_S)
            except TimeoutError:
                yield ": keep-alive\n\n"
                since = time.monotonic()
            else:  # a read that started since the wake-up sees the change: the streams woken with it share it
                since = wake.set_at
    finally:
        notifier.unwatch(submission_id, wake)
        STREAMS[key] -= 1
        if STREAMS[key] <= 0:
            del STREAMS[key]
            SHARED.forget(key)


def _last_event_id(header: str | None) -> int:
    """The event a reconnecting client last had; -1 (from the start) when absent or not an event id."""
    text = (header or "").strip()
    if not text.isascii() or not text.isdigit() or len(text) > 10:
        return -1
    return min(int(text), MAX_EVENT_ID)


@events_router.get(
    "/api/submissions/{submission_id}/events",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": "`status`, then one `test` event per test in file order, then `verdict`; then the stream "
            "ends. Every event has an `id:`; send the last one had as `Last-Event-ID` to resume after it",
        },
        204: {"description": "resumed (Last-Event-ID) after the verdict: nothing more will come"},
        404: {"description": "unknown submission"},
        429: {"description": "too many event streams are open (GRADER_MAX_STREAMS); retry after Retry-After seconds"},
    },
    # A slot of GRADER_MAX_STREAMS, held until the stream ends, however it ends.
    dependencies=[Depends(hold_stream_slot)],
)
async def submission_events(
    submission_id: str,
    admin: AdminCallerDep,
    db: DatabaseDep,
    registry: RegistryDep,
    notifier: NotifierDep,
    last_event_id: Annotated[
        str | None, Header(alias="Last-Event-ID", description="resume after this event (sent by EventSource)")
    ] = None,
) -> Response:
    public = await run_in_threadpool(_load, db, registry, submission_id, admin)
    if public is None:
        raise HTTPException(404, f"no submission {shown(submission_id)}")
    after = _last_event_id(last_event_id)
    if public.status in FINAL and after >= verdict_id(public):
        return Response(status_code=204)
    return StreamingResponse(
        stream_submission(db, registry, notifier, submission_id, after, admin),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
