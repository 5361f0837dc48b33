"""GET /api/me/submissions: the caller's own submissions, newest first: its API key identifies it or, on a
server without keys, the X-Owner-Token its submissions were made with (a browser makes one and keeps it;
`grader submit` sends GRADER_OWNER_TOKEN)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel

from grader.api.deps import DatabaseDep, SubmitterDep
from grader.grading.verdict import Status
from grader.storage import crud
from grader.storage.db import UtcTime
from grader.submissions.metadata import stored_metadata
from grader.submissions.submitters import Submitter

me_router = APIRouter(tags=["submissions"])


class SubmissionSummary(BaseModel):
    id: str
    problem_id: str
    problem_version: str
    status: Status
    score: float
    created_at: UtcTime
    finished_at: UtcTime | None = None
    batch_id: str | None = None
    metadata: dict[str, Any] | None = None


class SubmissionList(BaseModel):
    submissions: list[SubmissionSummary]
    next: str | None = None  # pass as ?before= for the next (older) page


def _owner(submitter: Submitter) -> tuple[str | None, str | None]:
    """(api_key_hash, owner_hash) as the caller's submissions are stored."""
    if submitter.key_hash is not None:
        return submitter.key_hash, None
    return None, submitter.owner_hash


@me_router.get(
    "/api/me/submissions",
    response_model=SubmissionList,
    responses={
        401: {"description": "no valid API key"},
        404: {"description": "no API keys on this server, and no X-Owner-Token sent"},
    },
)
def my_submissions(
    submitter: SubmitterDep,
    db: DatabaseDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    before: Annotated[str | None, Query(max_length=64, description="a submission id: list older ones")] = None,
    problem_id: Annotated[str | None, Query(max_length=64)] = None,
) -> SubmissionList:
    """The caller's own submissions, newest first (the API key identifies the caller; without keys, the
    X-Owner-Token its submissions were made with)."""
    if submitter.key_hash is None and submitter.owner_hash is None:
        raise HTTPException(
            404,
            "this server has no API keys (GRADER_API_KEYS): send the X-Owner-Token your submissions were made with",
        )
    with db.session() as session:
        cursor = None
        if before is not None:
            anchor = crud.get_submission(session, submission_id=before)
            if anchor is None or (anchor.api_key_hash, anchor.owner_hash) != _owner(submitter):
                raise HTTPException(422, f"before: no submission {before!r} of yours")
            cursor = anchor.created_at
        key_hash, owner_hash = _owner(submitter)
        rows = crud.list_by_key(
            session,
            api_key_hash=key_hash,
            owner_hash=owner_hash,
            limit=limit + 1,
            before=cursor,
            problem_id=problem_id,
        )
        page = [
            SubmissionSummary(
                id=row.id,
                problem_id=row.problem_id,
                problem_version=row.problem_version,
                status=Status(row.status),
                score=row.score,
                created_at=row.created_at,
                finished_at=row.finished_at,
                batch_id=row.batch_id,
                metadata=stored_metadata(row.client_metadata),
            )
            for row in rows[:limit]
        ]
    return SubmissionList(submissions=page, next=page[-1].id if len(rows) > limit else None)
