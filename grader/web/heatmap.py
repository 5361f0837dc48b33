"""The error heatmap of a 2-D output, as inline SVG: each cell the largest absolute error in its block.

Its input is a stored verdict's details, so anything may be in it: cells that are not numbers, rows of
different lengths, a shape that is negative, huge or not numbers at all. Whatever it is, the result is an
SVG of at most MAX_CELLS x MAX_CELLS cells, or None.
"""

from __future__ import annotations

import math
from typing import Any

from markupsafe import Markup, escape

from grader.web.numbers import as_float, fmt_number

MAX_CELLS = 32  # per side; the judge sends at most 16

# A sequential palette from pale yellow (no error) to dark red (the largest error); readable in print
# and for most colour vision. Each cell also carries its value in a tooltip and the legend gives the scale.
PALETTE = ("#fff7d6", "#fee391", "#fec44f", "#fe9929", "#ec7014", "#cc4c02", "#993404", "#662506")


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


def _colour(value: float, largest: float) -> str:
    if largest <= 0 or value <= 0:
        return "#f3f4f6"
    fraction = min(1.0, value / largest)
    return PALETTE[min(len(PALETTE) - 1, int(fraction * (len(PALETTE) - 1) + 0.5))]


def _extent(shape: Any, n_rows: int, n_cols: int) -> tuple[int, int]:
    """The output's rows and columns: its shape when that is two sizes a tensor can have, else the grid's."""
    if isinstance(shape, list) and len(shape) == 2 and all(type(n) is int and 0 < n < 2**63 for n in shape):
        return shape[0], shape[1]
    return n_rows, n_cols


def heatmap_svg(grid: list[Any], shape: Any, test_id: str) -> Markup | None:
    """The SVG, from the grid of block maxima and the output's shape."""
    rows = [row[:MAX_CELLS] for row in grid[:MAX_CELLS] if isinstance(row, list)]
    if not rows or not all(rows):
        return None
    n_rows, n_cols = len(rows), max(len(row) for row in rows)
    values = [[as_float(v) for v in row] for row in rows]
    finite = [v for row in values for v in row if v is not None and math.isfinite(v)]
    largest = max(finite, default=0.0)
    cell = max(10, min(36, 400 // max(n_cols, 1)))
    left, top = 44, 22
    width, height = left + n_cols * cell + 8, top + n_rows * cell + 44
    full_rows, full_cols = _extent(shape, n_rows, n_cols)
    row_ranges, col_ranges = _split_ranges(full_rows, n_rows), _split_ranges(full_cols, n_cols)
    pooled = full_rows != n_rows or full_cols != n_cols
    # Ids within the page: only letters, digits and dashes, whatever a caller passes as the test's id.
    test_id = "".join(char for char in test_id[:64] if char.isascii() and (char.isalnum() or char == "-")) or "t"
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
