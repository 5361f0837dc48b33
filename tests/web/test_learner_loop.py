"""The learner's loop in a real browser against the real service: Run on the visible tests and on one's own
input (the custom test's form: expected against got, what the code printed, values refused inline), the
refusals a run can meet, a problem that takes no input of one's own, and what a visible test printed under
it in the report, live and after a reload."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.web.accessibility import assert_accessible
from tests.web.conftest import SCREENSHOTS, BrowserLog, screenshot
from tests.web.solutions import FORGOT_SCALING, PRINTS, PRINTS_SLOWLY

pytestmark = pytest.mark.docker

RUN_TIMEOUT_MS = 90_000
VISIBLE_TESTS = 4  # problems/embedding-layer.yaml


def run_from_page(page: Any, source: str, inputs: dict[str, str] | None = None) -> Any:
    """Fills the editor (and, with `inputs`, the custom test's fields), presses Run (or Run on my input), and
    returns the result section."""
    page.fill("#source", source)
    if inputs is None:
        page.get_by_role("button", name="Run", exact=True).click()
    else:
        for name, text in inputs.items():
            page.get_by_label(name, exact=True).fill(text)
        page.get_by_role("button", name="Run on my input", exact=True).click()
    page.wait_for_selector("#run-button:not([disabled])", timeout=RUN_TIMEOUT_MS)
    return page.locator("#run-result")


def test_run_on_the_visible_tests_shows_each_result_and_what_it_printed(page: Any, browser_log: BrowserLog) -> None:
    page.goto("/problems/embedding-layer")
    result = run_from_page(page, PRINTS)
    assert result.is_visible(), page.locator("#run-error").inner_text()
    assert page.url.endswith("/problems/embedding-layer"), "a run stays on the page"
    assert result.get_attribute("data-status") == "accepted"
    assert "Accepted" in result.locator("[data-run-summary]").inner_text()
    assert f"{VISIBLE_TESTS} of {VISIBLE_TESTS} tests passed" in result.inner_text()
    tests = result.locator("li.run-test")
    assert tests.count() == VISIBLE_TESTS
    assert tests.first.get_attribute("data-test-name") == "the numerical example from the statement"
    assert all(status == "passed" for status in tests.evaluate_all("items => items.map(i => i.dataset.status)"))
    # Expected against got for every returned key, passed or not.
    returned = tests.first.locator("table.returned").inner_text()
    assert "out" in returned and "tensor (3, 4) float32" in returned
    # What the code printed: the import's print in the first test, then the call's; markup stays text.
    output = tests.first.get_by_role("group", name="Printed output of the numerical example from the statement")
    assert output.inner_text().startswith("<img src=x onerror=alert(3)> loaded\nembedding tokens of shape (3,)")
    assert page.locator("#run-result img, #run-result script").count() == 0
    assert "Run finished: Accepted, 4 of 4 tests passed." in page.locator("#run-announcer").inner_text()
    page.wait_for_timeout(200)
    assert browser_log.dialogs == []


def in_view(page: Any, selector: str) -> bool:
    """Whether the element's top line is inside the window, as the page stands (nothing scrolled by the test)."""
    return bool(
        page.evaluate(
            """(selector) => {
                const box = document.querySelector(selector).getBoundingClientRect();
                return box.height > 0 && box.top >= 0 && box.top + 16 <= window.innerHeight;
            }""",
            selector,
        )
    )


@pytest.mark.parametrize(
    ("width", "height", "own"),
    [(1366, 900, False), (1366, 900, True), (390, 844, False), (390, 844, True)],
    ids=["desktop", "desktop-own-input", "phone", "phone-own-input"],
)
def test_runs_result_appears_in_view_with_the_focus_on_it(
    browser: Any, live_server: str, width: int, height: int, own: bool
) -> None:
    """Every learner's first Run: the result's first line is in the window without scrolling, and the focus
    is on its heading (a screen reader reads it)."""
    context = browser.new_context(base_url=live_server, viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        page.goto("/problems/embedding-layer")
        run_from_page(page, FORGOT_SCALING, {"tokens": "[[1, 2]]"} if own else None)
        page.wait_for_selector("#run-result:not([hidden])")
        page.wait_for_timeout(100)
        assert in_view(page, "#run-result-title"), f"the result is out of view at {width}x{height}"
        assert page.evaluate("document.activeElement && document.activeElement.id") == "run-result-title"
        screenshot(page, f"run-result-{width}x{height}{'-own' if own else ''}", full_page=False)
    finally:
        context.close()


def test_run_on_ones_own_input_shows_expected_against_got(page: Any) -> None:
    page.goto("/problems/embedding-layer")
    form = page.locator("#custom-input")
    # The form starts from the custom test's defaults, each field with its type, shape and bounds.
    assert page.get_by_label("tokens", exact=True).input_value() == "[[2, 0, 3]]"
    assert page.get_by_label("vocab_size", exact=True).input_value() == "5"
    assert "tensor of shape [batch, seq], int64, from 0 to vocab_size - 1" in form.inner_text()
    result = run_from_page(page, FORGOT_SCALING, {"vocab_size": "7", "tokens": "[[1, 2]]"})
    assert result.is_visible(), page.locator("#run-error").inner_text()
    assert result.get_attribute("data-status") == "wrong_answer"
    (test,) = result.locator("li.run-test").all()
    assert test.get_attribute("data-test-name") == "your tokens"
    assert test.get_attribute("data-status") == "failed" and "Wrong answer" in test.inner_text()
    compare = test.locator("table.compare").inner_text()
    assert "Expected" in compare and "Got" in compare and "(1, 2, 4)" in compare and "float32" in compare
    assert "Max abs error" in test.inner_text()
    assert test.locator("table.mismatches").is_visible()
    rows = {row.locator("th").inner_text(): row for row in test.locator("table.returned tbody tr").all()}
    expected, got = (cell.inner_text() for cell in rows["out"].locator("td").all())
    assert expected.startswith("tensor (1, 2, 4) float32 [") and got.startswith("tensor (1, 2, 4) float32 [")
    assert expected != got  # the reference scales by sqrt(4) = 2; this code does not
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator(".editor-card").screenshot(path=str(SCREENSHOTS / "problem-run-own-input.png"))
    assert_accessible(page, "the problem page with a run's result on one's own input")

    # What the code printed, past 4 KiB: cut with the server's mark, in a block that scrolls and that the
    # keyboard can reach.
    printing = PRINTS.replace('print("embedding tokens of shape", tuple(tokens.shape))', 'print("y" * 6000)')
    run_from_page(page, printing, {"tokens": "[[1, 2, 3]]"})
    assert result.get_attribute("data-status") == "accepted"
    printed = result.get_by_role("group", name="Printed output of your tokens")
    text = printed.inner_text()
    assert text.startswith("<img src=x onerror=alert(3)> loaded\nyyyy") and text.endswith("(truncated)")
    assert len(text) < 4200 and page.locator("#run-result img").count() == 0
    assert printed.evaluate("pre => pre.scrollHeight > pre.clientHeight") and printed.get_attribute("tabindex") == "0"
    assert_accessible(page, "the problem page with a run's long output")


def test_values_that_do_not_fit_are_marked_on_their_field(page: Any, browser_log: BrowserLog) -> None:
    page.goto("/problems/embedding-layer")
    tokens = page.get_by_label("tokens", exact=True)
    # Refused by the server (a token above vocab_size - 1): the message under the field, which is marked.
    run_from_page(page, FORGOT_SCALING, {"tokens": "[[1, 99]]"})
    error = page.locator("#input-tokens-error")
    assert error.is_visible() and error.inner_text() == "tokens[0][1]: 99 is above the maximum, vocab_size - 1 = 4"
    assert tokens.get_attribute("aria-invalid") == "true"
    assert tokens.evaluate("field => document.activeElement === field"), "the first field in error has the focus"
    assert "see the fields marked below" in page.locator("#run-error").inner_text()
    assert page.locator("#run-result").is_hidden()
    (logged,) = browser_log.errors  # the browser logs the refused request itself
    assert "status of 422" in logged, logged
    browser_log.errors.clear()
    assert_accessible(page, "the problem page with a value refused")
    # Not JSON at all: refused here, before anything is sent.
    run_from_page(page, FORGOT_SCALING, {"tokens": "[[1, 2", "d_model": "four"})
    assert page.locator("#input-tokens-error").inner_text().startswith("tokens: write a JSON list")
    assert page.locator("#input-d_model-error").inner_text() == "d_model: write a number"
    # The defaults back, the marks gone; a run on them is accepted for a correct solution.
    page.get_by_role("button", name="Reset to the defaults").click()
    assert tokens.input_value() == "[[2, 0, 3]]" and tokens.get_attribute("aria-invalid") is None
    result = run_from_page(page, PRINTS, {})
    assert result.get_attribute("data-status") == "accepted"
    assert page.locator("[data-field-error]:visible").count() == 0


@pytest.mark.parametrize(
    ("status", "headers", "detail", "shown"),
    [
        (429, {"Retry-After": "17"}, "rate limit: at most 10 runs per minute", "Try again in 17 seconds"),
        (503, {"Retry-After": "5"}, "no sandbox to run in now: the pool is empty", "No sandbox is free"),
        (422, {}, "source is empty", "Not run: source is empty"),
    ],
)
def test_a_refused_run_says_why(
    page: Any, browser_log: BrowserLog, status: int, headers: dict[str, str], detail: str, shown: str
) -> None:
    # The service's own refusals are tested against it (tests/integration); here, what the page makes of them.
    page.route(
        "**/api/runs", lambda route: route.fulfill(status=status, headers=headers, json={"detail": f"{detail}<b>"})
    )
    page.goto("/problems/embedding-layer")
    page.get_by_role("button", name="Run", exact=True).click()
    alert = page.get_by_role("alert").filter(has_text=shown)
    alert.wait_for()
    assert page.locator("#run-error b").count() == 0
    assert page.locator("#run-result").is_hidden()
    assert page.locator("#run-button").is_enabled()
    # The browser logs the refused request itself; nothing else may have failed.
    (logged,) = browser_log.errors
    assert logged.startswith(f"Failed to load resource: the server responded with a status of {status} ("), logged
    browser_log.errors.clear()


@pytest.fixture
def without_custom_test(service: Any) -> Iterator[str]:
    """A copy of the embedding problem without a custom test: Run takes its visible tests only."""
    registry = service.registry
    original = registry.get("embedding-layer")
    problem_id = "embedding-layer-visible-only"
    copy = original.problem.model_copy(
        update={"id": problem_id, "title": "Embedding (visible only)", "custom_test": None}
    )
    registry.put_upload(registry.make(copy, uploaded=True))
    try:
        yield problem_id
    finally:
        registry.remove_upload(problem_id)


def test_a_problem_without_a_custom_test_has_no_form_but_runs(
    page: Any, live_server: str, without_custom_test: str
) -> None:
    assert httpx.get(f"{live_server}/api/problems/{without_custom_test}").json()["custom_test"] is None
    assert httpx.get(f"{live_server}/api/problems/embedding-layer").json()["custom_test"]["name"] == "your tokens"
    page.goto(f"/problems/{without_custom_test}")
    assert page.locator("#custom-input").count() == 0
    assert "takes no input of your own" in page.locator("#run-help").inner_text()
    result = run_from_page(page, PRINTS)
    assert result.locator("li.run-test").count() == VISIBLE_TESTS


def outputs(page: Any) -> dict[str, str | None]:
    """Each report row's printed output as shown (None: the row has no place for one, a hidden test)."""
    return dict(
        page.eval_on_selector_all(
            "tr.result-row",
            """rows => rows.map(r => {
                const box = r.querySelector('[data-test-output]');
                return [r.dataset.testName, box ? (box.hidden ? '' : box.querySelector('pre').textContent) : null];
            })""",
        )
    )


def test_a_print_shows_under_its_visible_test_live_and_after_a_reload(
    page: Any, live_server: str, browser_log: BrowserLog
) -> None:
    page.goto("/problems/embedding-layer")
    page.fill("#source", PRINTS_SLOWLY)
    # Only the event stream may bring results: the report's re-reads of its own page are refused.
    page.route(
        "**/submissions/*",
        lambda route: route.abort() if route.request.resource_type == "fetch" else route.continue_(),
    )
    page.click("#submit-button")
    page.wait_for_url("**/submissions/*")
    page.wait_for_function(
        """() => [...document.querySelectorAll("tr.result-row[data-visible='true']")].every(
            r => r.dataset.status !== 'pending')""",
        timeout=RUN_TIMEOUT_MS,
    )
    live = outputs(page)
    assert page.get_attribute("#report", "data-status") == "running", "the hidden tests that hang are still running"
    visible = [text for text in live.values() if text is not None]  # hidden tests have no place for output
    assert len(visible) == VISIBLE_TESTS < len(live)
    # The first test shows the import's print, then its own; the second test calls no embed_tokens, so it
    # printed nothing and shows nothing; the third and fourth show their calls' prints.
    assert visible[0].startswith("<img src=x onerror=alert(3)> loaded\nembedding tokens of shape (3,)")
    assert visible[1] == ""
    assert visible[2].startswith("embedding tokens of shape (2, ") and visible[3].startswith("embedding tokens")
    assert page.locator("#report img").count() == 0
    page.unroute("**/submissions/*")
    # The report's re-read when the verdict came was refused above; the browser logged it.
    assert set(browser_log.errors) <= {"Failed to load resource: net::ERR_FAILED"}, browser_log.errors
    browser_log.errors.clear()

    # The server-rendered page shows the same, and hidden tests show nothing they printed.
    submission = f"{live_server}/api/submissions/{page.get_attribute('#report', 'data-submission-id')}"
    deadline = time.monotonic() + RUN_TIMEOUT_MS / 1000
    while httpx.get(submission).json()["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, "no verdict"
        time.sleep(0.3)
    page.reload()
    assert outputs(page) == live
    assert "embedding tokens" not in "".join(page.locator("tr.result-row[data-visible='false']").all_inner_texts())
    screenshot(page, "report-printed-output")
    assert_accessible(page, "a report page with printed output")


def test_the_problem_list_is_accessible(page: Any) -> None:
    page.goto("/")
    assert_accessible(page, "the problem list")


def test_the_problem_page_is_accessible_in_the_dark_theme(browser: Any, live_server: str) -> None:
    context = browser.new_context(base_url=live_server, color_scheme="dark", viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto("/problems/embedding-layer")
        assert page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches")
        assert_accessible(page, "the problem page, dark theme")
    finally:
        context.close()
