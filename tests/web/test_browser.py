"""The pages in a real browser (Debian's Chromium through Playwright) against the real service: reading a
problem, typing into the editor, submitting, watching the report arrive live. Screenshots of each page
go to artifacts/screenshots/."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests.conftest import CASES_DIR
from tests.web.conftest import BrowserLog, clear_editor, editor_state, screenshot, type_code
from tests.web.solutions import CORRECT, FORGOT_SCALING, SCRIPT_IN_MESSAGE, SLOW_THROUGHOUT

pytestmark = pytest.mark.docker

VERDICT_TIMEOUT_MS = 90_000


def submit_from_editor(page: Any, code: str) -> str:
    """Types `code` into the editor, submits, and returns the report's submission id."""
    clear_editor(page)
    type_code(page, code)
    assert editor_state(page)["value"].strip() == code.strip()
    page.click("#submit-button")
    page.wait_for_url("**/submissions/*")
    return str(page.get_attribute("#report", "data-submission-id"))


def wait_for_verdict(page: Any, status: str) -> None:
    page.wait_for_selector(f'#report[data-final="true"] #verdict[data-status="{status}"]', timeout=VERDICT_TIMEOUT_MS)


def test_read_submit_wrong_then_right(page: Any, browser_log: BrowserLog) -> None:
    page.goto("/")
    page.get_by_role("link", name="Embedding Layer").click()
    page.wait_for_url("**/problems/embedding-layer")
    # The statement's TeX arrives as MathML, rendered by the browser.
    assert page.locator("article.statement math").count() > 20
    box = page.locator("article.statement math").first.bounding_box()
    assert box is not None and box["width"] > 0 and box["height"] > 0
    assert page.locator(".editor.is-enhanced:has(#source)").count() == 1  # the editor script ran
    assert "def embed_tokens" in editor_state(page)["value"]  # the starter code
    screenshot(page, "problem")

    # A wrong solution (the classic: no sqrt(d_model) scaling), typed with the keyboard.
    page.focus("#source")
    submit_from_editor(page, FORGOT_SCALING)
    wait_for_verdict(page, "wrong_answer")
    banner = page.locator("#verdict")
    assert "Wrong answer" in banner.inner_text()
    hint = page.locator("aside.hint")
    assert "multiply it by math.sqrt(d_model)" in hint.inner_text()
    first_failure = page.locator(".details-row").first
    assert "expected against got" in first_failure.inner_text().lower()
    compare = first_failure.locator("table.compare").inner_text()
    assert "(3, 4)" in compare and "float32" in compare
    sample = first_failure.locator("table.sample").inner_text()
    assert "0.02" in sample and "0.01" in sample  # expected 0.02 where the code returned 0.01
    assert "Max abs error" in first_failure.inner_text()
    assert first_failure.locator("table.mismatches").is_visible()
    assert first_failure.locator("svg.heatmap").is_visible()
    screenshot(page, "report-wrong-answer")

    # Back to the editor: the draft is still there; replace it with a correct solution.
    page.get_by_role("link", name="Edit and submit again").click()
    page.wait_for_url("**/problems/embedding-layer")
    assert editor_state(page)["value"].endswith("return embedding(tokens)")  # the last draft
    assert page.locator("[data-recent-list] li").count() == 1
    submit_from_editor(page, CORRECT)
    wait_for_verdict(page, "accepted")
    assert page.locator("tr.result-row[data-status='passed']").count() == page.locator("tr.result-row").count()
    assert page.locator(".details-row").count() == 0
    screenshot(page, "report-accepted")

    # The problem list knows, from this browser's storage, that the problem is solved.
    page.goto("/")
    progress = page.locator('[data-progress-for="embedding-layer"]')
    assert "Solved" in progress.inner_text()
    recent = page.locator("[data-recent-list] li")
    assert recent.count() == 2
    assert "Accepted" in recent.nth(0).inner_text() and "Wrong answer" in recent.nth(1).inner_text()
    screenshot(page, "index")
    assert browser_log.dialogs == []


