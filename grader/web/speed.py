"""What the report page shows of a speed-graded verdict's timing (grading/speed_stats.py SpeedResult): the
score against the threshold, a row per input size, the chart, the load times and the setup charge, the
message, and a wrong timed call's comparison. Every value is formatted here without raising, whatever a
stored verdict holds; texts are cut to a bound and escaped by the template."""

from __future__ import annotations

import math
from dataclasses import dataclass

from markupsafe import Markup

from grader.containers.protocol import bounded_text
from grader.grading.speed_stats import SpeedResult
from grader.web.report import Comparison, comparison
from grader.web.speed_chart import MAX_SIZES, fmt_times, speed_chart_svg

MAX_MESSAGE = 4096
MAX_NAME = 100
SCORE_WORDS = {
    "geomean": "the geometric mean of the sizes' speed-ups",
    "min": "the smallest of the sizes' speed-ups",
}


def fmt_duration(ms: object) -> str:
    """A timed call's duration, from microseconds to seconds, three significant digits; a dash for no time."""
    if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not math.isfinite(ms) or ms < 0:
        return "—"
    if ms < 1:
        return f"{ms * 1000:.3g} µs"
    if ms < 1000:
        return f"{ms:.3g} ms"
    return f"{ms / 1000:.3g} s" if ms < 1e12 else "a very long time"


def fmt_interval(interval: object) -> str:
    if not isinstance(interval, (tuple, list)) or len(interval) != 2:
        return "—"
    low, high = interval
    return "—" if "—" in (fmt_times(low), fmt_times(high)) else f"{fmt_times(low)} – {fmt_times(high)}"


@dataclass(frozen=True)
class SizeRow:
    name: str
    submission: str
    baseline: str
    speedup: str
    interval: str
    submission_first: str
    baseline_first: str
    repeats: int


@dataclass(frozen=True)
class SpeedView:
    """The speed section, ready for templates/_speed.html."""

    baseline: str
    device: str
    score_words: str
    score: str
    interval: str
    threshold: str
    passed: bool
    measured: bool
    rows: list[SizeRow]
    left_out: int  # sizes past MAX_SIZES, not shown
    chart: Markup | None
    submission_import: str
    baseline_import: str
    setup_charge: str
    cpu: int | None
    message: str | None
    comparison: Comparison | None


def speed_view(speed: SpeedResult) -> SpeedView:
    shown = speed.sizes[:MAX_SIZES]
    rows = [
        SizeRow(
            name=bounded_text(size.name, MAX_NAME),
            submission=fmt_duration(size.submission_ms),
            baseline=fmt_duration(size.baseline_ms),
            speedup=fmt_times(size.speedup),
            interval=fmt_interval(size.interval),
            submission_first=fmt_duration(size.submission_first_ms),
            baseline_first=fmt_duration(size.baseline_first_ms),
            repeats=size.repeats,
        )
        for size in shown
    ]
    cpu = speed.cpu if isinstance(speed.cpu, int) and 0 <= speed.cpu < 1 << 16 else None
    return SpeedView(
        baseline=bounded_text(speed.baseline, MAX_NAME),
        device=bounded_text(speed.device, 16),
        score_words=SCORE_WORDS.get(speed.score, bounded_text(speed.score, 32)),
        score=fmt_times(speed.speedup),
        interval=fmt_interval(speed.interval),
        threshold=fmt_times(speed.threshold),
        passed=speed.passed is True,
        measured=fmt_times(speed.speedup) != "—",
        rows=rows,
        left_out=len(speed.sizes) - len(shown),
        chart=speed_chart_svg(speed.sizes, speed.threshold),
        submission_import=fmt_duration(speed.submission_import_ms),
        baseline_import=fmt_duration(speed.baseline_import_ms),
        setup_charge=fmt_duration(speed.setup_charge_ms),
        cpu=cpu,
        message=bounded_text(speed.message, MAX_MESSAGE) if speed.message else None,
        comparison=comparison(speed.details, "speed") if speed.details else None,
    )
