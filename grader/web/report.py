"""What the report page shows, computed from the public verdict: words, tones and icons for statuses,
one row per test (waiting rows included while a submission runs; the hidden tests as one row unless their
statuses are shown), expected-against-got tables, and the error heatmap of a 2-D output as inline SVG.

Every status has a word and an icon besides its colour, so that nothing is told by colour alone. What
comes from a stored verdict may hold anything (see grader/submissions/public.py): every function here
answers for any value, and a test's details that still cannot be laid out are shown as not available
rather than failing the page.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from grader import vocabulary
from grader.grading.details import ComparisonDetails, Mismatch, ValueDescription
from grader.grading.verdict import FINAL, Status, TestStatus
from grader.problems.registry import LoadedProblem
from grader.submissions.public import HiddenSummary, SubmissionPublic, TestPublic
from grader.vocabulary import NOT_SHOWN, PAGE_ROWS, PENDING, SOME_FAILED, Words
from grader.web.heatmap import _split_ranges, heatmap_svg
from grader.web.numbers import as_float, element_count, fmt_mb, fmt_ms, fmt_number, fmt_shape, values_differ

__all__ = ["_split_ranges", "fmt_mb", "fmt_ms", "fmt_number", "fmt_shape", "heatmap_svg", "values_differ"]

log = logging.getLogger(__name__)

# The words, tones and icons of every status and of the page's own rows: one table (grader/vocabulary.py).
SUBMISSION_STATUS: dict[str, Words] = dict(vocabulary.SUBMISSION)
TEST_STATUS: dict[str, Words] = {PENDING: PAGE_ROWS[PENDING], **vocabulary.TEST, **PAGE_ROWS}
SUBMISSION_EXPLANATION: dict[str, str] = {status: words.explanation for status, words in vocabulary.SUBMISSION.items()}


@dataclass
class Row:
    position: int  # the number in the first column (of the first test, for the hidden tests' row)
    name: str
    visible: bool
    test: TestPublic | None  # None: not finished yet (or the hidden tests' row)
    index: int | None = None  # the test's position in the problem, from 0
    hidden: HiddenSummary | None = None  # set on the one row that stands for every hidden test

    @property
    def status(self) -> str:
        if self.hidden is not None:
            if self.hidden.passed is None:
                return PENDING
            return TestStatus.PASSED.value if self.hidden.first_failed is None else SOME_FAILED
        if self.test is None:
            return PENDING
        return self.test.status.value if self.test.status is not None else NOT_SHOWN

    @property
    def info(self) -> Words:
        return TEST_STATUS[self.status]

    @property
    def has_details(self) -> bool:
        t = self.test
        return bool(t and t.status not in (None, TestStatus.PASSED) and (t.details or t.traceback or t.message))


def public_test_names(problem: LoadedProblem) -> list[tuple[str, bool]]:
    """The problem's tests in file order, named as the public verdict names them."""
    names = []
    hidden = 0
    for test in problem.tests:
        if test.visible:
            names.append((test.name, True))
        else:
            hidden += 1
            names.append((f"hidden test {hidden}", False))
    return names


def _summary_row(position: int, hidden: HiddenSummary) -> Row:
    return Row(position, f"{hidden.total} hidden test{'s' if hidden.total != 1 else ''}", False, None, hidden=hidden)


def report_rows(public: SubmissionPublic, problem: LoadedProblem | None) -> list[Row]:
    """A row per test, in file order; the hidden tests as one row unless their statuses are shown. While the
    submission runs, the problem's tests, waiting until their result lands; once it is final (or if the
    problem has changed since), exactly the verdict's tests."""
    per_test = public.hidden.per_test
    if problem is not None and public.status not in FINAL and problem.version == public.problem_version:
        landed = {test.index: test for test in public.tests}
        tests = [(i, name, visible, landed.get(i)) for i, (name, visible) in enumerate(public_test_names(problem))]
    else:
        tests = [(t.index if t.index is not None else i, t.name, t.visible, t) for i, t in enumerate(public.tests)]
    rows: list[Row] = []
    for position, (index, name, visible, test) in enumerate(tests, 1):
        if visible or per_test:
            rows.append(Row(position, name, visible, test, index=index))
        elif not any(row.hidden is not None for row in rows):
            rows.append(_summary_row(position, public.hidden))
    return rows


def tally(rows: list[Row]) -> dict[str, int]:
    """Tests in all, finished and passed; the hidden tests' row counts as every hidden test."""
    total = finished = passed = 0
    for row in rows:
        if row.hidden is not None:
            total += row.hidden.total
            finished += row.hidden.total if row.hidden.passed is not None else 0
            passed += row.hidden.passed or 0
        else:
            total += 1
            finished += row.test is not None
            passed += row.status == TestStatus.PASSED
    return {"total": total, "finished": finished, "passed": passed}


# -- a failed test's details --------------------------------------------------------------------------------
@dataclass
class FieldRow:
    label: str
    expected: str
    got: str
    differs: bool


FIELDS = ("type", "shape", "dtype", "length", "keys")


def _field(description: ValueDescription | None, key: str) -> str | None:
    value = getattr(description, key) if description is not None else None
    if value is None:
        return None
    if key == "shape":
        return fmt_shape(value)
    if key == "keys":
        return ", ".join(fmt_number(k) for k in value[:20]) or "(none)"
    return fmt_number(value)


