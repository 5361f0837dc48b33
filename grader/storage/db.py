"""The database: SQLite by default (WAL, one file in the data directory), any SQLAlchemy URL otherwise."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator
from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    create_engine,
    event,
    text,
)
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(moment: datetime) -> datetime:
    """A stored time with its time zone: SQLite gives back the UTC times it was given without one."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


UtcTime = Annotated[datetime, AfterValidator(as_utc)]  # a time as the API shows it: ISO 8601 in UTC, with its zone


class Base(DeclarativeBase):
    pass


class Submission(Base):
    __tablename__ = "submissions"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    problem_id: Mapped[str] = mapped_column(String(64), index=True)
    problem_version: Mapped[str] = mapped_column(String(32))
    source: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(32), index=True)
    score: Mapped[float] = mapped_column(Float, default=0.0)
    message: Mapped[str | None] = mapped_column(Text, nullable=True)
    hint: Mapped[str | None] = mapped_column(Text, nullable=True)
    line: Mapped[int | None] = mapped_column(Integer, nullable=True)
    traceback: Mapped[str | None] = mapped_column(Text, nullable=True)
    tests: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    # Every grading ever started (the token that fences a stale attempt off), and those started since
    # the last verdict or regrade: past GRADER_MAX_GRADING_STARTS of these, the submission is given up.
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    grading_starts: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # Until when the submission's current holder owns it: the worker grading it (which renews the lease
    # while it runs) or, while queued under Celery, the broker delivering it. Past it, it is sent again.
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # The submitter, as a SHA-256 of their API key (never the key itself); None without API keys.
    api_key_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # The client's Idempotency-Key hashed with api_key_hash: unique, so that a retried POST finds what its
    # first try created, even when the two race.
    idempotency_key: Mapped[str | None] = mapped_column(String(64), nullable=True, unique=True, index=True)
    # What every hidden test's inputs derive from (grader/grading/seeds.py); None for a problem whose
    # tests are all on fixed inputs, and for submissions made before seeds were recorded.
    seed: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    # Where the final verdict is POSTed (signed), and how that is going: pending, delivered, failed.
    callback_url: Mapped[str | None] = mapped_column(Text, nullable=True)
    webhook_status: Mapped[str | None] = mapped_column(String(16), nullable=True)
    webhook_attempts: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    webhook_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    webhook_next_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # The client address of an anonymous submission (its rate limit); None with an API key.
    client_address: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # The client's own bounded object (submissions/metadata.py), echoed in every view; and the batch the
    # submission came in (POST /api/submissions/batch), if any.
    client_metadata: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    batch_id: Mapped[str | None] = mapped_column(String(32), nullable=True, index=True)
    # Without API keys: a SHA-256 of the submitter's own token (X-Owner-Token, which a browser makes and
    # keeps), whose history GET /api/me/submissions lists. None with API keys (the key is the owner).
    owner_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # A speed-graded problem's timing (grading/speed_stats.py SpeedResult), once every test passed; and the
    # name a course gives its submitter (the leaderboard shows it), vouched for by its API key when there is one.
    speed: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    submitter: Mapped[str | None] = mapped_column(String(64), nullable=True)

    __table_args__ = (
        Index("ix_submissions_api_key_hash_created_at", "api_key_hash", "created_at"),
        Index("ix_submissions_client_address_created_at", "client_address", "created_at"),
        Index("ix_submissions_webhook_status_next_at", "webhook_status", "webhook_next_at"),
        Index("ix_submissions_problem_id_created_at", "problem_id", "created_at", "id"),
        Index("ix_submissions_created_at_id", "created_at", "id"),
        Index("ix_submissions_owner_hash_created_at", "owner_hash", "created_at"),
    )


class LeaderboardEntry(Base):
    """A speed-graded problem's leaderboard: each entrant's best accepted speed-up (storage/leaderboard.py).
    The entrant is a hash of who submitted (their API key's hash, or their owner token's) and the name given."""

    __tablename__ = "leaderboard_entries"

    problem_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    entrant: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(64))
    verified: Mapped[bool] = mapped_column(Boolean)  # an API key vouches for the name
    speedup: Mapped[float] = mapped_column(Float)
    submission_id: Mapped[str] = mapped_column(String(32))
    problem_version: Mapped[str] = mapped_column(String(32))
    submitted_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # How the judge timed it (grading/speed_stats.py TIMING_VERSION): a later version's entry replaces it.
    timing_version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")

    __table_args__ = (Index("ix_leaderboard_entries_problem_id_speedup", "problem_id", "speedup"),)


class ExpectedOutput(Base):
    """The reference's outputs under one seed (grading/expected.py), kept within a byte budget: the least
    recently used go first (storage/problem_data.py)."""

    __tablename__ = "expected_outputs"

    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    size: Mapped[int] = mapped_column(Integer, default=0, server_default="0")  # len(data)
    used_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    __table_args__ = (Index("ix_expected_outputs_used_at", "used_at"),)


class UploadedProblem(Base):
    """A problem uploaded through the admin API: its YAML as sent, so it loads again after a restart."""

    __tablename__ = "uploaded_problems"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[str] = mapped_column(String(32))
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class WebhookMessage(Base):
    """A verdict's webhook body, built once and sent byte for byte on every attempt of its delivery, with
    the delivery's id; kept while the delivery is pending. `grading` is the submission's `attempts` when
    the verdict was made: a regrade's new verdict has another, and so a message of its own."""

    __tablename__ = "webhook_messages"

    submission_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    grading: Mapped[int] = mapped_column(Integer)
    message_id: Mapped[str] = mapped_column(String(64))
    body: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(connection: Any, _record: Any) -> None:
            cursor = connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()

        return engine
    return create_engine(url, pool_pre_ping=True)


class Database:
    def __init__(self, url: str) -> None:
        self.engine = make_engine(url)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)

    def create_all(self) -> None:
        Base.metadata.create_all(self.engine)

    def session(self) -> Session:
        return self.sessions()

    def sessions_iter(self) -> Iterator[Session]:
        with self.sessions() as session:
            yield session
