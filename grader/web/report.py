"""What the report page shows, computed from the public verdict: words, tones and icons for statuses,
one row per test (waiting rows included while a submission runs), expected-against-got tables, and
the error heatmap of a 2-D output as inline SVG.

Every status has a word and an icon besides its colour, so that nothing is told by colour alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from grader.grading.verdict import FINAL, Status, TestStatus
from grader.problems.registry import LoadedProblem
from grader.submissions.public import SubmissionPublic, TestPublic

PENDING = "pending"


@dataclass(frozen=True)
class StatusInfo:
    label: str
    tone: str  # ok | fail | limit | error | judge | active | neutral: a CSS class, never the only signal
    icon: str  # a name in templates/_icons.html


SUBMISSION_STATUS: dict[str, StatusInfo] = {
    Status.QUEUED: StatusInfo("Queued", "neutral", "clock"),
    Status.RUNNING: StatusInfo("Running", "active", "spinner"),
    Status.ACCEPTED: StatusInfo("Accepted", "ok", "check"),
    Status.WRONG_ANSWER: StatusInfo("Wrong answer", "fail", "cross"),
    Status.RUNTIME_ERROR: StatusInfo("Runtime error", "error", "bolt"),
    Status.TIME_LIMIT_EXCEEDED: StatusInfo("Time limit exceeded", "limit", "clock"),
    Status.MEMORY_LIMIT_EXCEEDED: StatusInfo("Memory limit exceeded", "limit", "gauge"),
    Status.OUTPUT_LIMIT_EXCEEDED: StatusInfo("Output limit exceeded", "limit", "gauge"),
    Status.COMPILE_ERROR: StatusInfo("Compile error", "error", "code"),
    Status.INTERNAL_ERROR: StatusInfo("Internal error", "judge", "warning"),
}

TEST_STATUS: dict[str, StatusInfo] = {
    PENDING: StatusInfo("Waiting", "neutral", "dots"),
    TestStatus.PASSED: StatusInfo("Passed", "ok", "check"),
    TestStatus.FAILED: StatusInfo("Wrong answer", "fail", "cross"),
    TestStatus.ERROR: StatusInfo("Error", "error", "bolt"),
    TestStatus.TIMEOUT: StatusInfo("Timed out", "limit", "clock"),
    TestStatus.MEMORY: StatusInfo("Out of memory", "limit", "gauge"),
    TestStatus.OUTPUT: StatusInfo("Too much output", "limit", "gauge"),
    TestStatus.SKIPPED: StatusInfo("Skipped", "neutral", "dash"),
}

# One sentence under the banner, saying what the status means for the person who submitted.
SUBMISSION_EXPLANATION: dict[str, str] = {
    Status.QUEUED: "Waiting for a free sandbox. This page updates by itself.",
    Status.RUNNING: "Your code is being tested. Results appear here as each test finishes.",
    Status.ACCEPTED: "Every test passed.",
    Status.WRONG_ANSWER: "Your code ran, but at least one output differs from the reference.",
    Status.RUNTIME_ERROR: "Your code raised an exception or crashed.",
    Status.TIME_LIMIT_EXCEEDED: "At least one test ran past its time limit.",
    Status.MEMORY_LIMIT_EXCEEDED: "At least one test used more memory than allowed.",
    Status.OUTPUT_LIMIT_EXCEEDED: "At least one test returned or printed more than allowed.",
    Status.COMPILE_ERROR: "Your code did not load, so no test ran.",
    Status.INTERNAL_ERROR: "The judge failed, not your code. Please submit again in a moment.",
}


@dataclass
class Row:
    position: int
    name: str
    visible: bool
    test: TestPublic | None  # None: not finished yet

    @property
    def status(self) -> str:
        return self.test.status.value if self.test is not None else PENDING

    @property
    def info(self) -> StatusInfo:
        return TEST_STATUS[self.status]

    @property
    def has_details(self) -> bool:
        t = self.test
        return bool(t and t.visible and t.status != TestStatus.PASSED and (t.details or t.traceback or t.message))


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


def report_rows(public: SubmissionPublic, problem: LoadedProblem | None) -> list[Row]:
    """A row per test. While the submission runs, the problem's tests in file order, waiting until their
    result lands; once it is final (or if the problem has changed since), exactly the verdict's tests."""
    final = public.status in FINAL
    if problem is not None and not final and problem.version == public.problem_version:
        landed = {test.name: test for test in public.tests}  # by name: a retried run may repeat a test
        rows = [
            Row(i, name, visible, landed.get(name)) for i, (name, visible) in enumerate(public_test_names(problem), 1)
        ]
        known = {row.name for row in rows}
        extra = [test for test in public.tests if test.name not in known]
        rows.extend(Row(len(rows) + i, t.name, t.visible, t) for i, t in enumerate(extra, 1))
        return rows
    return [Row(i, test.name, test.visible, test) for i, test in enumerate(public.tests, 1)]


