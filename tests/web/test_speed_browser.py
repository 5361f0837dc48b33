"""The speed chart and the leaderboard in a real browser (Debian's Chromium through Playwright), against the real
app served by uvicorn: the report's chart has a visible mark per size, placed by its speed-up on a log scale, the
threshold's dashed line and visible labels; the leaderboard and the problem page's speed section render; each
page passes the accessibility audit. Screenshots go to artifacts/screenshots/.

The service is real but not started (no Docker): each submission is POSTed through the API and graded by
submissions/processing.py with a stand-in for the Grader (tests/speed_results.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from grader.app import create_app
from grader.components import Components
from tests.served import serving
from tests.speed_results import (
    SPEED_PROBLEM,
    graderless_service,
    size_speeds,
    speed_result,
    submit_and_grade,
    verdict_with,
)
from tests.web.accessibility import assert_accessible
from tests.web.conftest import BrowserLog, screenshot

SPEEDUPS = [3.5, 12.0, 85.0]  # one under the threshold, two over, across two decades
SIZES = ["16 x 16", "32 x 32", "<b>48 x 48</b>"]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Components:
    return graderless_service(tmp_path_factory.mktemp("speed-browser"))


@pytest.fixture(scope="module")
def http(service: Components) -> Iterator[TestClient]:
    with TestClient(create_app(service.settings, components=service)) as client:
        yield client


@pytest.fixture(scope="module")
def live_server(service: Components) -> Iterator[str]:
    """This module's service served on a port (the `page` fixture opens it), in place of the Docker one."""
    with serving(create_app(service.settings, components=service)) as url:
        yield url


@pytest.fixture(scope="module")
def report_id(service: Components, http: TestClient) -> str:
    speed = speed_result(10.0, sizes=size_speeds(SPEEDUPS, SIZES))
    owner = {"X-Owner-Token": "speed-browser-tab-0123456789"}
    return submit_and_grade(service, http, verdict_with(service, speed), headers=owner, name="<i>Ann</i>")


def drawn(line: Any) -> dict[str, float]:
    """A line's box, once it is shown with a stroke (Playwright counts a line of no width or no height as hidden)."""
    box = line.bounding_box()
    assert box is not None and box["width"] + box["height"] > 0
    style = line.evaluate("e => { const s = getComputedStyle(e); return [s.visibility, s.stroke, s.strokeWidth]; }")
    assert style[0] == "visible" and style[1] not in ("none", "") and style[2] != "0px", style
    return box  # type: ignore[no-any-return]


def test_the_report_draws_a_mark_per_size_the_threshold_and_labels(
    page: Any, report_id: str, browser_log: BrowserLog
) -> None:
    page.goto(f"/submissions/{report_id}")
    chart = page.get_by_role("img", name="Speed-up at each input size")
    assert chart.is_visible()
    box = chart.bounding_box()
    assert box is not None and box["width"] > 200 and box["height"] > 150
    marks = chart.locator("g.speed-size circle.speed-point")
    assert marks.count() == len(SIZES)
    centres = []
    for index in range(len(SIZES)):
        mark = marks.nth(index)
        assert mark.is_visible()
        inside = mark.bounding_box()
        assert inside is not None
        assert box["x"] <= inside["x"] and inside["x"] + inside["width"] <= box["x"] + box["width"]
        assert box["y"] <= inside["y"] and inside["y"] + inside["height"] <= box["y"] + box["height"]
        centres.append((inside["x"] + inside["width"] / 2, inside["y"] + inside["height"] / 2))
    assert [x for x, _ in centres] == sorted(x for x, _ in centres), "the sizes from left to right, in order"
    assert centres[0][1] > centres[1][1] > centres[2][1], "a larger speed-up is drawn higher"
    # Log scale: 3.5x to 12x and 12x to 85x are drawn in proportion to the ratios' logarithms.
    low, mid, high = (y for _, y in centres)
    assert (low - mid) / (mid - high) == pytest.approx(0.6287, abs=0.05)
    for index, (_, y) in enumerate(centres):  # each interval's bar, through its point (its caps are flat lines)
        bar = chart.locator("g.speed-size").nth(index).locator("line.speed-interval").first
        extent = drawn(bar)
        assert extent["y"] < y < extent["y"] + extent["height"]
    threshold = chart.locator("line.speed-threshold")
    assert threshold.count() == 1
    assert threshold.evaluate("line => getComputedStyle(line).strokeDasharray") not in ("", "none")
    line_y = drawn(threshold)["y"]
    assert high < line_y < low, "the threshold (5x) lies between the slowest size and the others"
    for label in ["input size", "speed-up (log scale)", "threshold 5×", "1×", "10×", "100×", "16 x 16", "32 x 32"]:
        text = chart.locator("text", has_text=label).first
        assert text.is_visible(), label
    assert chart.locator("text", has_text="<b>48").first.is_visible(), "a size's name is text, not markup"
    assert page.locator("#speed b, #speed script").count() == 0
    tooltips = chart.locator("g.speed-size > title").all_text_contents()
    assert tooltips[1] == "32 x 32: 12× (95 % interval 10.8× to 13.2×)"
    assert page.locator("[data-submitter]").inner_text() == "<i>Ann</i>"
    assert page.locator("table.speed-sizes tbody tr").count() == len(SIZES)
    screenshot(page, "report-speed")
    assert_accessible(page, "the report of a speed-graded submission")
    assert browser_log.dialogs == []


def test_the_leaderboard_page_renders_from_the_problem_page(page: Any, report_id: str) -> None:
    page.goto(f"/problems/{SPEED_PROBLEM}")
    speed = page.locator("section#speed")
    assert speed.is_visible()
    assert speed.locator("details", has_text="The baseline").locator("pre").is_visible()
    assert speed.locator("table.speed-size-table tbody tr").count() >= 1
    assert_accessible(page, "a speed-graded problem's page")
    speed.get_by_role("link", name="See the leaderboard").click()
    page.wait_for_url(f"**/problems/{SPEED_PROBLEM}/leaderboard")
    table = page.get_by_role("table", name="Best speed-up of each entrant, fastest first")
    assert table.is_visible()
    row = table.locator("tbody tr").first
    assert row.get_by_role("rowheader").inner_text() == "<i>Ann</i>"
    assert "Unverified" in row.inner_text() and "10×" in row.inner_text()
    assert page.locator("main i").count() == 0
    screenshot(page, "leaderboard")
    assert_accessible(page, "the leaderboard")
