"""What a submitter may see of a submission: public models, and reading one from the database.

Every view of a submission (the JSON API, the event stream, the report page, webhooks) reads it
through read_submission, so none of them can show more than this module lets out:

- Hidden tests. By default the verdict tells how many there are, how many passed and the number of the
  first that did not pass (`hidden`, as Codeforces and LeetCode do); each is listed as "hidden test N"
  with no status. A problem that opts in (`hidden_results: per-test`) shows each one's status too, and
  nothing else. What a submission chooses per hidden test (pass, fail, raise) is so worth a handful of
  bits per submission, not one symbol per test. The admin (`admin=True`) sees every field of every test.
- Timing. While a submission runs, its tests are shown as a prefix in file order: each visible test once
  it and every test before it have landed, no hidden test before the verdict (a hidden test's landing
  would tell how long it took). So hidden tests' progress is released all at once, with the verdict.
- Values. Whatever a stored verdict holds, what goes out is plain JSON within bounds (plain_details):
  numbers JSON and every language can read, texts a UTF-8 encoder takes, a bounded nesting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, ValidationError
from sqlalchemy import Row

from grader.containers.protocol import MAX_BENCH_SIZES, bounded_text
from grader.grading.speed_stats import SpeedResult
from grader.grading.verdict import FINAL, Status, TestResult, TestStatus
from grader.problems.registry import LoadedProblem, Registry
from grader.storage import crud
from grader.storage.db import Database, Submission, UtcTime
from grader.submissions.metadata import stored_metadata
from sandbox.runner.protocol import MAX_SIZE_NAME

MAX_INT_DIGITS = 64  # a longer integer in details is shown as text: its first and last digits, and its length
MAX_TEXT = 16 * 1024  # any one text of a test, whatever the judge capped it to when it was stored
MAX_DETAIL_TEXT = 1024
MAX_ITEMS = 64
MAX_DEPTH = 8
STR_BITS = 14_000  # about 4,200 digits: within the 4,300 that Python converts to text by default


class SubmissionAccepted(BaseModel):
    id: str
    status: Status


class TestPublic(BaseModel):
    index: int | None = Field(None, description="the test's position in the problem file, from 0")
    name: str = Field(description='a visible test\'s name; a hidden one is "hidden test N"')
    visible: bool
    status: TestStatus | None = Field(
        None, description="null for a hidden test whose status is not shown (see the verdict's `hidden`)"
    )
    message: str | None = None
    time_ms: float | None = None
    memory_mb: int | None = Field(None, description="the test's peak resident memory in MB; null where not measured")
    memory_limit_mb: int | None = Field(None, description="the test's memory limit in MB")
    hint: str | None = None
    details: dict[str, Any] | None = None
    traceback: str | None = None
    line: int | None = None
    output: str | None = Field(None, description="what the submission printed during the test (visible tests)")


class HiddenSummary(BaseModel):
    """What the hidden tests come to, without saying which passed."""

    total: int = Field(description="how many hidden tests there are")
    passed: int | None = Field(None, description="how many of them passed; null until the verdict")
    first_failed: int | None = Field(
        None,
        description='N of the first hidden test that did not pass ("hidden test N"); null if every one passed, '
        "or until the verdict",
    )
    per_test: bool = Field(False, description="whether `tests` also shows each hidden test's status")


class WebhookPublic(BaseModel):
    url: str
    status: str = Field(description="pending, delivered, or failed (retries ran out)")
    attempts: int
    error: str | None = None


class SubmissionPublic(BaseModel):
    id: str
    problem_id: str
    problem_version: str
    status: Status
    score: float
    message: str | None = None
    hint: str | None = None
    line: int | None = None
    traceback: str | None = None
    created_at: UtcTime
    started_at: UtcTime | None = None
    finished_at: UtcTime | None = None
    seed: int | None = Field(None, description="what the hidden tests' inputs were drawn from; shown to the admin only")
    metadata: dict[str, Any] | None = Field(None, description="the object sent with the submission, as sent")
    batch_id: str | None = Field(None, description="the batch it came in (POST /api/submissions/batch)")
    webhook: WebhookPublic | None = Field(None, description="the delivery of the verdict to callback_url")
    tests_total: int | None = Field(
        None, description="how many tests the submission has: its problem's while it runs, the verdict's once final"
    )
    hidden: HiddenSummary = Field(default_factory=lambda: HiddenSummary(total=0))
    tests: list[TestPublic]
    speed: SpeedResult | None = Field(
        None, description="a speed-graded problem's timing against its baseline, once every test passed"
    )
    submitter: str | None = Field(None, description="the name given with the submission (its leaderboard's)")


# -- values --------------------------------------------------------------------------------------------
def _text(value: str | None, limit: int = MAX_TEXT) -> str | None:
    return None if value is None else bounded_text(value, limit)


def _number(value: float) -> float | str:
    return value if math.isfinite(value) else str(value)  # "nan", "inf", "-inf", as the judge writes them


def _integer(value: int) -> int | str:
    if -(10**MAX_INT_DIGITS) < value < 10**MAX_INT_DIGITS:
        return value
    sign = "-" if value < 0 else ""
    bits = abs(value).bit_length()
    if bits > STR_BITS:  # str() refuses integers past sys.get_int_max_str_digits() digits
        return f"{sign}an integer of about {int(bits * math.log10(2))} digits"
    digits = str(abs(value))
    return f"{sign}{digits[:12]}…{digits[-4:]} ({len(digits)} digits)"


def plain_details(value: Any, depth: int = 0) -> Any:
    """A copy of stored details that every view can carry: JSON types only, finite floats (NaN and the
    infinities as the strings the judge uses for them), integers of at most MAX_INT_DIGITS digits, texts
    bounded and encodable, at most MAX_ITEMS entries per level and MAX_DEPTH levels."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return _integer(value)
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, str):
        return bounded_text(value, MAX_DETAIL_TEXT)
    if depth >= MAX_DEPTH:
        return "…"
    if isinstance(value, dict):
        items = list(value.items())[:MAX_ITEMS]
        return {bounded_text(str(key), 100): plain_details(item, depth + 1) for key, item in items}
    if isinstance(value, (list, tuple)):
        return [plain_details(item, depth + 1) for item in list(value)[:MAX_ITEMS]]
    return bounded_text(type(value).__name__, 100)