def test_compile_error_report(page: Any) -> None:
    page.goto("/problems/embedding-layer")
    page.focus("#source")
    source = (CASES_DIR / "embedding-layer" / "syntax-error" / "solution.py").read_text()
    page.fill("#source", source)  # a syntax error cannot be typed through an auto-indenting editor as is
    page.click("#submit-button")
    page.wait_for_url("**/submissions/*")
    wait_for_verdict(page, "compile_error")
    text = page.locator("#report").inner_text()
    assert "Compile error" in text and "SyntaxError" in text
    assert page.get_by_role("link", name="line 6").is_visible()
    assert page.locator(".source-details .hll").inner_text().startswith("    return nn.Embedding")
    screenshot(page, "report-compile-error")


def test_a_script_in_an_exception_message_is_shown_as_text(page: Any, browser_log: BrowserLog) -> None:
    page.goto("/problems/embedding-layer")
    page.fill("#source", SCRIPT_IN_MESSAGE)
    page.click("#submit-button")
    page.wait_for_url("**/submissions/*")
    wait_for_verdict(page, "runtime_error")
    shown = page.locator(".details-row").first.inner_text()
    assert "ValueError: <script>alert(1)</script><img src=x onerror=alert(2)>" in shown
    assert page.locator("#report script, #report img").count() == 0
    page.wait_for_timeout(300)
    assert browser_log.dialogs == []


def test_keyboard_only_submit(page: Any) -> None:
    page.goto("/problems/embedding-layer")
    # From the top of the page, Tab alone reaches the editor...
    for _ in range(80):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "source":
            break
    else:
        raise AssertionError("Tab never reached the editor")
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    type_code(page, CORRECT)
    # ...inside it Tab indents instead of leaving...
    typed = editor_state(page)["value"]
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "source"
    assert editor_state(page)["value"] != typed
    page.keyboard.press("Control+Z")
    assert editor_state(page)["value"] == typed
    # ...and Escape then Tab moves on, to the Submit button, which Enter presses.
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "submit-button"
    page.keyboard.press("Enter")
    page.wait_for_url("**/submissions/*")
    wait_for_verdict(page, "accepted")


def test_control_enter_submits_from_the_editor(page: Any) -> None:
    page.goto("/problems/embedding-layer")
    page.fill("#source", CORRECT)
    page.focus("#source")
    page.keyboard.press("Control+Enter")
    page.wait_for_url("**/submissions/*")
    assert page.locator("#report").count() == 1


