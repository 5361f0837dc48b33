"""Every stored verdict renders in every view, whatever the values in it: the JSON API, the report page,
the event stream and the CLI's printing, for verdicts stored with the most extreme details a submission
can make the judge write (and some it cannot: the views must not depend on the judge's caps).

The service is real (SQLite in a temporary directory, the problems of problems/) but not started, so no
sandbox runs: each verdict is stored directly, as the grader would store it.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader import client as cli
from grader.app import create_app
from grader.components import Components, build
from grader.config import Settings
from grader.grading import verdict as verdicts
from grader.grading.verdict import Status
from grader.storage import crud
from tests.conftest import PROBLEMS_DIR
from tests.web.test_events import parse_sse

ADMIN = "stored-verdicts-admin-token-0123456789"
FAILING = 1  # the visible test that carries the details
HIDDEN_FAILING = 6  # a hidden test that carries them too (shown to the admin only)
BIG = 10**4000  # the largest integer a sandbox may send has 4000 digits
CONTROL = "\x00\x1b[2J\x1b]0;owned\x07\r\u202e\ud800"

EXTREMES: dict[str, dict[str, Any]] = {
    "an int of 4001 digits": {
        "path": "out",
        "reason": "values differ",
        "expected": {"type": "int", "value": 3},
        "got": {"type": "int", "value": BIG},
    },
    "ints of 4001 digits on both sides": {
        "expected": {"type": "int", "value": -BIG},
        "got": {"type": "int", "value": BIG},
    },
    "the largest floats": {
        "expected": {"type": "float", "value": 1e308},
        "got": {"type": "float", "value": -1e308},
        "max_abs_error": 1e308,
        "max_rel_error": 1.7976931348623157e308,
        "rtol": 1e308,
        "atol": 5e-324,
    },
    "negative zero": {"expected": {"type": "float", "value": -0.0}, "got": {"type": "float", "value": 0.0}},
    "NaN and infinities as numbers": {
        "expected": {"type": "float", "value": math.nan},
        "got": {"type": "float", "value": math.inf},
        "max_abs_error": -math.inf,
        "first_mismatches": [{"index": [0], "expected": math.nan, "got": -math.inf}],
    },
    "NaN and infinities as the judge writes them": {
        "expected": {"type": "tensor", "shape": [3], "dtype": "float32", "sample": ["nan", "inf", "-inf"]},
        "got": {"type": "tensor", "shape": [3], "dtype": "float32", "sample": [BIG, -1e308, -0.0]},
    },
    "huge and negative shapes": {
        "expected": {"type": "tensor", "shape": [10**18, 10**18], "dtype": "float32", "sample": [1.0]},
        "got": {"type": "tensor", "shape": [-5, 3], "dtype": "float32"},
        "error_heatmap": [[1.0, 2.0], [3.0, 4.0]],
        "mismatches": BIG,
        "total": -1,
    },
    "a shape of 4001-digit sizes": {"expected": {"type": "tensor", "shape": [BIG, BIG]}, "error_heatmap": [[1.0]]},
    "a shape that is not sizes": {
        "expected": {"type": "tensor", "shape": ["a", None, 1.5, {"x": 1}], "sample": "not a list"},
        "got": {"shape": {"a": 1}, "keys": "not a list"},
        "error_heatmap": [[None, "x", BIG], [1e308, -1e308, math.nan], "not a row", []],
    },
    "a heatmap of odd cells": {
        "expected": {"type": "tensor", "shape": [2, 2]},
        "error_heatmap": [[BIG, -1.0], [{}, []]],
    },
    "mismatches of odd types": {
        "first_mismatches": [{"index": [BIG, -1], "expected": BIG, "got": 1}, {"index": "x"}, 5, None, []],
        "mismatches": "many",
        "total": {"x": 1},
        "rtol": "r",
        "atol": [1],
        "max_abs_error": {"a": 1},
        "max_rel_error": [BIG],
    },
    "long and odd strings": {
        "path": (CONTROL + "<script>alert(1)</script>") * 2000,
        "reason": "\ud800\udfff" * 5000,
        "expected": {"type": "str", "value": "\u202e" * 50_000},
        "got": {"type": "str", "value": "{{ 7 * 7 }}{% raw %}" * 1000},
    },
    "deeply nested": {"expected": {"type": "dict", "keys": ["a"]}, "nested": json.loads("[" * 200 + "]" * 200)},
    "unexpected types everywhere": {
        "expected": ["list"],
        "got": 5,
        "first_mismatches": {"a": 1},
        "error_heatmap": "no",
        "path": 12,
        "reason": ["a", "list"],
    },
    "thousands of entries": {
        "expected": {"type": "tensor", "shape": [10_000], "sample": list(range(10_000))},
        "got": {"type": "tensor", "shape": [10_000], "sample": [float(i) for i in range(10_000)]},
        "first_mismatches": [{"index": [i], "expected": i, "got": -i} for i in range(5000)],
        "error_heatmap": [[float(i * j) for j in range(500)] for i in range(500)],
        **{f"key {i}": i for i in range(3000)},
    },
}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Components:
    root = tmp_path_factory.mktemp("stored-verdicts")
    components = build(
        Settings(data_dir=root / "data", problems_dir=PROBLEMS_DIR, admin_token=ADMIN, problems_poll_s=0)  # type: ignore[call-arg]
    )
    components.db.create_all()
    components.watcher.poll()
    return components


@pytest.fixture(scope="module")
def http(service: Components) -> Iterator[TestClient]:
    with TestClient(create_app(service.settings, components=service), raise_server_exceptions=False) as client:
        yield client


def store(service: Components, details: Any, **test_fields: Any) -> str:
    """A final wrong answer of embedding-layer whose failing tests carry `details`, as the grader stores it."""
    problem = service.registry.get("embedding-layer")
    assert problem is not None
    with service.db.session() as session:
        submission_id = crud.create_submission(
            session, problem_id=problem.id, problem_version=problem.version, source="x = 1\n"
        ).id
    failing = {"status": verdicts.TestStatus.FAILED, "message": "values differ", **test_fields}
    tests = [
        verdicts.TestResult(
            index=i,
            name=test.name,
            visible=test.visible,
            **(
                {"status": verdicts.TestStatus.PASSED, "time_ms": 1.5}
                | (failing if i in (FAILING, HIDDEN_FAILING) else {})
            ),
        )
        for i, test in enumerate(problem.tests)
    ]
    for i in (FAILING, HIDDEN_FAILING):
        tests[i].details = details  # as the grader stores it: no validation on the way in
    verdict = verdicts.Verdict(status=Status.WRONG_ANSWER, score=0.5, message="test 2: failed", tests=tests)
    with service.db.session() as session:
        crud.finish_submission(session, submission_id=submission_id, verdict=verdict)
    return submission_id


def _strict_json(text: str) -> Any:
    """JSON as every parser reads it: no NaN or Infinity tokens, no integer past what a parser takes."""

    def refuse(token: str) -> None:
        raise AssertionError(f"{token} is not JSON")

    return json.loads(text, parse_constant=refuse)


def _printable(text: str) -> bool:
    return not any(ch in text for ch in "\x00\x1b\x07\r\u202e")


def check_every_view(http: TestClient, submission_id: str, *, admin: bool = False) -> dict[str, Any]:
    """The API, the page, the stream and the CLI's printing of one stored verdict: each answers, whole."""
    headers = {"Authorization": f"Bearer {ADMIN}"} if admin else {}
    api = http.get(f"/api/submissions/{submission_id}", headers=headers)
    assert api.status_code == 200, api.text[:2000]
    verdict = _strict_json(api.text)
    assert verdict["status"] == "wrong_answer"
    page = http.get(f"/submissions/{submission_id}", headers=headers)
    assert page.status_code == 200, page.text[:2000]
    assert "cannot be shown" not in page.text, "the page fell back instead of laying the details out"
    assert 'data-details-for="' in page.text, "the failing test's details are on the page"
    events = http.get(f"/api/submissions/{submission_id}/events", headers=headers)
    assert events.status_code == 200
    found, _ = parse_sse(events.text)
    assert [kind for kind, _ in found][-1] == "verdict"
    assert found[-1][1] == verdict
    for _, data in found:
        _strict_json(json.dumps(data))
    out = io.StringIO()
    cli._print_tests(verdict["tests"], verdict, out)
    cli._summary(verdict, out)
    assert "first failing visible test: " in out.getvalue()
    assert _printable(out.getvalue()), "a control character reached the terminal"
    return verdict


