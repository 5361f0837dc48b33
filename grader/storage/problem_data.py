"""Data access for problems: uploaded problem files and cached expected outputs (keyword-only functions)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from grader.storage.db import ExpectedOutput, UploadedProblem, utcnow


def load_expected(session: Session, *, key: str) -> bytes | None:
    row = session.get(ExpectedOutput, key)
    return row.data if row is not None else None


def save_expected(session: Session, *, key: str, data: bytes) -> None:
    session.merge(ExpectedOutput(key=key, data=data))
    try:
        session.commit()
    except IntegrityError:
        # Another worker stored the same key first; the outputs of one reference are the same bytes.
        session.rollback()


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