def test_editor_indentation(page: Any) -> None:
    page.goto("/problems/embedding-layer")
    clear_editor(page)
    keyboard = page.keyboard
    keyboard.type("def f(x):")
    keyboard.press("Enter")
    assert editor_state(page)["value"] == "def f(x):\n    "  # a block opens
    keyboard.type("if x:  # a comment")
    keyboard.press("Enter")
    assert editor_state(page)["value"].endswith("# a comment\n        ")
    keyboard.type("return 1")
    keyboard.press("Enter")
    assert editor_state(page)["value"].endswith("return 1\n    ")  # nothing follows a return
    keyboard.type("y = [")
    keyboard.press("Enter")
    assert editor_state(page)["value"].endswith("y = [\n        ")  # inside an open bracket
    keyboard.press("Backspace")  # one level back, not one space
    assert editor_state(page)["value"].endswith("y = [\n    ")
    keyboard.press("Shift+Tab")
    assert editor_state(page)["value"].endswith("y = [\n")
    keyboard.press("Tab")
    assert editor_state(page)["value"].endswith("y = [\n    ")
    keyboard.type("x")
    keyboard.press("Tab")  # from column 5 to the next multiple of 4
    assert editor_state(page)["value"].endswith("\n    x   ")
    # Several selected lines indent and dedent together.
    page.fill("#source", "a = 1\nb = 2\nc = 3\n")
    page.focus("#source")
    page.evaluate("() => document.getElementById('source').setSelectionRange(0, 11)")
    keyboard.press("Tab")
    assert editor_state(page)["value"] == "    a = 1\n    b = 2\nc = 3\n"
    keyboard.press("Shift+Tab")
    assert editor_state(page)["value"] == "a = 1\nb = 2\nc = 3\n"
    # Edits are ordinary browser edits: undo brings the text back.
    keyboard.press("Control+Z")
    assert editor_state(page)["value"] == "    a = 1\n    b = 2\nc = 3\n"
    # The highlighted overlay mirrors the text exactly (it is redrawn on the next animation frame).
    page.wait_for_function(
        "() => document.querySelector('.editor:has(#source) .editor-highlight code').textContent"
        " === document.getElementById('source').value + '\\n'"
    )
    assert page.locator(".editor:has(#source) .editor-highlight .m").count() == 3  # 1, 2 and 3
    page.fill("#source", "def f():\n    return None  # done\n")
    page.wait_for_function(
        "() => document.querySelector('.editor:has(#source) .editor-gutter').textContent === '1\\n2\\n3\\n'"
    )
    assert page.locator(".editor:has(#source) .editor-highlight .k").count() == 2  # def, return
    assert page.locator(".editor:has(#source) .editor-highlight .kc").inner_text() == "None"
    assert page.locator(".editor:has(#source) .editor-highlight .c1").inner_text() == "# done"
    assert page.locator(".editor:has(#source) .editor-gutter").inner_text().split() == ["1", "2", "3"]


def test_reset_restores_the_starter_code(page: Any) -> None:
    page.goto("/problems/embedding-layer")
    starter = editor_state(page)["value"]
    page.fill("#source", CORRECT)
    page.reload()
    assert editor_state(page)["value"] == CORRECT  # the draft survives a reload
    page.get_by_role("button", name="Reset to starter code").click()
    assert editor_state(page)["value"] == starter
    page.reload()
    assert editor_state(page)["value"] == starter


def test_the_report_updates_live_while_the_submission_runs(page: Any) -> None:
    page.goto("/problems/embedding-layer")
    page.fill("#source", SLOW_THROUGHOUT)
    navigations: list[str] = []
    page.click("#submit-button")
    page.wait_for_url("**/submissions/*")
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    report = page.locator("#report")
    assert report.get_attribute("data-final") == "false"
    pending_at_load = page.locator("tr.result-row[data-status='pending']").count()
    assert pending_at_load > 0
    # Without a reload, rows turn from waiting to a result while the verdict is still "running".
    page.wait_for_function(
        """pendingAtLoad => {
            const report = document.getElementById('report');
            const rows = document.querySelectorAll('tr.result-row').length;
            const pending = document.querySelectorAll("tr.result-row[data-status='pending']").length;
            const finished = document.querySelector('[data-finished]');
            if (!finished) return false;  // the verdict is in: too late to see a live update
            const counter = Number(finished.textContent);
            return report.dataset.status === 'running' && pending < pendingAtLoad && pending > 0
                && counter === rows - pending;
        }""",
        arg=pending_at_load,
        timeout=VERDICT_TIMEOUT_MS,
    )
    screenshot(page, "report-running")
    wait_for_verdict(page, "time_limit_exceeded")
    assert navigations == []  # all of it arrived through the event stream
    live = page.eval_on_selector_all("tr.result-row", "rows => rows.map(r => [r.dataset.testName, r.dataset.status])")
    assert all(status != "pending" for _, status in live)
    # The hidden tests are one row: how many passed (those before the first that hangs; the tests after a
    # timeout are skipped) and the first that did not, never which others.
    summary = page.locator("tr.result-row[data-hidden-summary]")
    assert summary.count() == 1 and summary.get_attribute("data-status") == "some-failed"
    total = int(summary.get_attribute("data-hidden-total") or 0)
    counted = re.search(rf"(\d+) of {total} passed · first that did not: hidden test (\d+)", summary.inner_text())
    assert counted, summary.inner_text()
    passed, first_failed = int(counted.group(1)), int(counted.group(2))
    assert 0 < passed < total and first_failed == passed + 1, summary.inner_text()
    assert page.locator("tr.result-row[data-status='timeout']").count() == 0
    assert "Time limit exceeded" in page.locator("#verdict").inner_text()
    assert "Time limit exceeded" in page.locator("#live-announcer").inner_text()
    # A reload shows the same report.
    page.reload()
    reloaded = page.eval_on_selector_all(
        "tr.result-row", "rows => rows.map(r => [r.dataset.testName, r.dataset.status])"
    )
    assert reloaded == live


