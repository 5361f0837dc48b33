"""Verdicts survive a restart; submissions left queued or running are graded once the service is back."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.components import Components, build
from grader.grading.verdict import Status
from grader.problems.registry import parse_problem
from grader.storage import crud
from grader.storage.db import Database
from tests.conftest import PROBLEMS_DIR, make_settings, wait_until_ready

pytestmark = pytest.mark.docker

REFERENCE = parse_problem((PROBLEMS_DIR / "embedding-layer.yaml").read_text(), "embedding-layer.yaml").reference


def _wait_final(service: Components, submission_id: str, timeout: float = 120) -> str:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with service.db.session() as session:
            submission = crud.get_submission(session, submission_id=submission_id)
            assert submission is not None
            if submission.status not in (Status.QUEUED, Status.RUNNING):
                return submission.status
        time.sleep(0.2)
    raise AssertionError("not graded in time")


def test_unfinished_submissions_are_graded_after_a_restart(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, pool_size=1)
    # What a stopped service leaves behind: one submission queued, one caught mid-grading.
    database = Database(settings.storage.sqlalchemy_url)
    database.create_all()
    with database.session() as session:
        queued = crud.create_submission(session, problem_id="embedding-layer", problem_version="old", source=REFERENCE)
        running = crud.create_submission(session, problem_id="embedding-layer", problem_version="old", source=REFERENCE)
        crud.mark_running(session, submission_id=running.id)
    database.engine.dispose()

    service = build(settings)
    service.start()
    try:
        wait_until_ready(service)
        assert _wait_final(service, queued.id) == Status.ACCEPTED
        assert _wait_final(service, running.id) == Status.ACCEPTED
        with service.db.session() as session:
            graded = crud.get_submission(session, submission_id=running.id)
            assert graded is not None
            assert graded.problem_version == service.registry.get("embedding-layer").version  # type: ignore[union-attr]
            assert len(graded.tests) == len(service.registry.get("embedding-layer").problem.tests)  # type: ignore[union-attr]
    finally:
        service.stop()

    # A second life of the service still has the verdicts, and grades nothing twice.
    again = build(settings)
    again.db.create_all()
    with again.db.session() as session:
        assert crud.unfinished_submission_ids(session) == []
        assert crud.get_submission(session, submission_id=queued.id).status == Status.ACCEPTED  # type: ignore[union-attr]
