"""How far apart two returned values are, from 0 (the same) to 1 (unrelated), for telling which known
mistake a wrong answer is closest to (grading/hints.py). Not a pass/fail rule: that is compare.py's.

- Tensors: a different shape or dtype is 1. Otherwise each element counts once: an element finite on
  one side and not on the other counts 1; NaN, inf and -inf are one class (the same kind of failure), so
  two non-finite elements count 0; two finite elements count |a - b| / (|a| + |b| + FLOOR * scale),
  where scale is the mean magnitude of the finite elements (so rounding noise near zero counts ~0).
  The distance is the mean over the elements (0 for an empty tensor).
- Numbers (ints and floats alike) as 0-d tensors; bools, strings, None and unsupported types: 0 when
  equal (the same type name, for unsupported ones), else 1; a different kind of value is 1.
- Lists and tuples: 1 for a different type or length, else the mean over items; dicts: the mean over
  the union of keys, a key on one side only counting 1.

Total and bounded: never raises (anything unexpected is 1), and linear in the values' sizes, which the
sandbox's decoding bounds; nesting deeper than MAX_DEPTH is 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from grader.containers.values import Opaque, Tensor

FLOOR = 1e-5
MAX_DEPTH = 64
FAR = 1.0


def distance(a: Any, b: Any) -> float:
    """How far apart `a` and `b` are, in [0, 1]."""
    try:
        return min(max(_distance(a, b, 0), 0.0), FAR)
    except Exception:  # noqa: BLE001 - a hint is a courtesy: hostile values are simply far apart
        return FAR


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _distance(a: Any, b: Any, depth: int) -> float:
    if depth > MAX_DEPTH:
        return FAR
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        if a.dtype != b.dtype or a.shape != b.shape:
            return FAR
        return arrays(a.array, b.array)
    if _is_number(a) and _is_number(b):
        return arrays(np.array(_as_float(a)), np.array(_as_float(b)))
    if type(a) is not type(b):
        return FAR
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return FAR
        if not a:
            return 0.0
        return sum(_distance(x, y, depth + 1) for x, y in zip(a, b, strict=True)) / len(a)
    if isinstance(a, dict):
        keys = set(a) | set(b)
        if not keys:
            return 0.0
        return sum(_distance(a[k], b[k], depth + 1) if k in a and k in b else FAR for k in keys) / len(keys)
    if isinstance(a, Opaque):
        return 0.0 if a.type_name == b.type_name else FAR
    return 0.0 if a == b else FAR  # bool, str, None


def _as_float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


def arrays(x: np.ndarray, y: np.ndarray) -> float:
    """The mean element distance of two arrays of one shape (see the module's docstring)."""
    if x.size == 0:
        return 0.0
    wide = np.complex128 if np.iscomplexobj(x) or np.iscomplexobj(y) else np.float64
    with np.errstate(all="ignore"):
        x, y = x.astype(wide).reshape(-1), y.astype(wide).reshape(-1)
        finite_x, finite_y = np.isfinite(x), np.isfinite(y)
        total = float(np.count_nonzero(finite_x != finite_y))
        both = finite_x & finite_y
        xs, ys = x[both], y[both]
        if xs.size:
            ax, ay = np.abs(xs), np.abs(ys)
            scale = (float(ax.mean()) + float(ay.mean())) / 2
            diff = np.abs(xs - ys)
            rel = diff / (ax + ay + FLOOR * scale)
            rel = np.where(diff == 0, 0.0, rel)
            rel = np.where(np.isfinite(rel), np.clip(rel, 0.0, 1.0), 1.0)
            total += float(rel.sum())
    return total / x.size