def tally(rows: list[Row]) -> dict[str, int]:
    finished = [row for row in rows if row.test is not None]
    return {
        "total": len(rows),
        "finished": len(finished),
        "passed": sum(1 for row in finished if row.status == TestStatus.PASSED),
    }


# -- numbers and values -----------------------------------------------------------------------------------
def fmt_number(value: Any) -> str:
    """A number as a person reads it: six significant digits, NaN and infinities by name."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        text = f"{value:.6g}"
        return "0" if text == "-0" else text
    return str(value)


def fmt_ms(value: float | None) -> str:
    if value is None:
        return "—"
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    if value >= 10:
        return f"{value:.0f} ms"
    return f"{value:.1f} ms"


def fmt_shape(shape: Any) -> str:
    if isinstance(shape, list):
        return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"
    return str(shape)


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    return None


def values_differ(expected: Any, got: Any, rtol: float | None, atol: float | None) -> bool:
    """Whether two sample values differ, with the test's tolerance where both are numbers."""
    e, g = _as_float(expected), _as_float(got)
    if e is None or g is None:
        return bool(expected != got)
    if math.isnan(e) or math.isnan(g):
        return not (math.isnan(e) and math.isnan(g))
    if math.isinf(e) or math.isinf(g):
        return e != g
    return abs(g - e) > (atol or 0.0) + (rtol or 0.0) * abs(e)


@dataclass
class FieldRow:
    label: str
    expected: str
    got: str
    differs: bool


FIELDS = (("type", "type"), ("shape", "shape"), ("dtype", "dtype"), ("length", "length"), ("keys", "keys"))


def _field(description: dict[str, Any], key: str) -> str | None:
    if key not in description:
        return None
    value = description[key]
    if key == "shape":
        return fmt_shape(value)
    if key == "keys" and isinstance(value, list):
        return ", ".join(str(k) for k in value) or "(none)"
    return str(value)


@dataclass
class Comparison:
    """A failed visible test's details, ready for the template."""

    path: str | None
    reason: str | None
    fields: list[FieldRow]
    sample: list[tuple[str, str, bool]]  # (expected, got, differs) for the first values, flattened
    sample_total: int | None
    mismatches: int | None
    total: int | None
    max_abs_error: str | None
    max_rel_error: str | None
    rtol: str | None
    atol: str | None
    first_mismatches: list[dict[str, str]]
    heatmap: Markup | None


