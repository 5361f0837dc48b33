"""KernelBench's fast_p in a batch's summary (GET /api/batches/{id}): the share of a batch's items of speed-graded
problems that are correct and faster than the baseline by more than p, for p = 1 and the problem's threshold. The
service is real but not started: each submission is graded by submissions/processing.py with a stand-in for the
Grader (tests/speed_results.py), so that the stored verdicts are the ones the summary reads."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from fastapi.testclient import TestClient

from grader.app import create_app
from grader.components import Components
from grader.grading.verdict import Status, TestStatus, Verdict
from grader.submissions.fast_p import fast_p
from tests.speed_results import PLAIN_PROBLEM, SOURCE, SPEED_PROBLEM, grade, graderless_service, speed_result
from tests.speed_results import verdict_with as timed_verdict

KEY = "fast-p-client-0123456789abcdef"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Components:
    return graderless_service(tmp_path_factory.mktemp("fast-p"), api_keys=KEY)


@pytest.fixture(scope="module")
def http(service: Components) -> Iterator[TestClient]:
    with TestClient(create_app(service.settings, components=service)) as client:
        yield client


def _wrong(service: Components, problem_id: str) -> Verdict:
    verdict = timed_verdict(service, None, problem_id)
    tests = [test.model_copy(update={"status": TestStatus.FAILED}) for test in verdict.tests]
    return Verdict(status=Status.WRONG_ANSWER, score=0.0, tests=tests)


def test_a_batchs_summary_gives_fast_1_and_fast_at_the_threshold(service: Components, http: TestClient) -> None:
    items = [{"problem_id": SPEED_PROBLEM, "source": SOURCE} for _ in range(5)]
    items += [{"problem_id": PLAIN_PROBLEM, "source": "x = 1"}, {"problem_id": SPEED_PROBLEM, "source": SOURCE}]
    taken = http.post("/api/submissions/batch", json={"items": items}, headers={"X-API-Key": KEY})
    assert taken.status_code == 202, taken.text
    ids = [item["id"] for item in taken.json()["items"]]
    verdicts = [
        timed_verdict(service, speed_result(12.0)),  # accepted: fast at 1 and at the threshold (5x)
        timed_verdict(service, speed_result(3.0)),  # correct, faster than the baseline, short of the threshold
        timed_verdict(service, speed_result(0.8)),  # correct and slower than the baseline
        _wrong(service, SPEED_PROBLEM),  # refused by the tests: never timed
        Verdict(status=Status.INTERNAL_ERROR, score=0.0, message="the judge failed"),  # counted as not fast, told
        timed_verdict(service, None, PLAIN_PROBLEM),  # no baseline: left out
    ]
    for submission_id, verdict in zip(ids, verdicts, strict=False):
        grade(service, submission_id, verdict)
    summary = http.get(f"/api/batches/{taken.json()['batch_id']}", headers={"X-API-Key": KEY})
    assert summary.status_code == 200, summary.text
    body = summary.json()
    assert body["counts"]["queued"] == 1  # the last item: not final, left out until it is
    assert body["fast_p"] == {"items": 5, "correct": 3, "judge_errors": 1, "fast_1": 0.4, "fast_threshold": 0.2}


def test_a_batch_with_no_speed_graded_item_has_no_fast_p(service: Components, http: TestClient) -> None:
    items = [{"problem_id": PLAIN_PROBLEM, "source": "x = 1"}]
    taken = http.post("/api/submissions/batch", json={"items": items}, headers={"X-API-Key": KEY})
    assert taken.status_code == 202, taken.text
    grade(service, taken.json()["items"][0]["id"], timed_verdict(service, None, PLAIN_PROBLEM))
    body = http.get(f"/api/batches/{taken.json()['batch_id']}", headers={"X-API-Key": KEY}).json()
    assert body["fast_p"] is None


@pytest.mark.parametrize(
    "speed",
    [
        {"speedup": float("nan"), "threshold": 5},
        {"speedup": "12", "threshold": 5},
        {"speedup": True, "threshold": 5},
        {"speedup": 12.0, "threshold": None},
        {"speedup": float("inf"), "threshold": 5},
        {},
    ],
    ids=["nan", "a string", "a bool", "no threshold", "infinite", "empty"],
)
def test_a_stored_timing_that_is_not_a_number_counts_as_not_fast(speed: dict) -> None:
    row = SimpleNamespace(problem_id=SPEED_PROBLEM, status="accepted", score=1.0, speed=speed)
    found = fast_p([row], lambda problem_id: True)
    assert found is not None and found.items == 1 and found.correct == 1
    assert found.fast_threshold == 0.0
    assert found.fast_1 == (1.0 if speed.get("speedup") == 12.0 else 0.0)
