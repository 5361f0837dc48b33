"""A test's peak memory and its limit in every view of a stored verdict: the JSON API, the report page (next to
the time) and the CLI's printing; a hidden test's only to the admin, like its time."""

from __future__ import annotations

import io

from fastapi.testclient import TestClient

from grader import client as cli
from grader.components import Components
from tests.web.test_stored_verdicts import ADMIN, FAILING, HIDDEN_FAILING, http, service, store

__all__ = ["http", "service"]  # the fixtures, shared with test_stored_verdicts.py

SHOWN = "412 MB of 1024 MB"


def test_the_memory_is_in_the_api_the_page_and_the_cli_and_a_hidden_tests_for_the_admin_only(
    service: Components, http: TestClient
) -> None:
    submission_id = store(service, {"reason": "values differ"}, memory_mb=412, memory_limit_mb=1024)
    for admin in (False, True):
        headers = {"Authorization": f"Bearer {ADMIN}"} if admin else {}
        tests = http.get(f"/api/submissions/{submission_id}", headers=headers).json()["tests"]
        assert (tests[FAILING]["memory_mb"], tests[FAILING]["memory_limit_mb"]) == (412, 1024)
        hidden = (tests[HIDDEN_FAILING]["memory_mb"], tests[HIDDEN_FAILING]["memory_limit_mb"])
        assert hidden == ((412, 1024) if admin else (None, None))
        assert all(test["memory_mb"] is None for i, test in enumerate(tests) if i not in (FAILING, HIDDEN_FAILING))
        page = http.get(f"/submissions/{submission_id}", headers=headers).text
        assert page.count(SHOWN) == (2 if admin else 1), page.count(SHOWN)
        assert f'<span class="test-memory" data-test-memory>{SHOWN}</span>' in page
        out = io.StringIO()
        cli._print_tests(tests, {"tests": tests}, out)
        assert out.getvalue().count(SHOWN) == (2 if admin else 1), out.getvalue()
