"""grader/storage: uploaded problems, regrades, and grading attempts that a regrade overtakes (real SQLite)."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.grading import verdict as v
from grader.grading.verdict import Status, Verdict
from grader.storage import crud, problem_data
from grader.storage.db import Database


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database(f"sqlite:///{tmp_path / 'test.db'}")
    database.create_all()
    return database


def accepted() -> Verdict:
    test = v.TestResult(index=0, name="t", visible=True, status=v.TestStatus.PASSED)
    return Verdict(status=Status.ACCEPTED, score=1.0, tests=[test])


def test_uploads_are_saved_replaced_listed_and_deleted(db: Database) -> None:
    with db.session() as session:
        assert problem_data.save_uploaded_problem(session, problem_id="a", version="v1", text="id: a\n") is True
        assert problem_data.save_uploaded_problem(session, problem_id="b", version="v1", text="id: b\n") is True
        assert problem_data.save_uploaded_problem(session, problem_id="a", version="v2", text="id: a # 2\n") is False
    with db.session() as session:
        assert [(row.id, row.version, row.text) for row in problem_data.list_uploaded_problems(session)] == [
            ("a", "v2", "id: a # 2\n"),
            ("b", "v1", "id: b\n"),
        ]
        assert problem_data.uploaded_problem_versions(session) == {"a": "v2", "b": "v1"}
        assert problem_data.delete_uploaded_problem(session, problem_id="a") is True
        assert problem_data.delete_uploaded_problem(session, problem_id="a") is False
        assert problem_data.get_uploaded_problem(session, problem_id="a") is None
        assert problem_data.uploaded_problem_versions(session) == {"b": "v1"}


def test_requeue_resets_every_submission_of_the_problem(db: Database) -> None:
    with db.session() as session:
        done = crud.create_submission(session, problem_id="p", problem_version="old", source="x")
        crud.mark_running(session, submission_id=done.id)
        crud.finish_submission(session, submission_id=done.id, verdict=accepted(), problem_version="old")
        waiting = crud.create_submission(session, problem_id="p", problem_version="old", source="y")
        other = crud.create_submission(session, problem_id="q", problem_version="old", source="z")
    with db.session() as session:
        count, to_queue = crud.requeue_problem_submissions(session, problem_id="p", problem_version="new")
    assert count == 2
    assert to_queue == [done.id], "a queued submission is on the queue already"
    with db.session() as session:
        reset = crud.get_submission(session, submission_id=done.id)
        assert reset is not None
        assert reset.status == Status.QUEUED and reset.tests == [] and reset.score == 0.0
        assert reset.problem_version == "new" and reset.finished_at is None
        assert crud.get_submission(session, submission_id=waiting.id).problem_version == "new"  # type: ignore[union-attr]
        assert crud.get_submission(session, submission_id=other.id).problem_version == "old"  # type: ignore[union-attr]


def test_a_regrade_overtakes_a_grading_still_running(db: Database) -> None:
    with db.session() as session:
        submission = crud.create_submission(session, problem_id="p", problem_version="v1", source="x")
        first_attempt = crud.mark_running(session, submission_id=submission.id).attempts  # type: ignore[union-attr]
    with db.session() as session:  # the regrade lands while the first grading runs
        crud.requeue_problem_submissions(session, problem_id="p", problem_version="v2")
    with db.session() as session:  # the first grading finishes late: its verdict is dropped
        crud.finish_submission(
            session, submission_id=submission.id, verdict=accepted(), problem_version="v1", attempt=first_attempt
        )
        assert crud.get_submission(session, submission_id=submission.id).status == Status.QUEUED  # type: ignore[union-attr]
    with db.session() as session:  # the regrade's own grading stores its verdict
        second_attempt = crud.mark_running(session, submission_id=submission.id).attempts  # type: ignore[union-attr]
    with db.session() as session:  # even if the first one only finishes now
        crud.finish_submission(
            session, submission_id=submission.id, verdict=accepted(), problem_version="v1", attempt=first_attempt
        )
        assert crud.get_submission(session, submission_id=submission.id).status == Status.RUNNING  # type: ignore[union-attr]
        crud.finish_submission(
            session, submission_id=submission.id, verdict=accepted(), problem_version="v2", attempt=second_attempt
        )
        final = crud.get_submission(session, submission_id=submission.id)
        assert final is not None and final.status == Status.ACCEPTED and final.problem_version == "v2"
