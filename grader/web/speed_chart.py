"""The report's speed chart, as inline SVG drawn on the server: for each input size a point at its speed-up
and an error bar for its 95 % interval, a dashed line at the problem's threshold, on a logarithmic y axis
(speed-ups run from below 1x to hundreds).

Its input is a stored verdict's timing, so any number may be in it: NaN, infinities, zero, negatives, more
sizes than a problem may have. A size whose speed-up is not a positive finite number gets no mark (the table
says so); a value beyond the axis is drawn at its end. Names are escaped. No inline style (the pages' policy
forbids it): the look comes from app.css's classes, with presentation attributes for a page without it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from markupsafe import Markup, escape

from grader.containers.protocol import bounded_text
from grader.grading.speed_stats import SizeSpeed

MAX_SIZES = 16  # a problem has at most this many (sandbox/runner/protocol.py MAX_BENCH_SIZES)
MAX_NAME = 100  # characters of a size's name (a problem's are at most 40)
LOWEST_DECADE, HIGHEST_DECADE = -3, 6  # the axis spans at most 0.001x to 1,000,000x
LEFT, TOP, PLOT_HEIGHT, BOTTOM = 70, 14, 180, 52
MIN_PLOT_WIDTH, RIGHT = 240, 14


def positive(value: object) -> float | None:
    """A speed-up that can be drawn on a log scale; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def fmt_times(value: object) -> str:
    """A speed-up as the page says it: 12.3×, 0.5×, 1,250×; a dash for what is not a positive number."""
    number = positive(value)
    if number is None:
        return "—"
    return f"{number:,.0f}×" if number >= 1000 else f"{number:.3g}×"


class _Axis:
    """The y axis: whole decades around every value drawn (and 1x, and the threshold)."""

    def __init__(self, values: Sequence[float]) -> None:
        low = max(LOWEST_DECADE, min(math.floor(math.log10(v)) for v in values))
        high = min(HIGHEST_DECADE, max(math.ceil(math.log10(v)) for v in values))
        self.low, self.high = low, max(high, low + 1)

    def y(self, value: float) -> float:
        exponent = min(max(math.log10(value), self.low), self.high)
        return round(TOP + PLOT_HEIGHT * (self.high - exponent) / (self.high - self.low), 1)

    def ticks(self) -> list[float]:
        """Each decade; with 1 or 2 decades, 2x and 5x of each too."""
        decades = range(self.low, self.high + 1)
        steps = (1, 2, 5) if self.high - self.low <= 2 else (1,)
        return [step * 10.0**k for k in decades for step in steps if step * 10.0**k <= 10.0**self.high]


