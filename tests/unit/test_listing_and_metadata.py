"""A submission's metadata bounds, the list's cursor, the export's rows and cells, and a rate limit that
must have room for a whole batch: each against hostile or odd input."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError

from grader.api.schemas import SubmissionCreate
from grader.storage import crud
from grader.storage.db import Database
from grader.storage.listing import Cursor
from grader.submissions import exports
from grader.submissions.metadata import MAX_BYTES, MAX_KEYS, stored_metadata
from grader.submissions.submitters import Refused, Submitter, check_rate


def body(metadata: Any) -> dict[str, Any]:
    return {"problem_id": "p", "source": "x = 1", "metadata": metadata}


@pytest.mark.parametrize(
    "metadata",
    [
        {"run": "eval-1", "sample": 17, "weight": 0.5, "ok": True, "none": None},
        {},
        {"k" * 64: "v" * 1024},
        {f"k{n}": n for n in range(MAX_KEYS)},
        {"big": 2**53 - 1, "small": -(2**53 - 1)},
    ],
)
def test_metadata_within_its_bounds_is_kept_as_sent(metadata: dict[str, Any]) -> None:
    assert SubmissionCreate.model_validate(body(metadata)).metadata == metadata


@pytest.mark.parametrize(
    ("metadata", "words"),
    [
        ({"a": {"nested": 1}}, "no objects or lists"),
        ({"a": [1, 2]}, "no objects or lists"),
        ({f"k{n}": n for n in range(MAX_KEYS + 1)}, f"at most {MAX_KEYS} keys"),
        ({"": 1}, "keys are 1 to 64"),
        ({"k" * 65: 1}, "keys are 1 to 64"),
        ({"new\nline": 1}, "printable"),
        ({"a": "v" * 1025}, "at most 1024 characters"),
        ({"a": 2**53}, "2**53"),
        ({f"k{n}": "v" * 200 for n in range(25)}, f"at most {MAX_BYTES}"),
        ("text", "dictionary"),
        ([1], "dictionary"),
    ],
)
def test_metadata_past_its_bounds_is_refused_naming_why(metadata: Any, words: str) -> None:
    with pytest.raises(ValidationError) as refused:
        SubmissionCreate.model_validate(body(metadata))
    assert words in str(refused.value)


def test_metadata_with_nan_or_infinity_is_refused() -> None:
    for raw in ('{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}'):
        text = '{"problem_id": "p", "source": "x = 1", "metadata": ' + raw + "}"
        with pytest.raises(ValidationError):
            SubmissionCreate.model_validate_json(text)


def test_stored_metadata_that_is_not_what_intake_stores_is_not_shown() -> None:
    assert stored_metadata({"a": 1}) == {"a": 1}
    for odd in (None, "text", [1], {"a": {"b": 1}}, {f"k{n}": n for n in range(100)}, {"a": float("nan")}):
        assert stored_metadata(odd) is None


def test_a_cursor_round_trips_and_anything_else_is_refused() -> None:
    moment = datetime(2026, 12, 2, 18, 0, 1, 123456, tzinfo=UTC)
    cursor = Cursor(moment, "0123abcd")
    assert Cursor.decode(cursor.encode()) == cursor
    assert Cursor.decode(Cursor(moment.replace(tzinfo=None), "x").encode()).created_at == moment  # naive is UTC
    for bad in ("", "12", "12.", ".ab", "-1.ab", "1.a-b", "1.a b", "9" * 18 + ".ab", "1." + "a" * 33, "1e5.ab"):
        with pytest.raises(ValueError):
            Cursor.decode(bad)


def row(**fields: Any) -> SimpleNamespace:
    values = {
        "id": "abc",
        "problem_id": "p",
        "problem_version": "v",
        "status": "wrong_answer",
        "score": 0.5,
        "message": None,
        "tests": [],
        "created_at": datetime(2026, 1, 1),
        "started_at": None,
        "finished_at": datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC),
        "batch_id": None,
        "api_key_hash": "f" * 64,
        "client_metadata": None,
    }
    return SimpleNamespace(**(values | fields))


def test_an_export_record_reads_stored_tests_without_trusting_their_shape() -> None:
    tests = [
        {"index": 0, "name": "a", "visible": True, "status": "passed", "time_ms": 1.0, "memory_mb": 412},
        {"index": 1, "name": "b" * 10_000, "visible": False, "status": "failed", "time_ms": float("nan")},
        "not a test",
        {
            "index": True,
            "name": 5,
            "visible": "yes",
            "status": ["x"],
            "time_ms": "1",
            "memory_mb": 1.5,
            "message": "m" * 5000,
        },
    ]
    record = exports.record(row(tests=tests, score=float("inf")))
    assert record["tests_total"] == 3 and record["tests_passed"] == 1 and record["hidden_total"] == 2
    assert record["first_failed"].startswith("bbb") and len(record["first_failed"]) <= exports.MAX_NAME
    odd = record["tests"][2]
    assert odd == {
        "index": 3,
        "name": "",
        "visible": False,
        "status": None,
        "time_ms": None,
        "memory_mb": None,
        "message": odd["message"],
    }
    assert record["tests"][0]["memory_mb"] == 412
    assert len(odd["message"]) <= exports.MAX_MESSAGE and record["tests"][1]["time_ms"] is None
    assert record["score"] == 0.0 and record["created_at"] == "2026-01-01T00:00:00+00:00"
    assert record["submitter"] == "f" * 16
    json.dumps(record, allow_nan=False)  # every value is plain JSON
    assert exports.record(row(tests="not a list"))["tests"] == []


def test_csv_cells_a_spreadsheet_would_run_are_quoted_as_text() -> None:
    rows = [
        row(id="1", message='=HYPERLINK("http://evil")'),
        row(id="2", message="+1"),
        row(id="3", message="-2+3"),
        row(id="4", message="@SUM(A1)"),
        row(id="5", message="\tx"),
        row(id="6", message="fine", client_metadata={"a": "=1+1"}),
    ]
    text = b"".join(exports.csv_lines(rows)).decode()
    parsed = list(csv.reader(io.StringIO(text)))
    assert parsed[0] == exports.CSV_COLUMNS and len(parsed) == 7
    messages = [line[exports.CSV_COLUMNS.index("message")] for line in parsed[1:]]
    assert all(message.startswith("'") for message in messages[:5]) and messages[5] == "fine"
    assert json.loads(parsed[6][exports.CSV_COLUMNS.index("metadata")]) == {"a": "=1+1"}


def test_an_empty_export_is_its_header_alone() -> None:
    assert b"".join(exports.csv_lines([])).decode().strip() == ",".join(exports.CSV_COLUMNS)
    assert b"".join(exports.jsonl([])) == b""


def test_a_batch_needs_room_in_the_rate_limit_for_all_of_its_items(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'rate.db'}")
    database.create_all()
    submitter = Submitter("k" * 64)
    with database.session() as session:
        for _ in range(3):
            crud.create_submission(session, problem_id="p", problem_version="v", source="x", api_key_hash="k" * 64)
        check_rate(session, submitter, 5, needed=2)  # 3 + 2 = 5: room
        with pytest.raises(Refused) as refused:
            check_rate(session, submitter, 5, needed=3)
        assert refused.value.status == 429 and 1 <= int(refused.value.headers["Retry-After"]) <= 60
        check_rate(session, Submitter("other" * 12), 5, needed=5)  # another key has its own window
