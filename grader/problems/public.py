"""What anyone may see of a problem: never the reference, hidden tests or pitfalls' code."""

from __future__ import annotations

from pydantic import BaseModel, Field

from grader.problems.registry import EffectiveLimits, LoadedProblem


class ProblemSummary(BaseModel):
    id: str
    title: str
    difficulty: str
    tags: list[str]
    version: str
    source: str = ""
    test_count: int = 0


class VisibleTest(BaseModel):
    name: str
    code: str
    weight: float


class ProblemPublic(ProblemSummary):
    statement: str
    starter_code: str
    entry_points: list[str]
    limits: EffectiveLimits
    helpers: str = ""
    visible_tests: list[VisibleTest]
    hidden_tests: int
    runs: str = Field(
        "all",
        description="what POST /api/runs may run: the visible tests and one's own test bodies (all), "
        "or the visible tests only (visible-only)",
    )


def problem_summary(problem: LoadedProblem) -> ProblemSummary:
    p = problem.problem
    return ProblemSummary(
        id=p.id,
        title=p.title,
        difficulty=p.difficulty,
        tags=list(p.tags),
        version=problem.version,
        source=p.source,
        test_count=len(p.tests),
    )


def problem_public(problem: LoadedProblem) -> ProblemPublic:
    p = problem.problem
    return ProblemPublic(
        **problem_summary(problem).model_dump(),
        statement=p.statement,
        starter_code=p.starter_code,
        entry_points=list(p.entry_points),
        limits=problem.limits,
        helpers=p.helpers,
        visible_tests=[VisibleTest(name=t.name, code=t.code, weight=t.weight) for t in p.tests if t.visible],
        hidden_tests=sum(1 for t in p.tests if not t.visible),
        runs=p.runs,
    )
