"""Dispatchers: how a stored submission reaches the grading function (submissions/processing.py,
Processor.process).

One interface, one implementation per file, chosen by GRADER_QUEUE:
  local   grader/queue/local.py        an in-process bounded queue and worker threads
  celery  grader/queue/celery_app.py   Celery over Redis; `grader worker` processes grade
"""

from __future__ import annotations

from typing import Any, Protocol


class QueueFull(Exception):
    """No room for another submission: the API answers 429 with Retry-After."""


class Dispatcher(Protocol):
    # Whether submit() returns at once without I/O (an in-process queue), so it may run on the event loop.
    immediate: bool

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def submit(self, submission_id: str, owner: str = "") -> None:
        """Hands a stored, queued submission over for grading; raises QueueFull when there is no room. `owner`:
        its submitter (intake.py `owner_of`), whose submissions take turns with others' where the queue can."""

    def submit_blocking(self, submission_id: str, owner: str = "") -> None:
        """The same without a bound, for what must not be refused: recovery and regrades."""

    @property
    def idle(self) -> int:
        """Graders of this process waiting for work (0 where grading happens in other processes)."""

    def submit_taken(self, submission_id: str, taken: Any, owner: str = "") -> None:
        """Hands over a submission stored already taken for grading (`taken`: its row, running, attempt 1),
        when `idle` said a grader waits: it skips the take. Only where `idle` can be more than 0."""

    @property
    def depth(self) -> int:
        """Submissions waiting for a grader."""

    def broker_error(self) -> str | None:
        """None when what carries submissions to graders answers (always, in process), else why not."""
