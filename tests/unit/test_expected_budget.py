"""The expected-output cache in the database keeps within its byte budget (grader/storage/problem_data.py): one
client's burst of fresh seeds, each with outputs of its own, evicts the least recently used entries instead of
growing the database for good (issue 41, point 3: before, one anonymous burst added 43 MiB, never evicted).
A real SQLite database, migrated as the service migrates it."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from sqlalchemy import func, select

from grader.storage import migrate, problem_data
from grader.storage.db import Database, ExpectedOutput, utcnow

ENTRY = 100_000
BUDGET = 10 * ENTRY


def _database(tmp_path: Path) -> Database:
    database = Database(f"sqlite:///{tmp_path / 'cache.db'}")
    migrate.upgrade_to_head(database.engine)
    return database


def _held(database: Database) -> tuple[int, set[str]]:
    with database.session() as session:
        total = session.scalar(select(func.coalesce(func.sum(ExpectedOutput.size), 0)))
        keys = set(session.scalars(select(ExpectedOutput.key)))
    return int(total or 0), keys


def test_a_burst_of_entries_stays_within_the_budget_least_recently_used_first(tmp_path: Path) -> None:
    database = _database(tmp_path)
    with database.session() as session:
        problem_data.save_expected(session, key="kept", data=b"k" * ENTRY, budget_bytes=BUDGET)
    for i in range(60):
        with database.session() as session:
            if i % 5 == 0:  # the popular entry is read now and then: its use is recorded
                row = session.get(ExpectedOutput, "kept")
                assert row is not None
                row.used_at = utcnow() - timedelta(hours=1)  # as if last written an hour ago
                session.commit()
                assert problem_data.load_expected(session, key="kept") == b"k" * ENTRY
        with database.session() as session:
            problem_data.save_expected(session, key=f"seed {i}", data=bytes([i]) * ENTRY, budget_bytes=BUDGET)
        total, keys = _held(database)
        assert total <= BUDGET, (i, total)
        assert f"seed {i}" in keys  # the entry just stored is in use: never its own eviction
    total, keys = _held(database)
    assert "kept" in keys, sorted(keys)  # read recently: kept while 50 older seeds went
    assert "seed 0" not in keys and "seed 59" in keys
    assert len(keys) >= 8  # evicted in batches down to 90 %, not emptied


def test_an_entry_larger_than_its_share_of_the_budget_is_not_stored(tmp_path: Path) -> None:
    """Stored, it would evict every other entry, then be evicted by the next save (a white-box review's)."""
    database = _database(tmp_path)
    for i in range(3):
        with database.session() as session:
            problem_data.save_expected(session, key=f"small {i}", data=b"s" * ENTRY, budget_bytes=BUDGET)
    with database.session() as session:
        problem_data.save_expected(session, key="huge", data=b"h" * (2 * BUDGET), budget_bytes=BUDGET)
        problem_data.save_expected(session, key="large", data=b"l" * (BUDGET // 3), budget_bytes=BUDGET)
    assert _held(database)[1] == {"small 0", "small 1", "small 2"}
