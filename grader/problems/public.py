"""What anyone may see of a problem: never the reference, hidden tests or pitfalls' code."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from grader.problems.custom_test import CustomTest
from grader.problems.registry import LoadedProblem
from sandbox.runner.messages import Limits


class ProblemSummary(BaseModel):
    id: str
    title: str
    difficulty: str
    tags: list[str]
    version: str
    source: str = ""
    test_count: int = 0
    track: str | None = Field(None, description="the series of problems it belongs to, done in `order`")
    order: int | None = Field(None, description="its place in its track: 1 first")
    speed_graded: bool = Field(False, description="accepted only when fast enough too (it has a leaderboard)")


class VisibleTest(BaseModel):
    name: str
    code: str
    weight: float
    limits: Limits | None = Field(None, description="its own limits, where they are not the problem's")


class ArgumentPublic(BaseModel):
    name: str
    type: str = Field(description="int, float, bool or tensor")
    dtype: str | None = None
    shape: list[int | str] | None = Field(None, description="sizes, or names of dimensions shared between arguments")
    min: int | float | str | None = Field(None, description="a number, or an earlier int argument (`n - 1`)")
    max: int | float | str | None = None
    finite: bool = True
    max_elements: int | None = None
    default: Any = None
    description: str = ""


class CustomTestPublic(BaseModel):
    name: str
    description: str
    code: str = Field(description="the test's body; the arguments are in scope as names")
    arguments: list[ArgumentPublic]
    dimensions: dict[str, dict[str, int]] = Field(default_factory=dict, description="min and max size by name")

    @classmethod
    def of(cls, test: CustomTest) -> CustomTestPublic:
        arguments = [
            ArgumentPublic(**{**argument.model_dump(), **({} if argument.type == "tensor" else {"max_elements": None})})
            for argument in test.arguments
        ]
        return cls(
            name=test.name,
            description=test.description,
            code=test.code,
            arguments=arguments,
            dimensions={name: limits.model_dump() for name, limits in test.dimensions.items()},
        )


class SpeedPublic(BaseModel):
    """How a speed-graded problem is timed: all of it public (the baseline is the code to beat)."""

    call: str = Field(description="the function timed")
    inputs: str = Field(description="the body that builds one call's arguments from `size`")
    sizes: list[dict[str, Any]] = Field(description="each size's name and parameters")
    baseline: str
    baselines: list[dict[str, str]] = Field(description="each baseline's name and code")
    warmup: int
    repeats: int
    fresh_inputs: bool
    threshold: float = Field(description="the least speed-up accepted")
    score: str = Field(description="geomean (the geometric mean of the sizes' speed-ups) or min (the smallest)")
    device: str
    time_s: float = Field(description="each call's time limit")
    rtol: float
    atol: float


class ProblemPublic(ProblemSummary):
    statement: str
    starter_code: str
    entry_points: list[str]
    limits: Limits
    helpers: str = ""
    visible_tests: list[VisibleTest]
    hidden_tests: int
    custom_test: CustomTestPublic | None = Field(
        None,
        description="the test POST /api/runs runs on values of one's own (`inputs`), with its arguments; null: "
        "Run takes the visible tests only",
    )
    hidden_results: str = Field(
        "summary",
        description="what a verdict shows of the hidden tests: summary (how many passed, the first that did not) "
        "or per-test (also each one's status)",
    )
    speed: SpeedPublic | None = Field(None, description="how the problem is timed, if it is speed-graded")


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
        track=p.track,
        order=p.order,
        speed_graded=p.speed is not None,
    )


DIFFICULTY_ORDER = {"easy": 0, "medium": 1, "hard": 2}


def by_track(problems: list[ProblemSummary]) -> list[tuple[str | None, list[ProblemSummary]]]:
    """The list page's order: each track (by name) with its problems in their `order`, then the problems of
    no track, easiest first; ties by title."""

    def place(p: ProblemSummary) -> tuple[int, int, str]:
        return (p.order if p.order is not None else 1_000_000, DIFFICULTY_ORDER.get(p.difficulty, 3), p.title.lower())

    tracks = sorted({p.track for p in problems if p.track is not None}, key=str.lower)
    grouped: list[tuple[str | None, list[ProblemSummary]]] = [
        (track, sorted((p for p in problems if p.track == track), key=place)) for track in tracks
    ]
    rest = [p for p in problems if p.track is None]
    if rest:
        grouped.append((None, sorted(rest, key=lambda p: (DIFFICULTY_ORDER.get(p.difficulty, 3), p.title.lower()))))
    return grouped


def problem_public(problem: LoadedProblem) -> ProblemPublic:
    p = problem.problem
    return ProblemPublic(
        **problem_summary(problem).model_dump(),
        statement=p.statement,
        starter_code=p.starter_code,
        entry_points=list(p.entry_points),
        limits=problem.limits,
        helpers=p.helpers,
        visible_tests=[
            VisibleTest(name=t.name, code=t.code, weight=t.weight, limits=limits if limits != problem.limits else None)
            for t, limits in zip(p.tests, problem.test_limits, strict=True)
            if t.visible
        ],
        hidden_tests=sum(1 for t in p.tests if not t.visible),
        custom_test=CustomTestPublic.of(p.custom_test) if p.custom_test is not None else None,
        hidden_results=p.hidden_results,
        speed=speed_public(problem),
    )


def speed_public(problem: LoadedProblem) -> SpeedPublic | None:
    speed = problem.speed
    if speed is None:
        return None
    return SpeedPublic(
        call=speed.call or problem.entry_points[0],
        inputs=speed.inputs,
        sizes=[{"name": size.name, **size.params} for size in speed.sizes],
        baseline=speed.baseline,
        baselines=[{"name": baseline.name, "code": baseline.code} for baseline in speed.baselines],
        warmup=speed.warmup,
        repeats=speed.repeats,
        fresh_inputs=speed.fresh_inputs,
        threshold=speed.threshold,
        score=speed.score,
        device=speed.device,
        time_s=problem.speed_limits.time_s,
        rtol=speed.check.rtol,
        atol=speed.check.atol,
    )
