"""A speed-graded problem's pages through the TestClient, without Docker: the problem page's speed section, the
report's timing (chart, table, load times, setup charge, message, a wrong call's comparison), every stored timing
rendered whatever it holds, and everything a submitter controls escaped.

The service is real but not started; each submission is POSTed through the API and graded by
submissions/processing.py with a stand-in for the Grader (tests/speed_results.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from grader.app import create_app
from grader.components import Components
from grader.grading.speed_stats import SizeSpeed
from grader.grading.verdict import Status
from grader.storage import crud
from grader.storage.db import Submission
from grader.web.speed_chart import speed_chart_svg
from tests.speed_results import (
    PLAIN_PROBLEM,
    SPEED_PROBLEM,
    graderless_service,
    size_speeds,
    speed_result,
    submit_and_grade,
    verdict_with,
)
from tests.web.test_pages import assert_no_inline_script, assert_page_headers

OWNER = {"X-Owner-Token": "speed-pages-browser-0123456789"}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Components:
    return graderless_service(tmp_path_factory.mktemp("speed-pages"))


@pytest.fixture(scope="module")
def http(service: Components) -> Iterator[TestClient]:
    with TestClient(create_app(service.settings, components=service), raise_server_exceptions=False) as client:
        yield client


def section(html: str) -> str:
    """The report's speed section."""
    found = re.search(r'<section class="card speed-report".*?</section>', html, re.DOTALL)
    assert found is not None, "the report has a speed section"
    return found.group(0)


def test_the_problem_page_shows_how_the_problem_is_timed_and_links_its_leaderboard(
    service: Components, http: TestClient
) -> None:
    problem = service.registry.get(SPEED_PROBLEM)
    assert problem is not None and problem.speed is not None
    speed = problem.speed
    page = http.get(f"/problems/{SPEED_PROBLEM}")
    assert page.status_code == 200
    assert_page_headers(page)
    html = page.text
    assert html.count(f'href="/problems/{SPEED_PROBLEM}/leaderboard"') == 2  # by the title, and in the section
    found = re.search(r'<section class="problem-speed".*?</section>', html, re.DOTALL)
    assert found is not None
    speed_html = found.group(0)
    assert f"<dt>Threshold</dt><dd>{speed.threshold:g}×</dd>" in speed_html
    assert f"<code>{speed.baseline}</code>" in speed_html
    for size in speed.sizes:
        assert f'<th scope="row">{size.name}</th>' in speed_html
    assert speed_html.count('<th scope="col"><code>') == len(speed.sizes[0].params)
    assert f"{speed.repeats} timed calls each" in speed_html and f"{speed.warmup} warm-up" in speed_html
    baseline = next(b for b in speed.baselines if b.name == speed.baseline)
    assert f'aria-label="The baseline, {speed.baseline}"' in speed_html
    assert "range</span>" in speed_html and baseline.code.count("for ") == speed_html.count('class="k">for</span>')
    assert_no_inline_script(html)
    plain = http.get(f"/problems/{PLAIN_PROBLEM}").text
    assert "problem-speed" not in plain and "/leaderboard" not in plain


def test_the_report_shows_the_timing_with_its_chart_table_and_load_times(service: Components, http: TestClient) -> None:
    speed = speed_result(10.0, sizes=size_speeds([5.0, 10.0, 20.0], ["16 x 16", "32 x 32", "<b>48</b>"]))
    submission_id = submit_and_grade(service, http, verdict_with(service, speed), headers=OWNER, name="<i>Ann</i>")
    page = http.get(f"/submissions/{submission_id}")
    assert page.status_code == 200
    assert_no_inline_script(page.text)
    html = section(page.text)
    assert 'data-speed-passed="true"' in html and "Fast enough" in html
    assert "Score <strong data-speed-value>10×</strong> (95 % interval 9× – 11×)" in html
    assert "the geometric mean of the sizes&#39; speed-ups; at least <strong>5×</strong> is needed" in html
    chart = re.search(r'<svg class="speed-chart".*?</svg>', html, re.DOTALL)
    assert chart is not None
    svg = chart.group(0)
    assert svg.count('<g class="speed-size"') == 3 and svg.count("<circle") == 3
    assert svg.count('class="speed-threshold"') == 1 and ">threshold 5×</text>" in svg
    assert ">input size</text>" in svg and ">speed-up (log scale)</text>" in svg
    assert 'role="img" aria-labelledby="speed-chart-title speed-chart-desc"' in svg
    assert "16 x 16: 5×; 32 x 32: 10×; &lt;b&gt;48&lt;/b&gt;: 20×" in svg  # the description says every point
    assert "<b>48</b>" not in page.text
    rows = re.findall(r'<tr data-speed-size="[^"]*">.*?</tr>', html, re.DOTALL)
    assert len(rows) == 3
    cells = [
        re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", rows[1], re.DOTALL)
    ]
    assert cells == ["32 x 32", "100 µs", "1 ms", "10×", "9× – 11×", "1.5 ms, 800 µs"]
    assert "yours 2.5 ms, the baseline's 2 ms" in html
    assert "<dd data-setup-charge>1.2 µs per timed call</dd>" in html
    assert '<p class="speed-message">10x the baseline &#39;pair-loop&#39;</p>' in html
    assert "by <span data-submitter>&lt;i&gt;Ann&lt;/i&gt;</span>" in page.text
    assert 'data-details-for="speed"' not in html


