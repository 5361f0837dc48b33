"""Listings within a budget whatever they list. GET /api/batches/{id}: its rows are streamed a chunk at a time and
read without their tests' results, messages or source (a batch of hostile verdicts, each megabytes of bounded text,
was read whole on every poll), and its submissions are listed a page at a time. The admin's list and export: each
row made what the answer keeps of it as it is read, a few rows at a time (a page of 500 was held whole). The service
is real but not started (no sandbox): the rows are stored as the judge would have stored them."""

from __future__ import annotations

import tracemalloc
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from grader.app import create_app
from grader.components import Components
from grader.storage.db import Submission
from grader.submissions.submitters import hash_key
from tests.speed_results import PLAIN_PROBLEM, graderless_service

KEY, OTHER = "batch-budget-key-0123456789", "batch-budget-other-0123456789"
ADMIN = {"Authorization": "Bearer batch-budget-admin-0123456789"}
ITEMS = 48
TEST_TEXT = 1 << 20  # each stored verdict's tests carry a MiB of text, as bounded hostile messages can
HEADERS = {"X-API-Key": KEY}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Components:
    return graderless_service(
        tmp_path_factory.mktemp("batch-budget"), api_keys=f"{KEY},{OTHER}", admin_token=ADMIN["Authorization"][7:]
    )


@pytest.fixture(scope="module")
def http(service: Components) -> Iterator[TestClient]:
    with TestClient(create_app(service.settings, components=service)) as client:
        yield client


@pytest.fixture(scope="module")
def batch(service: Components) -> tuple[str, list[str]]:
    """A batch of ITEMS wrong answers whose tests say a MiB each, oldest first."""
    batch_id, ids = uuid.uuid4().hex, []
    tests = [{"index": 0, "name": "t", "visible": True, "status": "failed", "message": "x" * TEST_TEXT}]
    with service.db.session() as session:
        for number in range(ITEMS):
            submission_id = f"{number:04d}" + uuid.uuid4().hex[4:]
            ids.append(submission_id)
            session.add(
                Submission(
                    id=submission_id,
                    problem_id=PLAIN_PROBLEM,
                    problem_version="v",
                    source="def f(): pass\n" * 1000,
                    status="wrong_answer",
                    score=0.0,
                    message="y" * 10_000,
                    tests=tests,
                    api_key_hash=hash_key(KEY),
                    batch_id=batch_id,
                    client_metadata={"item": number},
                )
            )
            session.commit()
    return batch_id, ids


def _peak(http: TestClient, url: str, headers: dict[str, str]) -> tuple[Any, int]:
    """The answer to a GET (read whole), and the most memory allocated while it was made."""
    http.get(url, headers=headers)  # the first request's own costs (routing, schemas)
    tracemalloc.start()
    try:
        answer = http.get(url, headers=headers)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return answer, peak


def test_a_summary_reads_no_verdict_whole(http: TestClient, batch: tuple[str, list[str]]) -> None:
    """The batch stores ITEMS MiB of tests' text; a summary, listing every item, allocates a small part of it."""
    batch_id, ids = batch
    answer, peak = _peak(http, f"/api/batches/{batch_id}", HEADERS)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["total"], body["counts"], [item["id"] for item in body["submissions"]]) == (
        ITEMS,
        {"wrong_answer": ITEMS},
        ids,
    )
    assert [item["metadata"] for item in body["submissions"]] == [{"item": n} for n in range(ITEMS)]
    assert peak < ITEMS * TEST_TEXT / 8, f"{peak / 2**20:.1f} MiB allocated for a summary"


def test_the_submissions_come_a_page_at_a_time(http: TestClient, batch: tuple[str, list[str]]) -> None:
    batch_id, ids = batch
    seen, after, pages = [], None, 0
    while True:
        query = f"/api/batches/{batch_id}?limit=5" + (f"&after={after}" if after else "")
        body = http.get(query, headers=HEADERS).json()
        assert (body["total"], body["final"], body["done"]) == (ITEMS, ITEMS, True), "counts are the batch's"
        assert 0 < len(body["submissions"]) <= 5
        seen += [item["id"] for item in body["submissions"]]
        pages += 1
        after = body["next"]
        if after is None:
            break
    assert (seen, pages) == (ids, -(-ITEMS // 5))
    counts_only = http.get(f"/api/batches/{batch_id}?include=false", headers=HEADERS).json()
    assert (counts_only["submissions"], counts_only["next"], counts_only["total"]) == ([], None, ITEMS)


@pytest.mark.parametrize("query", ["limit=0", "limit=1001", "after=" + "a" * 65])
def test_a_page_out_of_bounds_is_refused(http: TestClient, batch: tuple[str, list[str]], query: str) -> None:
    assert http.get(f"/api/batches/{batch[0]}?{query}", headers=HEADERS).status_code == 422


def test_another_key_sees_no_page_of_it(http: TestClient, batch: tuple[str, list[str]]) -> None:
    batch_id, ids = batch
    for query in ("", f"?after={ids[3]}", "?include=false"):
        answer = http.get(f"/api/batches/{batch_id}{query}", headers={"X-API-Key": OTHER})
        assert answer.status_code == 404, answer.text


@pytest.mark.parametrize("url", ["/api/submissions?limit=500", "/api/submissions/export?format=jsonl"])
def test_the_admins_list_and_export_hold_a_few_verdicts_at_a_time(
    http: TestClient, batch: tuple[str, list[str]], url: str
) -> None:
    """Every stored row listed (the list's largest page, the export's every row): the allocations stay a small
    part of what the rows hold, however many of them the page has."""
    answer, peak = _peak(http, url, ADMIN)
    assert answer.status_code == 200, answer.text
    for submission_id in batch[1]:
        assert submission_id in answer.text
    assert peak < ITEMS * TEST_TEXT / 4, f"{peak / 2**20:.1f} MiB allocated for {url}"
