"""An export of 100,000 verdicts streams with bounded memory: the server's peak resident memory (VmHWM of
its own process) grows by far less than the export's size while it sends it, and every row arrives.

The rows are written straight into the database before the server starts (a real SQLite file), each with
seventeen tests and metadata, so that the export is large: about 2.7 KB per JSON line, 0.7 KB per CSV row."""

from __future__ import annotations

import csv
import io
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import insert

from grader.storage.db import Database, Submission
from tests.http.conftest import ADMIN_TOKEN, Server, serving

ROWS = 100_000
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
NOTE = "a harness's note " * 25  # metadata of about 500 bytes a row


def _fill(data: Path) -> None:
    database = Database(f"sqlite:///{data / 'torchjudge.db'}")
    database.create_all()
    start = datetime(2026, 1, 1, tzinfo=UTC)
    tests = [
        {"index": i, "name": f"test {i}", "visible": i < 4, "status": "passed" if i != 9 else "failed", "time_ms": 1.5}
        for i in range(17)
    ]
    with database.engine.begin() as connection:
        for first in range(0, ROWS, 5000):
            connection.execute(
                insert(Submission.__table__),
                [
                    {
                        "id": uuid.uuid4().hex,
                        "problem_id": "embedding-layer",
                        "problem_version": "0" * 16,
                        "source": "x = 1\n" * 50,
                        "status": "wrong_answer",
                        "score": 16 / 17,
                        "message": '=HYPERLINK("http://x") hidden test 6: values differ',
                        "tests": tests,
                        "attempts": 1,
                        "grading_starts": 1,
                        "created_at": start + timedelta(seconds=n),
                        "client_metadata": {"run": "eval-1", "sample": n, "note": NOTE},
                    }
                    for n in range(first, min(first + 5000, ROWS))
                ],
            )
    database.engine.dispose()


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("export-data")
    _fill(data)
    with serving(data) as server:
        yield server


@pytest.mark.parametrize("kind", ["jsonl", "csv"])
def test_an_export_of_100000_rows_streams_in_bounded_memory(filled: Server, kind: str) -> None:
    server = filled
    base = f"http://127.0.0.1:{server.port}"
    with httpx.Client(base_url=base, timeout=120) as http:
        http.get("/healthz")  # 503 (no sandboxes here), but answered: the server is up
        before = server.status("VmHWM")
        received, lines, tail = 0, 0, b""
        first_lines: list[bytes] = []
        with http.stream(
            "GET", "/api/submissions/export", params={"format": kind, "problem_id": "embedding-layer"}, headers=AUTH
        ) as response:
            assert response.status_code == 200, response.read()
            assert response.headers["content-disposition"] == f'attachment; filename="embedding-layer.{kind}"'
            for chunk in response.iter_bytes():
                received += len(chunk)
                data = tail + chunk
                parts = data.split(b"\n")
                tail = parts.pop()
                lines += len(parts)
                if len(first_lines) < 3:
                    first_lines.extend(parts[: 3 - len(first_lines)])
        growth = server.status("VmHWM") - before
    header = 1 if kind == "csv" else 0
    print(f"{kind}: {ROWS} rows, {received / 2**20:.1f} MiB sent; the server's peak grew {growth / 2**20:.1f} MiB")
    assert tail == b"" and lines == ROWS + header
    assert received > 60 * 2**20  # large enough that holding it would show
    assert growth < 40 * 2**20, f"the server's peak memory grew {growth / 2**20:.1f} MiB"
    if kind == "jsonl":
        record = json.loads(first_lines[0])
        assert record["metadata"] == {"run": "eval-1", "sample": 0, "note": NOTE} and record["tests_total"] == 17
        assert record["first_failed"] == "test 9" and record["hidden_passed"] == 12
    else:
        rows = list(csv.reader(io.StringIO(b"\n".join(first_lines[:2]).decode())))
        assert rows[0][:5] == ["id", "problem_id", "problem_version", "status", "score"]
        values = dict(zip(rows[0], rows[1], strict=True))
        assert values["message"].startswith("'=HYPERLINK")  # not a formula in a spreadsheet
        assert json.loads(values["metadata"]) == {"run": "eval-1", "sample": 0, "note": NOTE}
