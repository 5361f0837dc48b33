"""Caps on every string a verdict carries, and on the verdict as a whole, whoever wrote them.

Messages come from a sandbox (already capped there, capped again here) and from the judge itself
("keys differ (missing [...])" lists what a submission returned): either way, what is stored, streamed
and rendered is bounded. A cut is always visible: the text ends with "(truncated)".
"""

from __future__ import annotations

import json
from typing import Any

from grader.containers.protocol import MAX_BENCH_SIZES, MAX_MESSAGE, MAX_OUTPUT, MAX_TRACEBACK, TRUNCATED, bounded_text
from grader.grading.speed_stats import SpeedResult
from grader.grading.verdict import TestResult, Verdict

MAX_VERDICT_BYTES = 256 * 1024
MAX_HINT = 2000
MAX_DETAIL_TEXT = 1024  # any string inside a test's details (a path, a reason, a key)
MAX_DETAIL_ITEMS = 64  # list items or dict entries kept at each level of the details
MAX_DETAIL_DEPTH = 6


def cap(text: str | None, limit: int) -> str | None:
    return None if text is None else bounded_text(text, limit)


def cap_details(value: Any, depth: int = 0) -> Any:
    """A copy of a test's details with every string, list and mapping bounded."""
    if depth > MAX_DETAIL_DEPTH:
        return "…"
    if isinstance(value, str):
        return bounded_text(value, MAX_DETAIL_TEXT)
    if isinstance(value, dict):
        items = list(value.items())
        kept = {bounded_text(str(key), 100): cap_details(item, depth + 1) for key, item in items[:MAX_DETAIL_ITEMS]}
        if len(items) > MAX_DETAIL_ITEMS:
            kept["…"] = f"{len(items) - MAX_DETAIL_ITEMS} more{TRUNCATED}"
        return kept
    if isinstance(value, (list, tuple)):
        kept_list = [cap_details(item, depth + 1) for item in list(value)[:MAX_DETAIL_ITEMS]]
        if len(value) > MAX_DETAIL_ITEMS:
            kept_list.append(f"… {len(value) - MAX_DETAIL_ITEMS} more{TRUNCATED}")
        return kept_list
    return value


def bound_test(test: TestResult) -> TestResult:
    return test.model_copy(
        update={
            "name": bounded_text(test.name, 200),
            "message": cap(test.message, MAX_MESSAGE),
            "hint": cap(test.hint, MAX_HINT),
            "traceback": cap(test.traceback, MAX_TRACEBACK),
            "output": cap(test.output, MAX_OUTPUT + len(TRUNCATED)),
            "details": cap_details(test.details) if test.details is not None else None,
        }
    )


def bound_speed(speed: SpeedResult) -> SpeedResult:
    return speed.model_copy(
        update={
            "message": cap(speed.message, MAX_MESSAGE),
            "details": cap_details(speed.details) if speed.details is not None else None,
            "sizes": speed.sizes[:MAX_BENCH_SIZES],
        }
    )


def _json_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


def bound_verdict(verdict: Verdict) -> Verdict:
    """The verdict with every field capped, and at most MAX_VERDICT_BYTES of JSON: past that, what is
    dropped first is what a reader needs least (details, then outputs, tracebacks, messages and hints),
    each from the last test backwards."""
    bounded = verdict.model_copy(
        update={
            "message": cap(verdict.message, MAX_MESSAGE),
            "hint": cap(verdict.hint, MAX_HINT),
            "traceback": cap(verdict.traceback, MAX_TRACEBACK),
            "tests": [bound_test(test) for test in verdict.tests],
            "speed": bound_speed(verdict.speed) if verdict.speed is not None else None,
        }
    )
    dumped = bounded.model_dump(mode="json")
    size = _json_size(dumped)
    if size <= MAX_VERDICT_BYTES:
        return bounded
    left_out = f"(left out: the verdict is over {MAX_VERDICT_BYTES // 1024} KiB)"
    for field in ("details", "output", "traceback", "message", "hint"):
        for index in range(len(bounded.tests) - 1, -1, -1):
            value = dumped["tests"][index].get(field)
            if value is None:
                continue
            replacement = left_out if field == "message" else None
            size -= _json_size(value) - _json_size(replacement)
            bounded.tests[index] = bounded.tests[index].model_copy(update={field: replacement})
            if size <= MAX_VERDICT_BYTES:
                return bounded
    return bounded
