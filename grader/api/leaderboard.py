"""A speed-graded problem's leaderboard: GET /api/problems/{id}/leaderboard (anyone) and
DELETE /api/problems/{id}/leaderboard/{entrant} (the admin clears an entry).

The board is each entrant's best accepted speed-up (grader/storage/leaderboard.py keeps it). What it shows
of an entry is its rank, the entrant's id and name, whether an API key vouches for that name, the speed-up and
when the submission was made: never the source, and the submission's id only to the admin (an id opens the
submission's report and its code, which are its submitter's).
"""

from __future__ import annotations

import logging
import math
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Response
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from grader.api.deps import AdminCallerDep, DatabaseDep, RegistryDep, admin_only
from grader.api.schemas import shown
from grader.containers.protocol import bounded_text
from grader.grading.speed_stats import TIMING_VERSION
from grader.problems.registry import LoadedProblem
from grader.storage import leaderboard
from grader.storage.db import UtcTime

log = logging.getLogger(__name__)

leaderboard_router = APIRouter()

MAX_NAME = 64  # what the board stores of a name (storage/leaderboard.py); a longer stored one is cut here too


class EntryPublic(BaseModel):
    """One entrant's best accepted speed-up."""

    rank: int = Field(description="1 for the fastest; of equal speed-ups, the earlier submission ranks first")
    entrant: str = Field(description="the entrant's id: a hash of who submitted and the name given (DELETE takes it)")
    name: str = Field(description="the name given with the submission (`submitter`), or one made from the entrant")
    verified: bool = Field(
        description="true: an API key vouches for the name; false: the submitter's own word (an owner token)"
    )
    speedup: float = Field(description="the score of the entrant's best accepted submission, against the baseline")
    submitted_at: UtcTime = Field(description="when that submission was made")
    problem_version: str = Field(description="the version of the problem it was graded against")
    timing_version: int = Field(
        description="how the judge timed it: speed-ups of two timing versions do not compare (later ones rank first)"
    )
    submission_id: str | None = Field(
        None, description="the submission that set the entry: shown to the admin (its bearer token) only"
    )


class LeaderboardPublic(BaseModel):
    """A speed-graded problem's board, best first."""

    problem_id: str = Field(description="the problem's id")
    version: str = Field(description="the problem's current version (an entry says which it was graded against)")
    baseline: str = Field(description="the name of the baseline every speed-up is measured against")
    threshold: float = Field(description="the least speed-up accepted")
    score: str = Field(description="geomean (the geometric mean of the sizes' speed-ups) or min (the smallest)")
    device: str = Field(description="where the calls were timed: cpu or cuda")
    timing_version: int = Field(
        description="the judge's current timing version (an entry says which it was timed under)"
    )
    entries: list[EntryPublic] = Field(description="best first, at most `limit`")


ProblemPath = Annotated[str, Path(description="a speed-graded problem's id")]
EntrantPath = Annotated[str, Path(min_length=1, max_length=64, description="an entry's `entrant`")]


async def speed_graded(registry: RegistryDep, problem_id: ProblemPath) -> LoadedProblem:
    """The problem of the path, if it has a board: 404 for an unknown problem or one that is not speed-graded.
    On the loop: a lookup in memory is not worth a thread."""
    problem = registry.get(problem_id)
    if problem is None:
        raise HTTPException(404, f"no problem {shown(problem_id)}")
    if problem.speed is None:
        raise HTTPException(404, f"problem {shown(problem_id)} is not speed-graded: it has no leaderboard")
    return problem


SpeedGradedDep = Annotated[LoadedProblem, Depends(speed_graded)]


def board(
    session: Session, problem: LoadedProblem, *, admin: bool, limit: int = leaderboard.MAX_ENTRIES
) -> LeaderboardPublic:
    """The board as this caller may see it (the page shows the same)."""
    speed = problem.speed
    assert speed is not None  # speed_graded let only such problems through
    entries = []
    for row in leaderboard.entries(session, problem.id, limit=limit):
        if not math.isfinite(row.speedup):  # no verdict stores one; a row that holds one is left off, not a 500
            log.warning("leaderboard entry %s of %s has speed-up %r", row.entrant, problem.id, row.speedup)
            continue
        entries.append(
            EntryPublic(
                rank=len(entries) + 1,
                entrant=row.entrant,
                name=bounded_text(row.name, MAX_NAME),
                verified=bool(row.verified),
                speedup=row.speedup,
                submitted_at=row.submitted_at,
                problem_version=row.problem_version,
                timing_version=row.timing_version or 1,
                submission_id=row.submission_id if admin else None,
            )
        )
    return LeaderboardPublic(
        problem_id=problem.id,
        version=problem.version,
        baseline=speed.baseline,
        threshold=speed.threshold,
        score=speed.score,
        device=speed.device,
        timing_version=TIMING_VERSION,
        entries=entries,
    )


@leaderboard_router.get(
    "/api/problems/{problem_id}/leaderboard",
    tags=["problems"],
    response_model=LeaderboardPublic,
    response_model_exclude_none=True,  # no submission_id key at all for anyone but the admin
    responses={404: {"description": "unknown problem, or one that is not speed-graded"}},
    summary="A speed-graded problem's leaderboard: each entrant's best accepted speed-up, best first",
)
def get_leaderboard(
    problem: SpeedGradedDep,
    db: DatabaseDep,
    admin: AdminCallerDep,
    limit: Annotated[int, Query(ge=1, le=leaderboard.MAX_ENTRIES, description="at most this many entries")] = (
        leaderboard.MAX_ENTRIES
    ),
) -> LeaderboardPublic:
    with db.session() as session:
        return board(session, problem, admin=admin, limit=limit)


@leaderboard_router.delete(
    "/api/problems/{problem_id}/leaderboard/{entrant}",
    tags=["admin"],
    status_code=204,
    responses={
        401: {"description": "no or wrong admin token"},
        403: {"description": "the admin API is off: no GRADER_ADMIN_TOKEN is configured"},
        404: {"description": "no such entry on the problem's board"},
    },
    summary="Clear an entry of a leaderboard (admin); the entrant's next accepted submission enters again",
    dependencies=[Depends(admin_only("the admin API is off: the server has no GRADER_ADMIN_TOKEN"))],
)
def clear_entry(problem_id: ProblemPath, entrant: EntrantPath, db: DatabaseDep) -> Response:
    # By its key alone: an entry of a problem since removed, or no longer speed-graded, can be cleared too.
    with db.session() as session:
        removed = leaderboard.remove(session, problem_id, entrant)
    if not removed:
        raise HTTPException(404, f"no entry {shown(entrant)} on the leaderboard of {shown(problem_id)}")
    return Response(status_code=204)
