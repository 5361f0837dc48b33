"""What a submitter sees of a verdict (grader/submissions/public.py): hidden tests as a count unless the
problem opts in, the admin's every field, a running submission's tests as an in-order prefix with no
hidden test before the verdict, and the event stream's history built from it (grader/api/events.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from grader.api.events import _last_event_id, pending_events, verdict_id
from grader.grading import verdict as verdicts
from grader.grading.verdict import Status
from grader.problems.registry import ProblemError, Registry, parse_problem
from grader.submissions.public import plain_details, public_submission
from sandbox.runner.messages import Limits

PROBLEM = """\
id: three-hidden
title: Three hidden tests
difficulty: easy
statement: Return twice the input.
starter_code: |
  def double(x):
      pass
entry_points: [double]
reference: |
  def double(x):
      return 2 * x
tests:
  - name: first
    visible: true
    code: |
      return {"out": double(1)}
  - name: second
    visible: true
    code: |
      return {"out": double(2)}
  - name: h1
    code: |
      return {"out": double(3)}
  - name: h2
    code: |
      return {"out": double(4)}
  - name: h3
    code: |
      return {"out": double(5)}
"""
STATUSES = [
    verdicts.TestStatus.PASSED,
    verdicts.TestStatus.FAILED,
    verdicts.TestStatus.PASSED,
    verdicts.TestStatus.ERROR,
    verdicts.TestStatus.FAILED,
]


def _problem(extra: str = "") -> Any:
    text = PROBLEM.replace("tests:\n", extra + "tests:\n")
    return Registry(Limits(time_s=2, memory_mb=1024, output_kb=256)).make(parse_problem(text, "p.yaml"))


def _results(count: int = 5) -> list[verdicts.TestResult]:
    problem = _problem()
    return [
        verdicts.TestResult(
            index=i,
            name=test.name,
            visible=test.visible,
            status=STATUSES[i],
            message=f"why {i}",
            time_ms=1.0 + i,
            details={"reason": f"reason {i}"},
            output=f"printed {i}",
            hint="a hint" if STATUSES[i] == verdicts.TestStatus.FAILED else None,
        )
        for i, test in enumerate(problem.tests[:count])
    ]


def _row(status: Status, version: str) -> SimpleNamespace:
    now = datetime.now(UTC)
    return SimpleNamespace(
        id="a" * 32,
        problem_id="three-hidden",
        problem_version=version,
        status=status.value,
        score=0.4,
        message="second: failed",
        hint="a hint",
        line=None,
        traceback=None,
        created_at=now,
        started_at=now,
        finished_at=now,
        seed=12345,
        callback_url=None,
        webhook_status=None,
        webhook_attempts=0,
        webhook_error=None,
    )


def test_the_hidden_tests_are_a_count_and_the_first_that_did_not_pass() -> None:
    problem = _problem()
    public = public_submission(_row(Status.WRONG_ANSWER, problem.version), _results(), problem)
    assert public.hidden.model_dump() == {"total": 3, "passed": 1, "first_failed": 2, "per_test": False}
    assert public.tests_total == 5 and public.seed is None
    hidden = [test.model_dump() for test in public.tests if not test.visible]
    assert [test["name"] for test in hidden] == ["hidden test 1", "hidden test 2", "hidden test 3"]
    for test in hidden:
        assert {key for key, value in test.items() if value is not None} == {"index", "name", "visible"}
    visible = public.tests[1]
    assert visible.status == verdicts.TestStatus.FAILED and visible.message == "why 1" and visible.hint == "a hint"


def test_a_problem_may_opt_into_each_hidden_tests_status_and_nothing_more() -> None:
    problem = _problem("hidden_results: per-test\n")
    public = public_submission(_row(Status.WRONG_ANSWER, problem.version), _results(), problem)
    assert public.hidden.per_test is True
    hidden = [test.model_dump() for test in public.tests if not test.visible]
    assert [test["status"] for test in hidden] == ["passed", "error", "failed"]
    for test in hidden:
        assert {key for key, value in test.items() if value is not None} == {"index", "name", "visible", "status"}


def test_an_unknown_hidden_results_value_is_refused_when_the_file_loads() -> None:
    with pytest.raises(ProblemError) as refused:
        _problem("hidden_results: everything\n")
    assert "hidden_results" in str(refused.value)


def test_the_admin_sees_every_test_whole_and_the_seed() -> None:
    problem = _problem()
    public = public_submission(_row(Status.WRONG_ANSWER, problem.version), _results(), problem, admin=True)
    assert public.seed == 12345 and public.hidden.per_test is True
    third = public.tests[3]
    assert third.name == "hidden test 2" and third.status == verdicts.TestStatus.ERROR
    assert (third.message, third.time_ms, third.details, third.output) == (
        "why 3",
        4.0,
        {"reason": "reason 3"},
        "printed 3",
    )


def test_a_running_submission_shows_a_prefix_and_no_hidden_test() -> None:
    problem = _problem()
    row = _row(Status.RUNNING, problem.version)
    landed = _results(4)
    public = public_submission(row, landed, problem)
    assert [test.index for test in public.tests] == [0, 1], "no hidden test before the verdict"
    assert public.hidden.model_dump() == {"total": 3, "passed": None, "first_failed": None, "per_test": False}
    assert public.tests_total == 5
    opted = _problem("hidden_results: per-test\n")
    assert [t.index for t in public_submission(_row(Status.RUNNING, opted.version), landed, opted).tests] == [0, 1]
    gap = [landed[0], landed[2], landed[3]]  # test 1 has not landed: nothing after it is shown
    assert [test.index for test in public_submission(row, gap, problem).tests] == [0]
    admin = public_submission(row, landed, problem, admin=True)
    assert [test.index for test in admin.tests] == [0, 1, 2, 3]


def test_the_stream_is_one_history_each_event_once() -> None:
    """Each event has its place: status 0 (queued) or 1 (running), test i at 2 + i, the verdict last; a
    stream resumed after any of them sends exactly the rest, and a final submission replays `running`."""
    problem = _problem()
    running = public_submission(_row(Status.RUNNING, problem.version), _results(4), problem)
    assert [(i, kind) for i, kind, _ in pending_events(running, -1)] == [(1, "status"), (2, "test"), (3, "test")]
    final = public_submission(_row(Status.WRONG_ANSWER, problem.version), _results(), problem)
    history = pending_events(final, -1)
    assert [(i, kind) for i, kind, _ in history] == [(1, "status")] + [(2 + i, "test") for i in range(5)] + [
        (7, "verdict")
    ]
    assert history[0][2]["status"] == "running", "no final status before the tests"
    assert all(data["hint"] is None for _, kind, data in history if kind == "test"), "hints with the verdict only"
    assert history[-1][2]["tests"][1]["hint"] == "a hint"
    assert verdict_id(final) == 7
    for after in range(-1, 8):
        assert pending_events(final, after) == [event for event in history if event[0] > after]
    queued = public_submission(_row(Status.QUEUED, problem.version), [], problem)
    assert [(i, kind) for i, kind, _ in pending_events(queued, -1)] == [(0, "status")]


@pytest.mark.parametrize(
    ("header", "after"),
    [(None, -1), ("", -1), ("7", 7), (" 7 ", 7), ("-1", -1), ("x", -1), ("1e3", -1), ("٣", -1), ("9" * 11, -1)],
)
def test_last_event_id_is_an_event_or_nothing(header: str | None, after: int) -> None:
    assert _last_event_id(header) == after


def test_details_leave_as_plain_bounded_json() -> None:
    nested: Any = []
    for _ in range(50):
        nested = [nested]
    shown = plain_details(
        {"big": 10**4000, "nan": float("nan"), "inf": -float("inf"), "zero": -0.0, "deep": nested, "set": {1, 2}}
    )
    assert shown["big"] == "100000000000…0000 (4001 digits)"
    assert (shown["nan"], shown["inf"], shown["zero"]) == ("nan", "-inf", -0.0)
    assert shown["set"] == "set"
    depth, value = 0, shown["deep"]
    while isinstance(value, list) and value:
        depth, value = depth + 1, value[0]
    assert depth < 10
    assert plain_details({str(i): i for i in range(1000)}).keys() == {str(i) for i in range(64)}


def test_times_are_iso_8601_with_their_time_zone() -> None:
    """SQLite gives back the UTC times it was given without a zone: the API says they are UTC."""
    from datetime import datetime

    from grader.api.me import SubmissionSummary
    from grader.storage.db import as_utc

    naive = datetime(2026, 12, 2, 0, 5, 17, 722848)
    assert as_utc(naive).isoformat() == "2026-12-02T00:05:17.722848+00:00"
    summary = SubmissionSummary.model_validate(
        {
            "id": "s",
            "problem_id": "p",
            "problem_version": "1",
            "status": "accepted",
            "score": 1.0,
            "created_at": naive,
            "finished_at": naive,
        }
    )
    dumped = summary.model_dump(mode="json")
    assert dumped["created_at"] == dumped["finished_at"] == "2026-12-02T00:05:17.722848Z"