@pytest.mark.parametrize("details", EXTREMES.values(), ids=EXTREMES.keys())
def test_an_extreme_value_renders_in_every_view(service: Components, http: TestClient, details: Any) -> None:
    submission_id = store(service, details, time_ms=math.inf, output=CONTROL * 10, traceback=CONTROL * 10)
    verdict = check_every_view(http, submission_id)
    failing = verdict["tests"][FAILING]
    assert failing["details"] is not None and failing["time_ms"] is None
    assert len(json.dumps(failing["details"])) < 512 * 1024, "the details are bounded on the way out"
    admin = check_every_view(http, submission_id, admin=True)
    assert admin["tests"][HIDDEN_FAILING]["details"] is not None, "the admin sees why a hidden test failed"
    hidden = verdict["tests"][HIDDEN_FAILING]
    assert hidden["details"] is None and hidden["status"] is None


def test_integers_are_kept_exactly_up_to_64_digits_then_told_by_their_length(
    service: Components, http: TestClient
) -> None:
    details = {"expected": {"type": "int", "value": 10**63}, "got": {"type": "int", "value": -BIG}}
    verdict = check_every_view(http, store(service, details))
    shown = verdict["tests"][FAILING]["details"]
    assert shown["expected"]["value"] == 10**63
    assert shown["got"]["value"] == "-100000000000…0000 (4001 digits)"


