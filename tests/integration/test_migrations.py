"""Alembic migrations: they build exactly the models' schema, on SQLite and PostgreSQL; concurrent
start-ups migrate once; a database made by create_all is adopted only when it matches."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import text

from grader.storage import migrate
from grader.storage.db import Base, Database
from tests.services import postgres_database


def _assert_matches_models(database: Database) -> None:
    with database.engine.connect() as connection:
        assert migrate.current_revision(connection) == migrate.head_revision()
        assert migrate.schema_differences(connection) == []
        tables = set(database.engine.dialect.get_table_names(connection))
    assert set(Base.metadata.tables) <= tables


def test_migrations_build_the_models_schema_on_sqlite(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'fresh.db'}")
    migrate.upgrade_to_head(database.engine)
    _assert_matches_models(database)
    migrate.upgrade_to_head(database.engine)  # a second start changes nothing
    _assert_matches_models(database)


def test_migrations_build_the_models_schema_on_postgres() -> None:
    with postgres_database() as url:
        database = Database(url)
        try:
            migrate.upgrade_to_head(database.engine)
            _assert_matches_models(database)
        finally:
            database.engine.dispose()


def test_downgrade_then_upgrade_round_trips(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'round.db'}")
    migrate.upgrade_to_head(database.engine)
    with database.engine.connect() as connection:
        command.downgrade(migrate.alembic_config(connection), "base")
        connection.commit()
        assert set(database.engine.dialect.get_table_names(connection)) <= {"alembic_version"}
    migrate.upgrade_to_head(database.engine)
    _assert_matches_models(database)


def test_processes_starting_together_migrate_once_on_postgres() -> None:
    """An API and its workers start at once against one database: one migrates, the others wait for it."""
    with postgres_database() as url:
        databases = [Database(url) for _ in range(4)]
        errors: list[BaseException] = []

        def start(database: Database) -> None:
            try:
                migrate.upgrade_to_head(database.engine)
            except BaseException as exc:  # collected: an assertion in a thread would go unseen
                errors.append(exc)

        threads = [threading.Thread(target=start, args=(database,)) for database in databases]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        try:
            assert errors == []
            _assert_matches_models(databases[0])
        finally:
            for database in databases:
                database.engine.dispose()


def test_a_database_made_by_create_all_is_stamped(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'legacy.db'}")
    database.create_all()
    migrate.upgrade_to_head(database.engine)
    _assert_matches_models(database)


def test_a_database_that_differs_from_the_models_is_refused(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'odd.db'}")
    with database.engine.begin() as connection:
        connection.execute(text("CREATE TABLE submissions (id VARCHAR(32) PRIMARY KEY, status VARCHAR(32))"))
    with pytest.raises(migrate.SchemaMismatch, match="created before schema migrations"):
        migrate.upgrade_to_head(database.engine)
