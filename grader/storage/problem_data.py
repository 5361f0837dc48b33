"""Data access for problems: uploaded problem files and cached expected outputs (keyword-only functions)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from grader.storage.db import Database, ExpectedOutput, UploadedProblem, utcnow

USED_EVERY = timedelta(seconds=60)  # an entry's use is written at most this often (a read is not a write)
EVICT_TO = 0.9  # of the budget, once it is passed: evictions come in batches, not one per save


def expected_store(db: Database, budget_mb: int) -> tuple[Callable[[str], bytes | None], Callable[[str, bytes], None]]:
    """The reference's outputs kept in the database, as (load, save) by key: each in a session of its own, the
    least recently used evicted past the budget."""

    def load(key: str) -> bytes | None:
        with db.session() as session:
            return load_expected(session, key=key)

    def save(key: str, data: bytes) -> None:
        with db.session() as session:
            save_expected(session, key=key, data=data, budget_bytes=budget_mb << 20)

    return load, save


def load_expected(session: Session, *, key: str) -> bytes | None:
    row = session.get(ExpectedOutput, key)
    if row is None:
        return None
    now = utcnow()
    used = row.used_at if row.used_at.tzinfo is not None else row.used_at.replace(tzinfo=now.tzinfo)
    if now - used > USED_EVERY:
        row.used_at = now
        try:
            session.commit()
        except SQLAlchemyError:  # evicted meanwhile, or the database busy: the data read stands
            session.rollback()
    return row.data


LARGEST_SHARE = 0.25  # of the budget, the largest entry stored (a larger one is kept in memory only)


def save_expected(session: Session, *, key: str, data: bytes, budget_bytes: int) -> None:
    """Stores an entry, then keeps the cache within `budget_bytes`: past it, the least recently used entries
    are evicted down to EVICT_TO of it (never the one just stored, which is in use). An entry larger than
    LARGEST_SHARE of the budget is not stored: it would evict the others, then be evicted by the next."""
    if len(data) > budget_bytes * LARGEST_SHARE:
        return
    session.merge(ExpectedOutput(key=key, data=data, size=len(data), used_at=utcnow()))
    try:
        session.commit()
    except IntegrityError:
        # Another worker stored the same key first; the outputs of one reference are the same bytes.
        session.rollback()
    evict_expected(session, budget_bytes=budget_bytes, keep=key)


def evict_expected(session: Session, *, budget_bytes: int, keep: str | None = None) -> int:
    """Evicts the least recently used entries while the cache holds more than `budget_bytes`, down to EVICT_TO
    of it; the number evicted."""
    try:
        total = session.scalar(select(func.coalesce(func.sum(ExpectedOutput.size), 0))) or 0
        if total <= budget_bytes:
            return 0
        excess, doomed = total - int(budget_bytes * EVICT_TO), []
        rows = session.execute(select(ExpectedOutput.key, ExpectedOutput.size).order_by(ExpectedOutput.used_at))
        for found, size in rows:
            if excess <= 0:
                break
            if found != keep:
                doomed.append(found)
                excess -= size
        for start in range(0, len(doomed), 500):
            session.execute(delete(ExpectedOutput).where(ExpectedOutput.key.in_(doomed[start : start + 500])))
        session.commit()
    except SQLAlchemyError:  # the database busy, or another process evicting at once: the next save evicts
        session.rollback()
        return 0
    return len(doomed)


# -- uploaded problems ---------------------------------------------------------------------------------
def list_uploaded_problems(session: Session) -> list[UploadedProblem]:
    return list(session.scalars(select(UploadedProblem).order_by(UploadedProblem.id)))


def uploaded_problem_versions(session: Session) -> dict[str, str]:
    """id -> version of every stored upload: cheap to poll for changes made by another process."""
    return {row.id: row.version for row in session.execute(select(UploadedProblem.id, UploadedProblem.version))}


def get_uploaded_problem(session: Session, *, problem_id: str) -> UploadedProblem | None:
    return session.get(UploadedProblem, problem_id)


def save_uploaded_problem(session: Session, *, problem_id: str, version: str, text: str) -> bool:
    """Stores an upload, replacing one with the same id; True when it is new."""
    row = session.get(UploadedProblem, problem_id)
    created = row is None
    if row is None:
        row = UploadedProblem(id=problem_id, version=version, text=text)
        session.add(row)
    else:
        row.version = version
        row.text = text
        row.updated_at = utcnow()
    session.commit()
    return created


def delete_uploaded_problem(session: Session, *, problem_id: str) -> bool:
    row = session.get(UploadedProblem, problem_id)
    if row is None:
        return False
    session.delete(row)
    session.commit()
    return True