def test_a_stored_test_that_no_longer_reads_as_a_result_still_renders(service: Components, http: TestClient) -> None:
    submission_id = store(service, {"reason": "x"})
    with service.db.session() as session:
        row = crud.get_submission(session, submission_id=submission_id)
        assert row is not None
        tests = list(row.tests)
        tests[FAILING] = {**tests[FAILING], "details": ["not", "a", "dict"]}
        tests[2] = {"index": "two", "status": "exploded"}
        row.tests = tests
        session.commit()
    api = http.get(f"/api/submissions/{submission_id}")
    assert api.status_code == 200, api.text
    assert api.json()["tests"][FAILING]["details"] is None
    assert http.get(f"/submissions/{submission_id}").status_code == 200
    assert http.get(f"/api/submissions/{submission_id}/events").status_code == 200


# -- a property: any JSON the details could hold -------------------------------------------------------
LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([BIG, -BIG, 2**63, -(2**64), 10**64])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(["nan", "inf", "-inf", CONTROL, "\ud800", "x" * 5000])
    | st.text(max_size=50)
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner, max_size=6),
    max_leaves=40,
)
KEYS = st.sampled_from(
    ["path", "reason", "expected", "got", "mismatches", "total", "first_mismatches", "error_heatmap"]
    + ["max_abs_error", "max_rel_error", "rtol", "atol", "sample", "shape", "value", "index", "keys", "type"]
)
DESCRIPTION = st.dictionaries(KEYS, VALUES, max_size=8)
DETAILS = st.dictionaries(KEYS, VALUES | DESCRIPTION, min_size=1, max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(details=DETAILS)
def test_any_details_render_in_every_view(service: Components, http: TestClient, details: dict[str, Any]) -> None:
    check_every_view(http, store(service, details))


def test_the_cli_prints_paths_of_nested_outputs_and_the_hidden_summary(service: Components, http: TestClient) -> None:
    details = {
        "path": "rates[0]",
        "reason": "values differ",
        "expected": {"type": "float", "value": 0.001},
        "got": {"type": "float", "value": 0.002},
    }
    verdict = http.get(f"/api/submissions/{store(service, details)}").json()
    out = io.StringIO()
    cli._print_tests(verdict["tests"], verdict, out)
    cli._summary(verdict, out)
    printed = out.getvalue()
    assert "  output:   rates[0]" in printed
    hidden = sum(1 for test in verdict["tests"] if not test["visible"])
    assert f"hidden tests: {hidden - 1} of {hidden} passed; the first that did not: hidden test 3" in printed
    assert "hidden test 1" not in printed, "no hidden test is printed on its own"
    assert printed.count("first failing visible test") == 1


def test_a_test_that_is_printed_once_is_not_printed_again(tmp_path: Path) -> None:
    """`grader submit` against a stream that repeats a test (an old server): each test once."""
    test = {"index": 0, "name": "a", "visible": True, "status": "failed", "message": "m"}
    verdict = {"status": "wrong_answer", "score": 0.0, "tests": [test], "tests_total": 1}

    class Stream(cli.Client):
        def post(self, path: str, body: Any) -> Any:
            return {"id": "0" * 32}

        def events(self, submission_id: str) -> Iterator[tuple[str, Any]]:
            yield from [("status", {}), ("test", test), ("test", {**test, "hint": "h"}), ("verdict", verdict)]

    out = io.StringIO()
    assert cli.submit(Stream("http://x"), "p", "x = 1", run=False, as_json=False, out=out) == 1
    assert out.getvalue().count("FAIL  a") == 1
