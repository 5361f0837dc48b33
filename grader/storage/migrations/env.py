"""Alembic's entry point: runs the migrations on the connection grader.storage.migrate hands over, or,
from the alembic command line (alembic.ini at the repository root), on GRADER_DATABASE_URL."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from grader.storage.db import Base, make_engine

config = context.config
target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite alters a table by copying it; batch mode writes migrations that work there and on Postgres.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    from grader.config import Settings

    engine = make_engine(config.get_main_option("sqlalchemy.url") or Settings().storage.sqlalchemy_url)
    try:
        with engine.connect() as connection:
            _run(connection)
            connection.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported: run them against a database")
run_migrations_online()
