"""GET /api/submissions/{id}/events: a submission's progress as server-sent events.

On connect the stream sends the submission's status, then every test already finished, then each new
test as it lands (`event: test`), and finally the verdict (`event: verdict`, the same JSON as
GET /api/submissions/{id}) before it closes. A finished submission sends everything at once. A comment
line goes out every HEARTBEAT_S seconds of silence so that proxies keep the connection open.

The worker threads wake the stream through the service's Notifier; the stream then re-reads the stored
submission and sends what changed, so a missed wake-up costs at most one heartbeat interval, a
reconnecting client simply gets everything again, and hidden tests go through the same public view
as the JSON API (status only).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from grader.api.deps import ComponentsDep
from grader.api.slots import hold_stream_slot
from grader.components import Components
from grader.grading.verdict import FINAL
from grader.submissions.public import SubmissionPublic, read_submission

HEARTBEAT_S = 15.0
RETRY_MS = 2000  # how long a browser's EventSource waits before reconnecting after a dropped stream

events_router = APIRouter(tags=["submissions"])


def _load(components: Components, submission_id: str) -> tuple[SubmissionPublic, int | None] | None:
    """The public view of a submission, and how many tests its problem has (None if the problem is gone)."""
    view = read_submission(components.db, components.registry, submission_id)
    return (view.public, view.tests_total) if view is not None else None


def _event(kind: str, data: Any) -> str:
    # json.dumps never emits a raw newline, so the payload always fits on one `data:` line.
    return f"event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


async def stream_submission(components: Components, submission_id: str) -> AsyncIterator[str]:
    """The events of one submission, ending after its verdict (or if it disappears)."""
    # Watch before the first read: a test that lands between the read and the watch would otherwise
    # go unnoticed until the next heartbeat.
    wake = components.notifier.watch(submission_id)
    try:
        yield f"retry: {RETRY_MS}\n\n"
        sent_status: str | None = None
        sent_tests: dict[str, str] = {}  # test name -> the JSON last sent for it
        while True:
            wake.clear()
            loaded = await run_in_threadpool(_load, components, submission_id)
            if loaded is None:
                return
            public, total = loaded
            if public.status != sent_status:
                sent_status = public.status
                yield _event("status", {"id": public.id, "status": public.status.value, "tests_total": total})
            for test in public.tests:
                payload = test.model_dump(mode="json")
                encoded = json.dumps(payload, sort_keys=True)
                if sent_tests.get(test.name) != encoded:
                    sent_tests[test.name] = encoded
                    yield _event("test", payload)
            if public.status in FINAL:
                yield _event("verdict", public.model_dump(mode="json"))
                return
            try:
                await asyncio.wait_for(wake.wait(), timeout=HEARTBEAT_S)
            except TimeoutError:
                yield ": keep-alive\n\n"
    finally:
        components.notifier.unwatch(submission_id, wake)


@events_router.get(
    "/api/submissions/{submission_id}/events",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": "`status`, then one `test` event per finished test, then `verdict`; then the stream ends",
        },
        404: {"description": "unknown submission"},
        429: {"description": "too many event streams are open (GRADER_MAX_STREAMS); retry after Retry-After seconds"},
    },
    # A slot of GRADER_MAX_STREAMS, held until the stream ends, however it ends.
    dependencies=[Depends(hold_stream_slot)],
)
async def submission_events(submission_id: str, components: ComponentsDep) -> StreamingResponse:
    if await run_in_threadpool(_load, components, submission_id) is None:
        raise HTTPException(404, f"no submission {submission_id!r}")
    return StreamingResponse(
        stream_submission(components, submission_id),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