def _time(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) and value >= 0 else None


def _megabytes(value: int | None) -> int | None:
    return value if isinstance(value, int) and 0 <= value <= 1 << 40 else None


def _score(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and 0 <= value <= 1 else 0.0


# -- tests ---------------------------------------------------------------------------------------------
def per_test_hidden(problem: LoadedProblem | None) -> bool:
    """Whether the problem opted into showing each hidden test's status."""
    return problem is not None and problem.problem.hidden_results == "per-test"


def _shown(result: TestResult, number: int | None, *, status: bool, everything: bool) -> TestPublic:
    """One test as shown: a visible test (or any, for the admin) whole, a hidden one by its number."""
    name = result.name if result.visible else f"hidden test {number}"
    if not (result.visible or everything):
        return TestPublic(index=result.index, name=name, visible=False, status=result.status if status else None)
    return TestPublic(
        index=result.index,
        name=bounded_text(name, 200),
        visible=result.visible,
        status=result.status,
        message=_text(result.message),
        time_ms=_time(result.time_ms),
        memory_mb=_megabytes(result.memory_mb),
        memory_limit_mb=_megabytes(result.memory_limit_mb),
        hint=_text(result.hint),
        details=plain_details(result.details) if isinstance(result.details, dict) else None,
        traceback=_text(result.traceback),
        line=result.line,
        output=_text(result.output),
    )


def released(results: list[TestResult], *, final: bool, admin: bool) -> list[TestResult]:
    """The tests a view may show now: all of them once final; before, the landed prefix in file order,
    up to the first hidden test (for the admin, up to the first that has not landed)."""
    ordered = sorted(results, key=lambda result: result.index)
    if final:
        return ordered
    shown = []
    for position, result in enumerate(ordered):
        if result.index != position or not (result.visible or admin):
            break
        shown.append(result)
    return shown


def public_tests(
    results: list[TestResult], problem: LoadedProblem | None, *, final: bool = True, admin: bool = False
) -> list[TestPublic]:
    """The tests as this viewer may see them (see the module's docstring)."""
    status = admin or per_test_hidden(problem)
    shown, hidden = [], 0
    for result in released(results, final=final, admin=admin):
        if not result.visible:
            hidden += 1
        shown.append(_shown(result, hidden, status=status, everything=admin))
    return shown


def hidden_summary(
    results: list[TestResult], problem: LoadedProblem | None, *, final: bool, admin: bool = False
) -> HiddenSummary:
    per_test = admin or per_test_hidden(problem)
    if not final:
        total = sum(1 for test in problem.tests if not test.visible) if problem is not None else 0
        return HiddenSummary(total=total, per_test=per_test)
    hidden = [result for result in sorted(results, key=lambda result: result.index) if not result.visible]
    first = next((number for number, result in enumerate(hidden, 1) if result.status != TestStatus.PASSED), None)
    passed = sum(1 for result in hidden if result.status == TestStatus.PASSED)
    return HiddenSummary(total=len(hidden), passed=passed, first_failed=first, per_test=per_test)


def public_submission(
    submission: Submission | Row[Any],
    results: list[TestResult],
    problem: LoadedProblem | None,
    *,
    admin: bool = False,
) -> SubmissionPublic:
    status = Status(submission.status)
    final = status in FINAL
    current = problem is not None and problem.version == submission.problem_version
    return SubmissionPublic(
        id=submission.id,
        problem_id=submission.problem_id,
        problem_version=submission.problem_version,
        status=status,
        score=_score(submission.score),
        message=_text(submission.message),
        hint=_text(submission.hint),
        line=submission.line,
        traceback=_text(submission.traceback),
        created_at=submission.created_at,
        started_at=submission.started_at,
        finished_at=submission.finished_at,
        seed=submission.seed if admin else None,
        metadata=stored_metadata(getattr(submission, "client_metadata", None)),
        batch_id=getattr(submission, "batch_id", None),
        webhook=WebhookPublic(
            url=submission.callback_url,
            status=submission.webhook_status or "pending",
            attempts=submission.webhook_attempts or 0,
            error=_text(submission.webhook_error),
        )
        if submission.callback_url
        else None,
        tests_total=len(results) if final else (len(problem.tests) if problem is not None and current else None),
        hidden=hidden_summary(results, problem if final or current else None, final=final, admin=admin),
        tests=public_tests(results, problem, final=final, admin=admin),
        speed=stored_speed(getattr(submission, "speed", None)),
        submitter=getattr(submission, "submitter", None),
    )


def stored_speed(stored: Any) -> SpeedResult | None:
    """A stored timing, bounded as every view carries it (its texts cut, its details plain, at most as many
    sizes as a problem may have); None for one that no longer reads as one (a row from an older release, a
    number that is not finite)."""
    if not isinstance(stored, dict):
        return None
    try:
        speed = SpeedResult.model_validate(stored)
    except (ValidationError, TypeError, ValueError):
        return None
    sizes = [
        size.model_copy(update={"name": bounded_text(size.name, MAX_SIZE_NAME)})
        for size in speed.sizes[:MAX_BENCH_SIZES]
    ]
    return speed.model_copy(
        update={
            "baseline": bounded_text(speed.baseline, 100),
            "message": _text(speed.message),
            "details": plain_details(speed.details) if speed.details is not None else None,
            "sizes": sizes,
        }
    )


@dataclass(frozen=True)
class SubmissionView:
    """One submission as its pages need it: the public view, its source (the submitter's own), and its
    problem as currently served (None once removed)."""

    public: SubmissionPublic
    source: str
    problem: LoadedProblem | None
    seed: int | None = None

    @property
    def tests_total(self) -> int | None:
        return self.public.tests_total


def read_submission(
    db: Database, registry: Registry, submission_id: str, *, admin: bool = False
) -> SubmissionView | None:
    """A submission as a submitter sees it (webhooks too); with `admin`, as the admin does (every test
    whole, and the seed)."""
    with db.session() as session:
        submission = crud.submission_row(session, submission_id=submission_id)
    return view_of(submission, registry, admin=admin) if submission is not None else None


def stored_results(submission: Submission | Row[Any]) -> list[TestResult]:
    """The tests as stored. One that no longer reads as a TestResult (a details field of another type, a
    row from an older release) is read without its details, or else stands as a hidden test skipped."""
    results = []
    for position, stored in enumerate(submission.tests if isinstance(submission.tests, list) else []):
        try:
            results.append(TestResult.model_validate(stored))
            continue
        except ValidationError:
            pass
        try:
            results.append(TestResult.model_validate({**stored, "details": None}))
        except (ValidationError, TypeError):
            results.append(TestResult(index=position, name="", visible=False, status=TestStatus.SKIPPED))
    return results


def view_of(submission: Row[Any], registry: Registry, *, admin: bool = False) -> SubmissionView:
    """The view of a submission's row as read (or as just stored)."""
    problem = registry.get(submission.problem_id)
    public = public_submission(submission, stored_results(submission), problem, admin=admin)
    return SubmissionView(public=public, source=submission.source, problem=problem, seed=submission.seed)