def _label(name: str, width: float) -> str:
    """A size's name cut to what its band holds (the whole name is in the mark's tooltip)."""
    fits = max(4, int(width // 6.5))
    return name if len(name) <= fits else name[: fits - 1] + "…"


def _size_mark(size: SizeSpeed, x: float, band: float, axis: _Axis) -> str:
    speedup = positive(size.speedup)
    low, high = (positive(bound) for bound in size.interval)
    name = bounded_text(size.name, MAX_NAME)
    tooltip = f"{name}: {fmt_times(size.speedup)}"
    parts = []
    if speedup is not None and low is not None and high is not None:
        tooltip += f" (95 % interval {fmt_times(low)} to {fmt_times(high)})"
        top, bottom = axis.y(max(low, high)), axis.y(min(low, high))
        ends = [(x, x, top, bottom), (x - 6, x + 6, top, top), (x - 6, x + 6, bottom, bottom)]
        parts += [
            f'<line class="speed-interval" x1="{x1}" x2="{x2}" y1="{y1}" y2="{y2}" stroke="currentColor"/>'
            for x1, x2, y1, y2 in ends
        ]
    if speedup is not None:
        parts.append(f'<circle class="speed-point" cx="{x}" cy="{axis.y(speedup)}" r="5" fill="currentColor"/>')
    else:
        tooltip += " (not measured)"
    label_y = TOP + PLOT_HEIGHT + 18
    parts.append(f'<text class="speed-size-label" x="{x}" y="{label_y}" text-anchor="middle">')
    parts.append(f"{escape(_label(name, band))}</text>")
    measured = "true" if speedup is not None else "false"
    return (
        f'<g class="speed-size" data-size="{escape(name)}" data-measured="{measured}"><title>{escape(tooltip)}</title>'
        + "".join(parts)
        + "</g>"
    )


def _description(sizes: Sequence[SizeSpeed], threshold: float, left_out: int) -> str:
    said = "; ".join(f"{bounded_text(size.name, MAX_NAME)}: {fmt_times(size.speedup)}" for size in sizes)
    more = f"; and {left_out} more sizes, not drawn" if left_out else ""
    return f"Speed-up over the baseline at each input size, threshold {fmt_times(threshold)}: {said}{more}."


def speed_chart_svg(sizes: Sequence[SizeSpeed], threshold: float, chart_id: str = "speed-chart") -> Markup | None:
    """The chart of a verdict's sizes, or None when there is nothing to draw."""
    drawn = list(sizes[:MAX_SIZES])
    values = [positive(threshold) or 1.0, 1.0]
    for size in drawn:
        values += [v for v in (positive(size.speedup), *(positive(b) for b in size.interval)) if v is not None]
    if not drawn:
        return None
    axis = _Axis(values)
    band = max(MIN_PLOT_WIDTH / len(drawn), min(96.0, 520 / len(drawn)))
    plot_width = band * len(drawn)
    width, height = round(LEFT + plot_width + RIGHT), TOP + PLOT_HEIGHT + BOTTOM
    bottom, right = TOP + PLOT_HEIGHT, LEFT + plot_width
    title_id, desc_id = f"{chart_id}-title", f"{chart_id}-desc"
    parts = [
        f'<svg class="speed-chart" role="img" aria-labelledby="{title_id} {desc_id}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="{title_id}">Speed-up at each input size</title>',
        f'<desc id="{desc_id}">{escape(_description(drawn, threshold, len(sizes) - len(drawn)))}</desc>',
    ]
    for tick in axis.ticks():
        y = axis.y(tick)
        parts.append(f'<line class="speed-grid" x1="{LEFT}" x2="{right}" y1="{y}" y2="{y}" stroke="currentColor"/>')
        parts.append(f'<text class="speed-tick" x="{LEFT - 6}" y="{y + 4}" text-anchor="end">{fmt_times(tick)}</text>')
    parts += [
        f'<line class="speed-axis" x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{bottom}" stroke="currentColor"/>',
        f'<line class="speed-axis" x1="{LEFT}" x2="{right}" y1="{bottom}" y2="{bottom}" stroke="currentColor"/>',
        f'<text class="speed-axis-title" x="{LEFT + plot_width / 2}" y="{height - 6}" text-anchor="middle">'
        "input size</text>",
        f'<text class="speed-axis-title" x="14" y="{TOP + PLOT_HEIGHT / 2}" text-anchor="middle" '
        f'transform="rotate(-90 14 {TOP + PLOT_HEIGHT / 2})">speed-up (log scale)</text>',
    ]
    line = positive(threshold)
    if line is not None:
        y = axis.y(line)
        parts.append(
            f'<line class="speed-threshold" x1="{LEFT}" x2="{right}" y1="{y}" y2="{y}" stroke="currentColor" '
            'stroke-dasharray="6 4"/>'
        )
        parts.append(
            f'<text class="speed-threshold-label" x="{right - 4}" y="{y - 5}" text-anchor="end">'
            f"threshold {fmt_times(line)}</text>"
        )
    for position, size in enumerate(drawn):
        parts.append(_size_mark(size, round(LEFT + band * (position + 0.5), 1), band, axis))
    parts.append("</svg>")
    return Markup("".join(parts))