def comparison(details: dict[str, Any] | None, test_id: str) -> Comparison | None:
    if not details:
        return None
    raw_expected, raw_got = details.get("expected"), details.get("got")
    expected: dict[str, Any] = raw_expected if isinstance(raw_expected, dict) else {}
    got: dict[str, Any] = raw_got if isinstance(raw_got, dict) else {}
    rtol, atol = details.get("rtol"), details.get("atol")
    fields = []
    for key, label in FIELDS:
        e, g = _field(expected, key), _field(got, key)
        if e is None and g is None:
            continue
        fields.append(FieldRow(label, e or "—", g or "—", e != g))
    if "value" in expected or "value" in got:
        e_value, g_value = expected.get("value"), got.get("value")
        fields.append(
            FieldRow(
                "value",
                fmt_number(e_value) if "value" in expected else "—",
                fmt_number(g_value) if "value" in got else "—",
                values_differ(e_value, g_value, rtol, atol),
            )
        )
    sample: list[tuple[str, str, bool]] = []
    e_sample, g_sample = expected.get("sample"), got.get("sample")
    if isinstance(e_sample, list) or isinstance(g_sample, list):
        e_list = e_sample if isinstance(e_sample, list) else []
        g_list = g_sample if isinstance(g_sample, list) else []
        for i in range(max(len(e_list), len(g_list))):
            e_item = e_list[i] if i < len(e_list) else None
            g_item = g_list[i] if i < len(g_list) else None
            sample.append(
                (
                    fmt_number(e_item) if i < len(e_list) else "—",
                    fmt_number(g_item) if i < len(g_list) else "—",
                    i >= len(e_list) or i >= len(g_list) or values_differ(e_item, g_item, rtol, atol),
                )
            )
    first = []
    for mismatch in details.get("first_mismatches") or []:
        if not isinstance(mismatch, dict):
            continue
        e_item, g_item = mismatch.get("expected"), mismatch.get("got")
        e_num, g_num = _as_float(e_item), _as_float(g_item)
        diff = "—"
        if e_num is not None and g_num is not None and math.isfinite(e_num) and math.isfinite(g_num):
            diff = fmt_number(abs(g_num - e_num))
        index = mismatch.get("index")
        first.append(
            {
                "index": "[" + ", ".join(str(i) for i in index) + "]" if isinstance(index, list) else str(index),
                "expected": fmt_number(e_item),
                "got": fmt_number(g_item),
                "diff": diff,
            }
        )
    shape = expected.get("shape") if isinstance(expected.get("shape"), list) else None
    grid = details.get("error_heatmap")
    heatmap = heatmap_svg(grid, shape, test_id) if isinstance(grid, list) and grid else None
    total_size = math.prod(shape) if shape else None
    return Comparison(
        path=details.get("path"),
        reason=details.get("reason"),
        fields=fields,
        sample=sample,
        sample_total=total_size,
        mismatches=details.get("mismatches"),
        total=details.get("total"),
        max_abs_error=fmt_number(details["max_abs_error"]) if "max_abs_error" in details else None,
        max_rel_error=fmt_number(details["max_rel_error"]) if "max_rel_error" in details else None,
        rtol=fmt_number(rtol) if rtol is not None else None,
        atol=fmt_number(atol) if atol is not None else None,
        first_mismatches=first,
        heatmap=heatmap,
    )


# -- heatmap ----------------------------------------------------------------------------------------------
def _split_ranges(size: int, parts: int) -> list[tuple[int, int]]:
    """The index ranges numpy.array_split gives: the first size % parts blocks are one longer."""
    if parts <= 0:
        return []
    base, extra = divmod(size, parts)
    ranges, start = [], 0
    for i in range(parts):
        length = base + (1 if i < extra else 0)
        ranges.append((start, start + length - 1))
        start += length
    return ranges


def _span(first: int, last: int) -> str:
    return str(first) if first >= last else f"{first}–{last}"


# A sequential palette from pale yellow (no error) to dark red (the largest error); readable in print
# and for most colour vision. Each cell also carries its value in a tooltip and the legend gives the scale.
PALETTE = ("#fff7d6", "#fee391", "#fec44f", "#fe9929", "#ec7014", "#cc4c02", "#993404", "#662506")


def _colour(value: float, largest: float) -> str:
    if largest <= 0 or value <= 0:
        return "#f3f4f6"
    fraction = min(1.0, value / largest)
    return PALETTE[min(len(PALETTE) - 1, int(fraction * (len(PALETTE) - 1) + 0.5))]


