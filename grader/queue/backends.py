"""Which queue carries submissions, decided here and nowhere else (GRADER_QUEUE, `QueueSettings.backend`):
whether the process that takes submissions in also grades them, and the dispatcher each process gets.

A new backend: a module in grader/queue/ with a `Dispatcher` (queue/__init__.py), its name in `QueueBackend`
(grader/config_groups.py), and its branch in `dispatcher()` and `grades_where_taken()` here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, Protocol

from grader.config_groups import QueueSettings
from grader.queue import Dispatcher
from grader.queue.local import LocalQueue
from grader.storage.db import Database

if TYPE_CHECKING:
    from grader.queue.celery_app import Call

Role = Literal["server", "worker"]


class Progress(Protocol):
    """What a process tells its waiters (submissions/notifier.py): its own wake-ups, and where a worker relays
    them to the API."""

    relay: Callable[[str, bool], None] | None

    def wake(self, submission_id: str, final: bool = True) -> None: ...


def grades_where_taken(queueing: QueueSettings) -> bool:
    """Whether the process that takes submissions in grades them too (no workers: no calls to them, nothing
    queued outside this process, and what it left queued at its last stop is graded again at its start)."""
    return queueing.backend == "local"


def grades_here(queueing: QueueSettings, role: Role) -> bool:
    """Whether a process of this role grades (and so runs sandboxes, the judge and the references)."""
    return role == "worker" or grades_where_taken(queueing)


def dispatcher(
    queueing: QueueSettings,
    role: Role,
    *,
    db: Database,
    graders: int,
    handler: Callable[..., None],
    progress: Progress,
    calls: dict[str, Call],
) -> Dispatcher:
    """This process's dispatcher: `graders` threads calling `handler` in process, or a Celery client (the API)
    or consumer (a worker, answering `calls` too and relaying its progress to the API's waiters)."""
    if grades_where_taken(queueing):
        return LocalQueue(handler, workers=graders, max_size=queueing.max_queue)
    from grader.queue.celery_app import CeleryDispatcher

    if role == "worker":
        consumer = CeleryDispatcher(queueing, db, handler=handler, calls=calls)
        progress.relay = consumer.publish
        return consumer
    return CeleryDispatcher(queueing, db, on_progress=progress.wake)
