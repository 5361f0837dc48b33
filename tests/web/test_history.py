"""A submitter's history on the server, in a real browser against the real service (no API keys): the
browser's own token lists what was submitted under it from elsewhere (the API, `grader submit` with
GRADER_OWNER_TOKEN) on the problem page, and "Edit and submit again" on a report loads that submission's
code into the editor, not the latest draft."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.web.conftest import editor_state
from tests.web.solutions import CORRECT, FORGOT_SCALING

pytestmark = pytest.mark.docker


def test_a_submission_made_elsewhere_under_the_browsers_token_is_listed(page: Any, live_server: str) -> None:
    page.goto("/problems/embedding-layer")
    token = (page.locator("[data-owner-token-value]").text_content() or "").strip()
    assert len(token) == 32, token
    made = httpx.post(
        f"{live_server}/api/submissions?wait=60",
        json={"problem_id": "embedding-layer", "source": FORGOT_SCALING},
        headers={"X-Owner-Token": token},
        timeout=90,
    )
    assert made.status_code == 200, made.text
    submission_id = made.json()["id"]
    page.reload()
    link = page.locator(f'[data-recent-list] a[href="/submissions/{submission_id}"]')
    link.wait_for(timeout=15_000)
    assert link.locator(".recent-outcome").inner_text().strip() != ""
    # Another browser (another token) does not see it.
    other = httpx.get(
        f"{live_server}/api/me/submissions", headers={"X-Owner-Token": "another-browser-token-0123"}, timeout=30
    )
    assert other.status_code == 200 and submission_id not in other.text
    assert httpx.get(f"{live_server}/api/me/submissions", headers={"X-Owner-Token": "short"}).status_code == 422


def test_edit_and_submit_again_loads_that_submissions_code(page: Any, live_server: str) -> None:
    made = httpx.post(
        f"{live_server}/api/submissions?wait=60",
        json={"problem_id": "embedding-layer", "source": FORGOT_SCALING},
        timeout=90,
    )
    submission_id = made.json()["id"]
    page.goto("/problems/embedding-layer")
    page.fill("#source", CORRECT)  # the latest draft is another code
    page.goto(f"/submissions/{submission_id}")
    page.locator("[data-edit-again]").click()
    page.wait_for_url("**/problems/embedding-layer")  # the ?from= is taken off once loaded
    page.wait_for_function("() => document.querySelector('[data-draft-note]').textContent.includes('was loaded')")
    assert editor_state(page)["value"] == FORGOT_SCALING
    assert "from=" not in page.url
    page.reload()  # it is the draft now
    assert editor_state(page)["value"] == FORGOT_SCALING
    source = httpx.get(f"{live_server}/api/submissions/{submission_id}/source", timeout=30)
    assert source.status_code == 200 and source.text == FORGOT_SCALING
    assert source.headers["content-type"].startswith("text/plain")
    assert httpx.get(f"{live_server}/api/submissions/{'0' * 32}/source", timeout=30).status_code == 404
