"""Numbers and values as the report shows them, for whatever a stored verdict holds: each function here
answers for any value (an integer of thousands of digits, NaN, a dict where a number was expected) and
never raises."""

from __future__ import annotations

import math
from typing import Any

MAX_SHOWN = 80  # characters of one value in a table cell
EXACT_DIGITS = 21  # integers up to this many digits are shown whole (every int64 and uint64 is)
STR_BITS = 14_000  # past about 4,200 digits, str() of an integer raises (sys.get_int_max_str_digits)


def _cut(text: str, limit: int = MAX_SHOWN) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _integer(value: int) -> str:
    bits = abs(value).bit_length()
    if bits <= 70:  # at most 22 digits: str() is cheap and exact
        text = str(value)
        if len(text.lstrip("-")) <= EXACT_DIGITS:
            return text
    sign = "-" if value < 0 else ""
    if bits > STR_BITS:
        return f"{sign}~1e+{int(bits * math.log10(2))}"
    digits = str(abs(value))
    return f"{sign}{digits[0]}.{digits[1:6]}e+{len(digits) - 1}"


def fmt_number(value: Any) -> str:
    """A number as a person reads it: six significant digits, NaN and infinities by name; anything else
    as short text."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return _integer(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        text = f"{value:.6g}"
        return "0" if text == "-0" else text
    if isinstance(value, str):
        return _cut(value)
    return _cut(type(value).__name__ if isinstance(value, (dict, list, tuple)) else str(value))


def as_float(value: Any) -> float | None:
    """A number as a float (an integer too large for one is an infinity); None for anything else."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    if isinstance(value, float):
        return value
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    return None


def values_differ(expected: Any, got: Any, rtol: Any, atol: Any) -> bool:
    """Whether two sample values differ, with the test's tolerance where both are numbers."""
    e, g = as_float(expected), as_float(got)
    if e is None or g is None:
        try:
            return bool(expected != got)
        except Exception:  # noqa: BLE001 - a comparison a value refuses: shown as differing
            return True
    if math.isnan(e) or math.isnan(g):
        return not (math.isnan(e) and math.isnan(g))
    if math.isinf(e) or math.isinf(g):
        return e != g
    tolerance = (_tolerance(atol) or 0.0) + (_tolerance(rtol) or 0.0) * abs(e)
    return abs(g - e) > tolerance


def _tolerance(value: Any) -> float | None:
    number = as_float(value)
    return number if number is not None and math.isfinite(number) and number >= 0 else None


def fmt_shape(shape: Any) -> str:
    if isinstance(shape, list):
        inner = ", ".join(fmt_number(n) for n in shape[:16]) + (", …" if len(shape) > 16 else "")
        return _cut("(" + inner + ("," if len(shape) == 1 else "") + ")", 200)
    return fmt_number(shape)


def fmt_ms(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        return "—"
    if value >= 1000:
        return f"{value / 1000:.2f} s" if value < 1e12 else "a very long time"
    if value >= 10:
        return f"{value:.0f} ms"
    return f"{value:.1f} ms"


def fmt_mb(value: Any, limit: Any = None) -> str:
    """A test's peak memory, with its limit when known ("412 MB of 1024 MB"); "" when it was not measured."""
    if type(value) is not int or value < 0:
        return ""
    return f"{value} MB of {limit} MB" if type(limit) is int and limit > 0 else f"{value} MB"


def element_count(shape: Any) -> int | None:
    """How many elements a shape holds, when it is a list of sizes a tensor can have."""
    if not isinstance(shape, list) or not shape or len(shape) > 64:
        return None
    if not all(type(n) is int and 0 <= n < 2**63 for n in shape):
        return None
    return math.prod(shape)