def test_a_too_slow_submission_says_so_without_repeating_the_message(service: Components, http: TestClient) -> None:
    speed = speed_result(2.0, message="correct, but 2x the baseline 'pair-loop', where at least 5x is needed")
    verdict = verdict_with(service, speed)
    assert verdict.status == Status.TIME_LIMIT_EXCEEDED
    page = http.get(f"/submissions/{submit_and_grade(service, http, verdict, headers=OWNER)}").text
    html = section(page)
    assert 'data-speed-passed="false"' in html and "Not fast enough" in html
    assert page.count("correct, but 2x the baseline") == 1, "the verdict's message, once"
    explanation = "Every test passed, but the code is not fast enough against the baseline."
    assert f'<p class="verdict-explanation" data-verdict-explanation>{explanation}</p>' in page
    assert "ran past its time limit" not in page


def test_a_wrong_timed_call_shows_its_comparison_escaped(service: Components, http: TestClient) -> None:
    details = {
        "path": "out",
        "reason": "values differ <script>alert(1)</script>",
        "expected": {"type": "tensor", "shape": [2, 2], "dtype": "float32", "sample": [0.0, 1.0, 1.0, 0.0]},
        "got": {"type": "tensor", "shape": [2, 2], "dtype": "float32", "sample": [0.0, 1.5, 1.0, 0.0]},
        "max_abs_error": 0.5,
        "error_heatmap": [[0.0, 0.5], [0.0, 0.0]],
    }
    message = "the benchmark, call 3 at size '16 x 16': a wrong result (<img src=x onerror=alert(2)>)"
    speed = speed_result(10.0, sizes=[], message=message, details=details).model_copy(
        update={"speedup": None, "interval": None, "passed": False}
    )
    verdict = verdict_with(service, speed).model_copy(update={"status": Status.WRONG_ANSWER, "message": message})
    page = http.get(f"/submissions/{submit_and_grade(service, http, verdict, headers=OWNER)}").text
    html = section(page)
    assert "Not measured" in html and "speed-chart" not in html
    assert 'data-details-for="speed"' in html and '<table class="compare">' in html
    assert 'class="heatmap"' in html and "hm-title-speed" in html
    assert "values differ &lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert" not in page and "<img src=x" not in page


ODD_SIZES = [
    SizeSpeed.model_construct(
        name=name,
        speedup=speedup,
        interval=interval,
        submission_ms=ms,
        baseline_ms=ms,
        submission_first_ms=ms,
        baseline_first_ms=ms,
        repeats=15,
    )
    for name, speedup, interval, ms in [
        ("not a number", float("nan"), (float("nan"), 1.0), float("nan")),
        ("infinite", float("inf"), (1.0, float("inf")), float("inf")),
        ("zero", 0.0, (0.0, 0.0), 0.0),
        ("negative", -3.0, (-4.0, -2.0), -1.0),
        ("tiny", 1e-300, (1e-300, 1e-299), 1e-300),
        ("huge", 1e300, (1e299, 1e301), 1e300),
        ("\ud800<script>" + "x" * 5000, 2.0, (1.0, 3.0), 1.0),
    ]
]


@pytest.mark.parametrize("extra", [0, 40], ids=["odd values", "more sizes than a problem may have"])
def test_the_chart_draws_any_values(extra: int) -> None:
    """The chart takes whatever a timing holds (the view reads a stored one with a number that is not finite as
    absent, and cuts its sizes to a problem's most: the chart does not count on either)."""
    sizes = ODD_SIZES + size_speeds([3.0] * extra, [f"size {i}" for i in range(extra)])
    svg = speed_chart_svg(sizes, float("inf"))
    assert svg is not None and len(svg) < 40_000
    assert "<script>" not in svg and "\ud800" not in svg
    drawn = svg.count('<g class="speed-size"')
    assert drawn == min(16, len(sizes)), "at most a problem's number of sizes is drawn"
    marks = re.findall(r'data-measured="(true|false)"', svg)
    assert marks[:7] == ["false", "false", "false", "false", "true", "true", "true"]
    assert "not a number: —; infinite: —; zero: —; negative: —;" in svg
    assert not re.search(r"\b(nan|inf)\b", re.sub(r"<[^>]+>", " ", svg)), "no number is shown as nan or inf"


def test_a_stored_timing_that_is_not_finite_reads_as_absent(service: Components, http: TestClient) -> None:
    speed = speed_result(3.0).model_dump(mode="json")
    speed["speedup"], speed["setup_charge_ms"] = float("nan"), float("inf")
    problem = service.registry.get(SPEED_PROBLEM)
    assert problem is not None
    with service.db.session() as session:
        submission_id = crud.create_submission(
            session, problem_id=SPEED_PROBLEM, problem_version=problem.version, source="x = 1\n"
        ).id
        crud.finish_submission(session, submission_id=submission_id, verdict=verdict_with(service, None))
        session.execute(update(Submission).where(Submission.id == submission_id).values(speed=speed))
        session.commit()
    assert http.get(f"/api/submissions/{submission_id}").json()["speed"] is None
    page = http.get(f"/submissions/{submission_id}")
    assert page.status_code == 200 and "speed-chart" not in page.text


def test_the_leaderboard_page_has_the_pages_headers_and_no_inline_script(service: Components, http: TestClient) -> None:
    page = http.get(f"/problems/{SPEED_PROBLEM}/leaderboard")
    assert page.status_code == 200
    assert_page_headers(page)
    assert_no_inline_script(page.text)
    assert '<a href="/problems/pairwise-distances">' in page.text, "back to the problem"
    head = http.head(f"/problems/{SPEED_PROBLEM}/leaderboard")
    assert head.status_code == 200 and head.text == ""