@dataclass
class Comparison:
    """A failed test's details, ready for the template."""

    path: str | None
    reason: str | None
    fields: list[FieldRow]
    sample: list[tuple[str, str, bool]]  # (expected, got, differs) for the first values, flattened
    sample_total: str | None
    mismatches: str | None
    total: str | None
    max_abs_error: str | None
    max_rel_error: str | None
    rtol: str | None
    atol: str | None
    first_mismatches: list[dict[str, str]]
    heatmap: Markup | None
    large: bool = False  # more than 256 values: the heatmap shows blocks
    nonfinite: str | None = None  # "3 (the first at [0, 2])": NaN or infinities against anything else


UNAVAILABLE = Comparison(
    None, "the details of this test cannot be shown", [], [], None, None, None, None, None, None, None, [], None
)


def _text(value: Any, limit: int = 1024) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else fmt_number(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _sample(details: ComparisonDetails) -> list[tuple[str, str, bool]]:
    e_sample = details.expected.sample if details.expected is not None else None
    g_sample = details.got.sample if details.got is not None else None
    if e_sample is None and g_sample is None:
        return []
    e_list, g_list = (e_sample or [])[:64], (g_sample or [])[:64]
    sample = []
    for i in range(max(len(e_list), len(g_list))):
        e_item = e_list[i] if i < len(e_list) else None
        g_item = g_list[i] if i < len(g_list) else None
        sample.append(
            (
                fmt_number(e_item) if i < len(e_list) else "—",
                fmt_number(g_item) if i < len(g_list) else "—",
                i >= len(e_list) or i >= len(g_list) or values_differ(e_item, g_item, details.rtol, details.atol),
            )
        )
    return sample


def _index(index: Any) -> str:
    if not isinstance(index, list):
        return fmt_number(index)
    return "[" + ", ".join(fmt_number(i) for i in index[:16]) + (", …" if len(index) > 16 else "") + "]"


def _first_mismatches(found: list[Mismatch]) -> list[dict[str, str]]:
    first = []
    for mismatch in found[:64]:
        e_num, g_num = as_float(mismatch.expected), as_float(mismatch.got)
        diff = "—"
        if e_num is not None and g_num is not None and math.isfinite(e_num) and math.isfinite(g_num):
            diff = fmt_number(abs(g_num - e_num))
        first.append(
            {
                "index": _index(mismatch.index),
                "expected": fmt_number(mismatch.expected),
                "got": fmt_number(mismatch.got),
                "diff": diff,
            }
        )
    return first


def _fields(details: ComparisonDetails) -> list[FieldRow]:
    expected, got = details.expected, details.got
    fields = []
    for key in FIELDS:
        e, g = _field(expected, key), _field(got, key)
        if e is None and g is None:
            continue
        fields.append(FieldRow(key, e or "—", g or "—", e != g))
    e_has, g_has = expected is not None and expected.has_value, got is not None and got.has_value
    if e_has or g_has:
        e_value = expected.value if expected is not None and e_has else None
        g_value = got.value if got is not None and g_has else None
        fields.append(
            FieldRow(
                "value",
                fmt_number(e_value) if e_has else "—",
                fmt_number(g_value) if g_has else "—",
                values_differ(e_value, g_value, details.rtol, details.atol),
            )
        )
    return fields


def _nonfinite(details: ComparisonDetails) -> str | None:
    if not details.nonfinite_mismatches:
        return None
    where = f" (the first at {_index(details.first_nonfinite)})" if details.first_nonfinite else ""
    return f"{fmt_number(details.nonfinite_mismatches)}{where}"


def lay_out(details: ComparisonDetails, test_id: str) -> Comparison:
    """The details as the report page and Run show them (templates/_comparison.html draws them)."""
    shape = details.expected.shape if details.expected is not None else None
    count = element_count(shape)
    grid = details.error_heatmap
    return Comparison(
        path=_text(details.path),
        reason=_text(details.reason),
        fields=_fields(details),
        sample=_sample(details),
        sample_total=fmt_number(count) if count is not None else None,
        mismatches=_text(details.mismatches, 40),
        total=_text(details.total, 40),
        max_abs_error=fmt_number(details.max_abs_error) if details.max_abs_error is not None else None,
        max_rel_error=fmt_number(details.max_rel_error) if details.max_rel_error is not None else None,
        rtol=fmt_number(details.rtol) if details.rtol is not None else None,
        atol=fmt_number(details.atol) if details.atol is not None else None,
        first_mismatches=_first_mismatches(details.first_mismatches),
        heatmap=heatmap_svg(grid, shape, test_id) if grid else None,
        large=count is not None and count > 256,
        nonfinite=_nonfinite(details),
    )


def comparison(details: Any, test_id: str) -> Comparison | None:
    """The details laid out for the template; None when there are none. Details that cannot be laid out
    (no stored verdict should hold such, but the page must not fail on one) come back as UNAVAILABLE."""
    try:
        typed = ComparisonDetails.read(details)
        return lay_out(typed, test_id) if typed is not None else None
    except Exception:  # the page still shows every test's status, message and traceback
        log.exception("the details of test %s cannot be laid out", test_id)
        return UNAVAILABLE


def nothing_ran(public: SubmissionPublic) -> bool:
    """Whether no test ran (the module did not load): every test whose status is shown was skipped, and
    no hidden test passed."""
    shown = [test for test in public.tests if test.status is not None]
    if not shown:
        return bool(public.tests) and public.status == Status.COMPILE_ERROR
    return all(test.status == TestStatus.SKIPPED for test in shown) and not public.hidden.passed
