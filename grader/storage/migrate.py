"""Schema migrations (Alembic, in grader/storage/migrations): every process runs `upgrade head` at start.

Several processes may start at once against one database (an API and its workers): the upgrade runs
under a lock, a Postgres advisory lock or, for SQLite, a lock file next to the database, so that one
migrates and the others then find the schema current.

A database created before migrations existed (by `create_all`, which older builds and some tests use)
has tables but no alembic_version: if its schema is exactly the models' it is stamped as current,
otherwise start-up stops and says what differs, rather than guessing how to convert it.
"""

from __future__ import annotations

import fcntl
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# Alembic tells at INFO what it does at every start, plugin by plugin from the moment it is imported;
# this module logs what matters (a migration, a stamp) itself.
logging.getLogger("alembic").setLevel(logging.WARNING)

from alembic import command  # noqa: E402
from alembic.autogenerate import compare_metadata  # noqa: E402
from alembic.config import Config  # noqa: E402
from alembic.migration import MigrationContext  # noqa: E402
from alembic.script import ScriptDirectory  # noqa: E402
from sqlalchemy import Connection, inspect, text  # noqa: E402
from sqlalchemy.engine import Engine  # noqa: E402

from grader.storage.db import Base  # noqa: E402

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
ADVISORY_LOCK_KEY = 0x746A_6D69  # "tjmi": any constant shared by every torchjudge process


class SchemaMismatch(RuntimeError):
    """The database's schema is not one this build knows how to migrate."""


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def current_revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


def schema_differences(connection: Connection) -> list[Any]:
    """What autogenerate would change to make the database match the models (empty: they match)."""
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return list(compare_metadata(context, Base.metadata))


@contextmanager
def _migration_lock(engine: Engine, connection: Connection) -> Iterator[None]:
    if engine.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": ADVISORY_LOCK_KEY})
        connection.commit()
        try:
            yield
        finally:
            connection.rollback()  # a failed migration leaves its transaction open
            connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": ADVISORY_LOCK_KEY})
            connection.commit()
        return
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        yield
        return
    with open(f"{database}.migrate-lock", "a+b") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)


def upgrade_to_head(engine: Engine) -> None:
    """Brings the database to the newest schema; a no-op when it is there already."""
    head = head_revision()
    with engine.connect() as connection:
        with _migration_lock(engine, connection):
            current = current_revision(connection)
            connection.commit()
            if current == head:
                return
            if current is None and "submissions" in inspect(connection).get_table_names():
                differences = schema_differences(connection)
                connection.commit()
                if differences:
                    raise SchemaMismatch(
                        f"the database at {engine.url.render_as_string(hide_password=True)} was created before"
                        " schema migrations and differs from this build's models: "
                        + "; ".join(str(difference) for difference in differences[:10])
                        + ". Back it up and start with an empty database, or migrate it by hand and run"
                        " `grader db stamp`."
                    )
                log.warning("database created before migrations matches the models: stamping it at %s", head)
                command.stamp(alembic_config(connection), "head")
                connection.commit()
                return
            log.info("migrating the database from %s to %s", current or "empty", head)
            command.upgrade(alembic_config(connection), "head")
            connection.commit()


def stamp_head(engine: Engine) -> None:
    """Marks the database as current without changing it (after a migration by hand)."""
    with engine.connect() as connection:
        with _migration_lock(engine, connection):
            command.stamp(alembic_config(connection), "head")
            connection.commit()