def test_pages_fit_a_phone_screen(page: Any) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    for path in ("/", "/problems/embedding-layer"):
        page.goto(path)
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, (path, overflow)
    page.goto("/problems/embedding-layer")
    screenshot(page, "problem-phone", full_page=False)


def test_lists_catch_up_with_verdicts_that_came_after_the_tab_closed(
    page: Any, live_server: str, browser_log: BrowserLog
) -> None:
    created = httpx.post(
        f"{live_server}/api/submissions?wait=60",
        json={"problem_id": "embedding-layer", "source": "x = 1\n"},
        timeout=90,
    ).json()
    assert created["status"] == "compile_error"
    page.goto("/")
    stored = [
        {"id": created["id"], "problem_id": "embedding-layer", "problem_title": "Embedding Layer", "status": "running"},
        {"id": "f" * 32, "problem_id": "embedding-layer", "problem_title": "Embedding Layer", "status": "queued"},
    ]
    page.evaluate("entries => localStorage.setItem('torchjudge.submissions.v1', JSON.stringify(entries))", stored)
    page.reload()
    recent = page.locator("[data-recent-list] li")
    recent.filter(has_text="Compile error").wait_for()
    assert recent.count() == 1  # the one the server does not know is dropped
    assert "Attempted 1 time" in page.locator('[data-progress-for="embedding-layer"]').inner_text()
    # The browser logs the expected 404 of the unknown submission; nothing else may have failed.
    assert browser_log.errors == ["Failed to load resource: the server responded with a status of 404 (Not Found)"]
    browser_log.errors.clear()


def test_at_a_phones_width_every_rows_result_is_on_screen(browser: Any, live_server: str) -> None:
    """At 390 px the report keeps to the screen: each row's Result in view, the details scrolling in their box."""
    with httpx.Client(base_url=live_server, timeout=120) as http:
        source = (CASES_DIR / "embedding-layer" / "forgot-scaling" / "solution.py").read_text()
        verdict = http.post("/api/submissions?wait=60", json={"problem_id": "embedding-layer", "source": source}).json()
    assert verdict["status"] == "wrong_answer", verdict
    context = browser.new_context(base_url=live_server, viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        page.goto(f"/submissions/{verdict['id']}")
        page.wait_for_selector('#report[data-final="true"]')
        assert page.locator(".details-row").count() > 0, "a failed visible test shows its details"
        width = page.evaluate("document.documentElement.clientWidth")
        rights = page.locator("tr.result-row td.result-cell").evaluate_all(
            "cells => cells.map(c => c.getBoundingClientRect().right)"
        )
        assert rights and max(rights) <= width, f"a Result cell ends at {max(rights):.0f} px of {width}"
        table = page.locator("table.results").evaluate("t => t.getBoundingClientRect().width")
        assert table <= width, f"the results table is {table:.0f} px wide on a {width} px screen"
        scroll = page.evaluate("document.documentElement.scrollWidth")
        assert scroll <= width, f"the page scrolls sideways: {scroll} px"
        screenshot(page, "report-phone-width")
    finally:
        context.close()