def heatmap_svg(grid: list[Any], shape: list[int] | None, test_id: str) -> Markup | None:
    """The absolute error of a 2-D output as an SVG grid (each cell: the largest error in its block)."""
    rows = [row for row in grid if isinstance(row, list)]
    if not rows or not all(rows):
        return None
    n_rows, n_cols = len(rows), max(len(row) for row in rows)
    values = [[_as_float(v) for v in row] for row in rows]
    finite = [v for row in values for v in row if v is not None and math.isfinite(v)]
    largest = max(finite, default=0.0)
    cell = max(10, min(36, 400 // max(n_cols, 1)))
    left, top = 44, 22
    width, height = left + n_cols * cell + 8, top + n_rows * cell + 44
    full_rows, full_cols = (shape[0], shape[1]) if shape and len(shape) == 2 else (n_rows, n_cols)
    row_ranges, col_ranges = _split_ranges(full_rows, n_rows), _split_ranges(full_cols, n_cols)
    pooled = full_rows != n_rows or full_cols != n_cols
    title_id, desc_id, gradient_id = f"hm-title-{test_id}", f"hm-desc-{test_id}", f"hm-grad-{test_id}"
    description = (
        f"Absolute error |got − expected| over the {full_rows} × {full_cols} output"
        + (f", as {n_rows} × {n_cols} blocks (each the largest error in its block)" if pooled else "")
        + f"; largest error {fmt_number(largest)}."
    )
    parts = [
        f'<svg class="heatmap" role="img" aria-labelledby="{title_id} {desc_id}" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="{title_id}">Error heatmap</title>',
        f'<desc id="{desc_id}">{escape(description)}</desc>',
        f'<text class="hm-axis" x="{left}" y="12">columns →</text>',
        f'<text class="hm-axis" x="10" y="{top + 10}" transform="rotate(90 10 {top + 10})">rows →</text>',
    ]
    for r, row in enumerate(values):
        for c, value in enumerate(row):
            x, y = left + c * cell, top + r * cell
            r_span = _span(*row_ranges[r]) if r < len(row_ranges) else str(r)
            c_span = _span(*col_ranges[c]) if c < len(col_ranges) else str(c)
            if value is None or not math.isfinite(value):
                fill, shown = "#111827", "inf or nan"
            else:
                fill, shown = _colour(value, largest), fmt_number(value)
            parts.append(
                f'<rect x="{x}" y="{y}" width="{cell - 1}" height="{cell - 1}" fill="{fill}">'
                f"<title>rows {r_span}, columns {c_span}: {escape(shown)}</title></rect>"
            )
    if n_rows > 1:
        parts.append(f'<text class="hm-tick" x="{left - 4}" y="{top + cell - 6}" text-anchor="end">0</text>')
        last_y = top + n_rows * cell - 6
        parts.append(f'<text class="hm-tick" x="{left - 4}" y="{last_y}" text-anchor="end">{full_rows - 1}</text>')
    legend_y = top + n_rows * cell + 14
    legend_w = max(80, min(200, n_cols * cell))
    stops = "".join(
        f'<stop offset="{i / (len(PALETTE) - 1):.3f}" stop-color="{colour}"/>' for i, colour in enumerate(PALETTE)
    )
    parts.append(f'<defs><linearGradient id="{gradient_id}">{stops}</linearGradient></defs>')
    parts.append(f'<rect x="{left}" y="{legend_y}" width="{legend_w}" height="8" fill="url(#{gradient_id})"/>')
    parts.append(f'<text class="hm-tick" x="{left}" y="{legend_y + 22}">0</text>')
    parts.append(
        f'<text class="hm-tick" x="{left + legend_w}" y="{legend_y + 22}" text-anchor="end">'
        f"{escape(fmt_number(largest))}</text>"
    )
    parts.append("</svg>")
    return Markup("".join(parts))
