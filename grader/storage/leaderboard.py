"""A speed-graded problem's leaderboard: each entrant's best accepted speed-up, ties to the earlier submission.

An entrant is who submitted: an API key's hash and the name given under it (the key vouches for the name a
course gives, `submitter`), or, on a server without keys, a browser's or a CLI's owner token's hash, whatever
name it gives (the submitter's own word, shown as unverified). A submission with neither is not on the board. An entry
only ever rises: a slower accepted submission, or a regrade that measures less, leaves it as it is; the
admin can clear it. Speed-ups of two timing versions (grading/speed_stats.py TIMING_VERSION) do not compare: an
entry timed under a later version replaces one of an earlier, and the board lists the later versions' entries
first (an admin's regrade of a problem's submissions times them again under the current version).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from grader.storage.db import LeaderboardEntry, Submission, utcnow
from grader.vocabulary import Status

MAX_ENTRIES = 1000


@dataclass(frozen=True)
class Entrant:
    id: str  # a hash of who and the name: stable, and nothing to learn from
    name: str
    verified: bool


def entrant_of(row: Any) -> Entrant | None:
    """Who a stored submission's entry belongs to; None for a submission of nobody in particular. Under an API
    key each name is an entrant of its own (a course's key, its students' names); an owner token is one entrant
    whatever name it gives (one browser cannot fill the board), shown under the name of its best submission."""
    name = (row.submitter or "").strip()
    if row.api_key_hash:
        who, shown, verified = f"key:{row.api_key_hash}:{name}", name or f"key {row.api_key_hash[:8]}", True
    elif row.owner_hash:
        who, shown, verified = f"owner:{row.owner_hash}", name or f"anonymous {row.owner_hash[:6]}", False
    else:
        return None
    digest = hashlib.sha256(who.encode("utf-8", "replace")).hexdigest()[:32]
    return Entrant(digest, shown[:64], verified)


def best_speedup(row: Any) -> float | None:
    """The speed-up a stored verdict earns on the board: accepted, timed and past the threshold; else None."""
    speed = row.speed if isinstance(row.speed, dict) else None
    if row.status != Status.ACCEPTED.value or speed is None or speed.get("passed") is not True:
        return None
    value = speed.get("speedup")
    return float(value) if type(value) in (int, float) and value > 0 else None


def timing_version_of(row: Any) -> int:
    """The timing version a stored verdict was timed under: 1 where it says none (or nothing sound)."""
    speed = row.speed if isinstance(row.speed, dict) else {}
    value = speed.get("timing_version")
    return value if type(value) is int and 1 <= value <= 1000 else 1


def record(session: Session, row: Any) -> bool:
    """Enters a stored verdict on its problem's board when it beats the entrant's entry; whether the board changed.
    A verdict for the entry's own submission that is lower (a regrade that no longer accepts it, or times it
    slower) makes the entrant's entry its best other accepted submission, or none."""
    speedup, entrant = best_speedup(row), entrant_of(row)
    if entrant is None:
        return False
    existing = session.get(LeaderboardEntry, (row.problem_id, entrant.id))
    if existing is not None and existing.submission_id == row.id and (speedup is None or speedup < existing.speedup):
        return _recompute(session, row.problem_id, row, entrant)
    if speedup is None:
        return False
    values = {
        "name": entrant.name,
        "verified": entrant.verified,
        "speedup": speedup,
        "submission_id": row.id,
        "problem_version": row.problem_version,
        "submitted_at": row.created_at,
        "updated_at": utcnow(),
        "timing_version": timing_version_of(row),
    }
    if existing is None:
        try:
            session.add(LeaderboardEntry(problem_id=row.problem_id, entrant=entrant.id, **values))
            session.commit()
            return True
        except IntegrityError:  # entered meanwhile by another worker: then only if better
            session.rollback()
    higher = (
        update(LeaderboardEntry)
        .where(
            LeaderboardEntry.problem_id == row.problem_id,
            LeaderboardEntry.entrant == entrant.id,
            or_(
                LeaderboardEntry.timing_version < values["timing_version"],
                (LeaderboardEntry.timing_version == values["timing_version"]) & (LeaderboardEntry.speedup < speedup),
            ),
        )
        .values(**values)
    )
    changed = session.execute(higher).rowcount > 0  # type: ignore[attr-defined]
    session.commit()
    return changed


def _recompute(session: Session, problem_id: str, row: Any, entrant: Entrant) -> bool:
    """The entrant's entry made again from its submissions to the problem: the best accepted speed-up, the
    earliest of equal ones; none when no submission of it is accepted any more."""
    mine = (
        (Submission.api_key_hash == row.api_key_hash) & (Submission.submitter == row.submitter)
        if row.api_key_hash
        else Submission.owner_hash == row.owner_hash
    )
    query = select(Submission).where(
        Submission.problem_id == problem_id, mine, Submission.status == Status.ACCEPTED.value
    )
    best = None  # ((timing version, speed-up), submission): the latest version's best
    for submission in session.scalars(query.order_by(Submission.created_at)):
        value = best_speedup(submission)
        if value is None or entrant_of(submission) != entrant:
            continue
        rank = (timing_version_of(submission), value)
        if best is None or rank > best[0]:
            best = (rank, submission)
    session.execute(
        delete(LeaderboardEntry).where(
            LeaderboardEntry.problem_id == problem_id, LeaderboardEntry.entrant == entrant.id
        )
    )
    session.commit()
    return True if best is None else record(session, best[1]) or True


def entries(session: Session, problem_id: str, limit: int = MAX_ENTRIES) -> list[LeaderboardEntry]:
    """The board, best first (the latest timing version's entries before earlier ones'); equal speed-ups by time
    of submission, the earlier first."""
    query = (
        select(LeaderboardEntry)
        .where(LeaderboardEntry.problem_id == problem_id)
        .order_by(
            LeaderboardEntry.timing_version.desc(),
            LeaderboardEntry.speedup.desc(),
            LeaderboardEntry.submitted_at,
            LeaderboardEntry.entrant,
        )
        .limit(limit)
    )
    return list(session.scalars(query))


def remove(session: Session, problem_id: str, entrant: str) -> bool:
    """The admin clears an entry; whether there was one."""
    result = session.execute(
        delete(LeaderboardEntry).where(LeaderboardEntry.problem_id == problem_id, LeaderboardEntry.entrant == entrant)
    )
    session.commit()
    return result.rowcount > 0  # type: ignore[attr-defined]
