"""Speed-graded verdicts for tests that run no sandbox: the timing a grader stores (grading/speed_stats.py),
and a stand-in for the Grader that hands back a verdict made here instead of running Docker. Everything else
is the real path: the submission is POSTed through the API (its API key or owner token, its name), taken and
stored by submissions/processing.py, which enters it on the leaderboard."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from grader.components import Components, build
from grader.config import Settings
from grader.grading.speed_stats import TIMING_VERSION, SizeSpeed, SpeedResult
from grader.grading.verdict import Status, TestResult, TestStatus, Verdict
from tests.conftest import SERVICE_PROBLEMS_DIR

SPEED_PROBLEM = "pairwise-distances"  # problems/: speed-graded
PLAIN_PROBLEM = "embedding-layer"  # problems/: not speed-graded
SOURCE = "def pairwise_distances(x, y):\n    return (x[:, None] - y[None]).norm(dim=-1)\n"


def size_speeds(speedups: Sequence[float], names: Sequence[str] | None = None) -> list[SizeSpeed]:
    """A size per speed-up, each with an interval around it and times that make it."""
    names = names or [f"{16 * (i + 1)} x {16 * (i + 1)}" for i in range(len(speedups))]
    return [
        SizeSpeed(
            name=name,
            speedup=speedup,
            interval=(round(speedup * 0.9, 4), round(speedup * 1.1, 4)),
            submission_ms=0.05 * (i + 1),
            baseline_ms=round(0.05 * (i + 1) * speedup, 4),
            submission_first_ms=1.5,
            baseline_first_ms=0.8,
            repeats=15,
        )
        for i, (name, speedup) in enumerate(zip(names, speedups, strict=True))
    ]


def speed_result(speedup: float, *, threshold: float = 5.0, **fields: Any) -> SpeedResult:
    """A timing whose score is `speedup` (three sizes around it unless `sizes` is given), passed at `threshold`."""
    values: dict[str, Any] = {
        "baseline": "pair-loop",
        "threshold": threshold,
        "speedup": speedup,
        "interval": (round(speedup * 0.9, 4), round(speedup * 1.1, 4)),
        "passed": speedup >= threshold,
        "sizes": size_speeds([speedup / 2, speedup, speedup * 2]),
        "submission_import_ms": 2.5,
        "baseline_import_ms": 2.0,
        "setup_charge_ms": 0.0012,
        "cpu": 1,
        "message": f"{speedup:g}x the baseline 'pair-loop'",
        "timing_version": TIMING_VERSION,  # as the grader times today
    }
    return SpeedResult(**(values | fields))


def verdict_with(service: Components, speed: SpeedResult | None, problem_id: str = SPEED_PROBLEM) -> Verdict:
    """The verdict the grader makes of a submission that passed every test: accepted when `speed` passed, too slow
    (time_limit_exceeded, as grading/speed.py says it) when not."""
    problem = service.registry.get(problem_id)
    assert problem is not None
    tests = [
        TestResult(index=i, name=test.name, visible=test.visible, status=TestStatus.PASSED, time_ms=1.0)
        for i, test in enumerate(problem.tests)
    ]
    status = Status.ACCEPTED if speed is None or speed.passed else Status.TIME_LIMIT_EXCEEDED
    message = speed.message if speed is not None and not speed.passed else None
    return Verdict(status=status, score=1.0, tests=tests, speed=speed, message=message)


class VerdictGrader:
    """Stands in for grading/grader.py's Grader (the one part that runs Docker): hands back `verdict`."""

    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict

    def grade_submission(self, problem: Any, source: str, on_test: Any = None, seed: int | None = None) -> Verdict:
        return self.verdict


def submit(
    http: TestClient, *, headers: dict[str, str] | None = None, name: str | None = None, problem_id: str = SPEED_PROBLEM
) -> str:
    """POSTs a submission as `headers` say who, under `name`; its id."""
    body = {"problem_id": problem_id, "source": SOURCE} | ({"submitter": name} if name is not None else {})
    created = http.post("/api/submissions", json=body, headers=headers or {})
    assert created.status_code == 202, created.text
    return str(created.json()["id"])


def grade(service: Components, submission_id: str, verdict: Verdict) -> None:
    """Grades a stored submission into `verdict` as a worker would (processing.py: taken, stored, entered on the
    board)."""
    service.processor.grader = VerdictGrader(verdict)  # type: ignore[assignment]
    service.processor.process(submission_id)


def submit_and_grade(
    service: Components,
    http: TestClient,
    verdict: Verdict,
    *,
    headers: dict[str, str] | None = None,
    name: str | None = None,
    problem_id: str = SPEED_PROBLEM,
) -> str:
    submission_id = submit(http, headers=headers, name=name, problem_id=problem_id)
    grade(service, submission_id, verdict)
    return submission_id


def graderless_service(root: Path, **settings: Any) -> Components:
    """A service whose grader never runs (its verdicts come from verdict_with): the problems loaded, the database
    made. Nothing is started: the tests drive processing themselves (submit_and_grade)."""
    service = build(Settings(data_dir=root / "data", problems_dir=SERVICE_PROBLEMS_DIR, problems_poll_s=0, **settings))
    service.db.create_all()
    service.watcher.poll()
    return service
