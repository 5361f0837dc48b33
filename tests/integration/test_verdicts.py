"""Every verdict produced for real: solutions run in the Docker sandbox through the HTTP API.

Cases are folders under tests/cases/<problem>/<case>/: solution.py and the expect.yaml it must get.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from grader.grading.verdict import TEST_TO_STATUS
from grader.problems.registry import parse_problem
from tests.conftest import CASES_DIR, PROBLEMS_DIR

pytestmark = pytest.mark.docker

# A submission's status, as the status of the test that made it (grader/grading/verdict.py TEST_TO_STATUS).
FIRST_STATUS = {status.value: test.value for test, status in TEST_TO_STATUS.items()}
CASES = sorted(CASES_DIR.glob("*/*/expect.yaml"))
EMBEDDING = parse_problem((PROBLEMS_DIR / "embedding-layer.yaml").read_text(), "embedding-layer.yaml")


def _first_not_passed(verdict: dict) -> dict:
    """The first test that did not pass: a visible one whole, or a hidden one as its status alone (the
    public view shows hidden tests' statuses only as a count; the overall status is the first failure's)."""
    for test in verdict["tests"]:
        if test["status"] is None:  # a hidden test: its status is not shown
            number = int(test["name"].removeprefix("hidden test "))
            if number == verdict["hidden"]["first_failed"]:
                return {**test, "status": FIRST_STATUS[verdict["status"]]}
        elif test["status"] != "passed":
            return test
    raise AssertionError(f"no test failed: {verdict}")


@pytest.mark.parametrize("expect_path", CASES, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_case_gets_its_verdict(expect_path: Path, submit) -> None:
    expect = yaml.safe_load(expect_path.read_text())
    source = (expect_path.parent / "solution.py").read_text()
    verdict = submit(source, problem_id=expect_path.parent.parent.name)
    assert verdict["status"] == expect["status"], verdict
    for fragment in expect.get("message_contains", []):
        assert fragment in (verdict["message"] or ""), verdict["message"]
    if "line" in expect:
        assert verdict["line"] == expect["line"]
    if "hint_contains" in expect:
        for fragment in expect["hint_contains"]:
            assert fragment in (verdict["hint"] or "")
    if "score_between" in expect:
        low, high = expect["score_between"]
        assert low <= verdict["score"] <= high, verdict["score"]
    if verdict["status"] in ("compile_error",) or (
        verdict["status"] == "runtime_error" and "message_contains" in expect
    ):
        assert all(test["status"] in ("skipped", None) for test in verdict["tests"])
        assert verdict["hidden"]["passed"] == 0
        return
    first = _first_not_passed(verdict)
    if "first_test_status" in expect:
        assert first["status"] == expect["first_test_status"], first
    for fragment in expect.get("first_test_message_contains", []):
        assert fragment in (first["message"] or ""), first
    for fragment in expect.get("first_test_traceback_contains", []):
        assert fragment in (first["traceback"] or ""), first
    if expect.get("first_test_details"):
        details = first["details"]
        assert details["expected"]["shape"] == details["got"]["shape"]
        assert details["max_abs_error"] > 0
        assert details["first_mismatches"]


def test_reference_is_accepted_with_every_test_listed(submit) -> None:
    verdict = submit(EMBEDDING.reference)
    assert verdict["status"] == "accepted", verdict
    assert verdict["score"] == 1.0
    assert len(verdict["tests"]) == len(EMBEDDING.tests) == verdict["tests_total"]
    assert all(test["status"] == "passed" for test in verdict["tests"] if test["visible"])
    hidden = sum(1 for test in EMBEDDING.tests if not test.visible)
    assert verdict["hidden"] == {"total": hidden, "passed": hidden, "first_failed": None, "per_test": False}


def test_starter_code_is_wrong_answer(submit) -> None:
    verdict = submit(EMBEDDING.starter_code)
    assert verdict["status"] == "wrong_answer", verdict
    assert verdict["score"] == 0.0


@pytest.mark.parametrize("pitfall", EMBEDDING.pitfalls, ids=lambda p: p.name)
def test_each_pitfall_is_wrong_answer(pitfall, submit) -> None:
    verdict = submit(pitfall.module)
    assert verdict["status"] == "wrong_answer", verdict
    assert verdict["score"] < 1.0


def test_a_pitfall_gets_its_own_hint(submit) -> None:
    forgot = next(p for p in EMBEDDING.pitfalls if "forgot" in p.name)
    verdict = submit(forgot.code)
    assert verdict["hint"] == forgot.hint


def test_hidden_tests_show_only_how_many_passed_and_the_first_that_did_not(submit) -> None:
    verdict = submit(EMBEDDING.starter_code)
    hidden = [test for test in verdict["tests"] if not test["visible"]]
    assert hidden, "the problem has hidden tests"
    hidden_names = {test.name for test in EMBEDDING.tests if not test.visible}
    for number, test in enumerate(hidden, start=1):
        assert test["name"] == f"hidden test {number}"
        assert test["name"] not in hidden_names
        assert test["status"] is None, "a hidden test's status is not shown one by one"
        assert test["message"] is None and test["time_ms"] is None and test["details"] is None
        assert test["traceback"] is None and test["hint"] is None
    assert verdict["hidden"]["total"] == len(hidden) and verdict["hidden"]["first_failed"] == 1
