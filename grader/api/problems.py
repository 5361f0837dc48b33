"""GET /api/problems and GET /api/problems/{id}: what anyone may see of the problems."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException

from grader.api.deps import RegistryDep
from grader.api.schemas import shown
from grader.problems.public import ProblemPublic, ProblemSummary, problem_public, problem_summary

problems_router = APIRouter(tags=["problems"])


@problems_router.get("/api/problems", response_model=list[ProblemSummary])
def list_problems(registry: RegistryDep) -> list[ProblemSummary]:
    return [problem_summary(problem) for problem in registry.all()]


@problems_router.get("/api/problems/{problem_id}", response_model=ProblemPublic)
def get_problem(problem_id: str, registry: RegistryDep) -> ProblemPublic:
    problem = registry.get(problem_id)
    if problem is None:
        raise HTTPException(404, f"no problem {shown(problem_id)}")
    return problem_public(problem)
