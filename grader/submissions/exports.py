"""A problem's verdicts as the admin exports them: one line per submission, as CSV or JSON Lines, made a
row at a time from what listing.every_row reads a page at a time, and sent in chunks, so that an export's
memory does not grow with the number of submissions.

Every value is bounded (a message at MAX_MESSAGE characters, the tests as stored at most MAX_TESTS) and a
CSV cell that a spreadsheet would read as a formula (=, +, -, @, a tab or a return first) is written with
a leading apostrophe: a message or metadata comes from the submission."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Iterator
from typing import Any

from sqlalchemy import Row

from grader.containers.protocol import bounded_text
from grader.storage.db import as_utc
from grader.submissions.metadata import stored_metadata
from grader.submissions.public import plain_details

MAX_MESSAGE = 1000
MAX_TESTS = 1000
MAX_NAME = 200
MAX_MEMORY_MB = 1 << 20
CHUNK_BYTES = 64 * 1024

CSV_COLUMNS = [
    "id",
    "problem_id",
    "problem_version",
    "status",
    "score",
    "tests_passed",
    "tests_total",
    "hidden_passed",
    "hidden_total",
    "first_failed",
    "message",
    "created_at",
    "started_at",
    "finished_at",
    "batch_id",
    "submitter",
    "submitter_name",
    "speedup",
    "speed_passed",
    "speed_threshold",
    "metadata",
]
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _time(value: Any) -> str | None:
    return as_utc(value).isoformat() if value is not None else None


def _text(value: Any, limit: int) -> str | None:
    return bounded_text(value, limit) if isinstance(value, str) else None


def _finite(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _tests(stored: Any) -> list[dict[str, Any]]:
    """The tests as stored, each reduced to what an export shows, read without trusting their shape."""
    tests = []
    for position, test in enumerate(stored[:MAX_TESTS] if isinstance(stored, list) else []):
        if not isinstance(test, dict):
            continue
        index = test.get("index")
        memory = test.get("memory_mb")
        tests.append(
            {
                "index": index if isinstance(index, int) and not isinstance(index, bool) else position,
                "name": _text(test.get("name"), MAX_NAME) or "",
                "visible": test.get("visible") is True,
                "status": _text(test.get("status"), 32),
                "time_ms": _finite(test.get("time_ms")),
                "memory_mb": memory if type(memory) is int and 0 <= memory <= MAX_MEMORY_MB else None,
                "message": _text(test.get("message"), MAX_MESSAGE),
            }
        )
    return tests


def record(row: Row[Any]) -> dict[str, Any]:
    """One submission as a JSON Lines record (every test with its status; the admin's view)."""
    tests = _tests(row.tests)
    failed = next((test for test in tests if test["status"] != "passed"), None)
    hidden = [test for test in tests if not test["visible"]]
    return {
        "id": row.id,
        "problem_id": row.problem_id,
        "problem_version": row.problem_version,
        "status": row.status,
        "score": _finite(row.score) or 0.0,
        "tests_passed": sum(1 for test in tests if test["status"] == "passed"),
        "tests_total": len(tests),
        "hidden_passed": sum(1 for test in hidden if test["status"] == "passed"),
        "hidden_total": len(hidden),
        "first_failed": failed["name"] if failed is not None else None,
        "message": _text(row.message, MAX_MESSAGE),
        "created_at": _time(row.created_at),
        "started_at": _time(row.started_at),
        "finished_at": _time(row.finished_at),
        "batch_id": row.batch_id,
        "submitter": row.api_key_hash[:16] if row.api_key_hash else None,
        "submitter_name": _text(getattr(row, "submitter", None), MAX_NAME),
        **_speed(getattr(row, "speed", None)),
        "metadata": stored_metadata(row.client_metadata),
        "tests": tests,
    }


def _speed(stored: Any) -> dict[str, Any]:
    """A speed-graded verdict's timing: its score, whether it passed and the threshold as columns of their own,
    and (JSON Lines) the whole of it as stored, bounded like every view's (public.plain_details)."""
    if not isinstance(stored, dict):
        return {"speedup": None, "speed_passed": None, "speed_threshold": None, "speed": None}
    passed = stored.get("passed")
    return {
        "speedup": _finite(stored.get("speedup")),
        "speed_passed": passed if isinstance(passed, bool) else None,
        "speed_threshold": _finite(stored.get("threshold")),
        "speed": plain_details(stored),
    }


def _cell(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        value = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return "" if value is None else value


def _chunks(lines: Iterable[str]) -> Iterator[bytes]:
    buffer: list[str] = []
    size = 0
    for line in lines:
        buffer.append(line)
        size += len(line)
        if size >= CHUNK_BYTES:
            yield "".join(buffer).encode("utf-8", "replace")
            buffer, size = [], 0
    if buffer:
        yield "".join(buffer).encode("utf-8", "replace")


def jsonl(rows: Iterable[Row[Any]]) -> Iterator[bytes]:
    return jsonl_records(map(record, rows))


def jsonl_records(records: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    return _chunks(json.dumps(values, ensure_ascii=False, allow_nan=False) + "\n" for values in records)


def csv_lines(rows: Iterable[Row[Any]]) -> Iterator[bytes]:
    return csv_records(map(record, rows))


def csv_records(records: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    def lines() -> Iterator[str]:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(CSV_COLUMNS)
        for values in records:
            writer.writerow([_cell(values[column]) for column in CSV_COLUMNS])
            yield out.getvalue()
            out.seek(0)
            out.truncate()
        yield out.getvalue()

    return _chunks(lines())
