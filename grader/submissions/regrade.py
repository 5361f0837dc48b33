"""Grading every submission of a problem again, against its current version."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from grader.config_groups import QueueSettings
from grader.problems.registry import Registry
from grader.storage import crud
from grader.storage.db import Database

log = logging.getLogger(__name__)


def regrade(
    queueing: QueueSettings, db: Database, registry: Registry, resubmit: Callable[[str], None], problem_id: str
) -> int:
    """Re-queues every submission of a problem; how many. KeyError for an unknown problem."""
    problem = registry.get(problem_id)
    if problem is None:
        raise KeyError(problem_id)
    with db.session() as session:
        count, to_queue = crud.requeue_problem_submissions(
            session,
            problem_id=problem_id,
            problem_version=problem.version,
            dispatch_lease_s=queueing.redispatch_after_s,
        )
    log.info("regrading %d submissions of %s against version %s", count, problem_id, problem.version)
    if to_queue:
        # Waits for room on the queue in the background instead of refusing a large regrade.
        threading.Thread(target=lambda: [resubmit(i) for i in to_queue], name="regrade", daemon=True).start()
    return count
