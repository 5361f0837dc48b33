"""A running submission's tests are stored as they land, at most one write per interval, and nothing
after the verdict's own write has begun."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from grader.grading import verdict as v
from grader.storage import crud
from grader.storage.db import Database
from grader.submissions import progress
from grader.submissions.notifier import Notifier
from grader.submissions.progress import ProgressWriter


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database(f"sqlite:///{tmp_path / 'progress.db'}")
    database.create_all()
    return database


def _running(db: Database) -> str:
    with db.session() as session:
        submission_id = crud.create_submission(session, problem_id="p", problem_version="v", source="x").id
        crud.mark_running(session, submission_id=submission_id)
    return str(submission_id)


def _stored(db: Database, submission_id: str) -> list[int]:
    with db.session() as session:
        row = crud.submission_row(session, submission_id=submission_id)
    assert row is not None
    return [test["index"] for test in row.tests]


def _result(index: int) -> v.TestResult:
    return v.TestResult(index=index, name=f"t{index}", visible=True, status=v.TestStatus.PASSED)


def test_tests_that_land_together_are_stored_once_the_interval_is_up(db: Database) -> None:
    writers = [
        (submission_id, ProgressWriter(db, Notifier(), submission_id)) for submission_id in (_running(db), _running(db))
    ]
    for submission_id, writer in writers:
        writer(_result(0))
        writer(_result(1))
        assert _stored(db, submission_id) == [], "written at once: no batching"
    deadline = time.monotonic() + progress.PROGRESS_INTERVAL_S + 2
    while any(_stored(db, submission_id) != [0, 1] for submission_id, _ in writers) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [_stored(db, submission_id) for submission_id, _ in writers] == [[0, 1], [0, 1]]
    for _, writer in writers:
        writer.close()


def test_a_closed_writer_writes_nothing_more(db: Database) -> None:
    submission_id = _running(db)
    writer = ProgressWriter(db, Notifier(), submission_id)
    writer(_result(0))
    writer.close()  # the verdict is being stored
    time.sleep(progress.PROGRESS_INTERVAL_S + 0.3)
    assert _stored(db, submission_id) == []
