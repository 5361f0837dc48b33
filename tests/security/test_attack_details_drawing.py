"""Attacks on the drawing of a failed comparison's details (grader/grading/details.py, grader/web/report.py,
grader/web/heatmap.py, templates/_comparison.html), as the report page and POST /api/runs' `details_html`
draw them. Everything in `details` is written by the judge from what a submission returned: hostile text,
numbers, shapes and nesting. The properties held here:

- whatever the details hold, the drawing is escaped: only the template's own elements and attributes come
  out, no text of the details becomes markup or an attribute, and drawing never raises;
- the drawing is bounded in size and time (it runs on the event loop, inside the async Run route), for the
  largest details the caps (grading/bounds.py cap_details) let through and for what the judge writes;
- Run's answer draws with ids of its own (run-N), never from anything a test carries, and the page that
  inserts `details_html` (the problem page) is served with a CSP that runs no inline script.

No Docker: the service is built but not started, and the run's answer is stubbed.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.grading.bounds import cap_details
from grader.grading.compare import Tolerance, compare_outputs
from grader.web.routes import comparison_html

EVIL = [
    "<zz onmouseover=alert(1)>",
    '"><zz>',
    "'><zz>",
    "</code></td><zz>",
    "<script>alert(1)</script>",
    "]]><zz>",
    "<!--",
    "<svg onload=alert(1)>",
    "javascript:alert(1)",
    "\u2028",
    "\x00",
    "&amp;",
]
MARKUP = [text for text in EVIL if "<" in text]

# What _comparison.html and heatmap.py draw: nothing else may appear.
TAGS = {
    "p", "code", "strong", "div", "table", "caption", "thead", "tr", "th", "td", "tbody", "span", "dl", "dt",
    "dd", "figure", "figcaption", "svg", "title", "desc", "text", "rect", "defs", "lineargradient", "stop",
}  # fmt: skip
ATTRIBUTES = {
    "class", "scope", "tabindex", "role", "aria-labelledby", "viewbox", "width", "height", "xmlns", "id", "x",
    "y", "transform", "fill", "text-anchor", "offset", "stop-color",
}  # fmt: skip


class _Audit(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.bad: list[Any] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in TAGS:
            self.bad.append(tag)
        for name, value in attrs:
            if name not in ATTRIBUTES:
                self.bad.append((tag, name))
            if value and any(word in value for word in ("zz", "alert", "javascript", "<", '"', "'")):
                self.bad.append((tag, name, value))

    handle_startendtag = handle_starttag


def assert_escaped(html: str) -> None:
    for text in MARKUP:
        assert text not in html, text
    assert "<zz" not in html and "<script" not in html
    audit = _Audit()
    audit.feed(html)
    audit.close()
    assert audit.bad == []


scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False),
    st.sampled_from(EVIL),
    st.sampled_from(["nan", "inf", "-inf"]),
    st.text(max_size=20),
)
anything = st.recursive(
    scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.one_of(st.sampled_from(EVIL), st.text(max_size=4)), inner)
    ),
    max_leaves=25,
)
description = st.one_of(
    anything,
    st.fixed_dictionaries(
        {},
        optional={
            "type": anything,
            "shape": st.one_of(anything, st.lists(st.integers(-5, 2**64), max_size=5)),
            "dtype": anything,
            "length": anything,
            "keys": st.one_of(anything, st.lists(st.sampled_from(EVIL), max_size=5)),
            "value": anything,
            "sample": st.one_of(anything, st.lists(scalar, max_size=70)),
        },
    ),
)
mismatch = st.one_of(
    anything, st.fixed_dictionaries({}, optional={"index": anything, "expected": scalar, "got": scalar})
)
hostile_details = st.fixed_dictionaries(
    {},
    optional={
        "path": anything,
        "reason": anything,
        "expected": description,
        "got": description,
        "mismatches": anything,
        "total": anything,
        "first_mismatches": st.one_of(anything, st.lists(mismatch, max_size=70)),
        "max_abs_error": anything,
        "max_rel_error": anything,
        "nonfinite_mismatches": anything,
        "first_nonfinite": anything,
        "rtol": anything,
        "atol": anything,
        "round": anything,
        "error_heatmap": st.one_of(anything, st.lists(st.lists(scalar, max_size=40), max_size=40)),
        # Keys the model does not know, named like what the template or the layout uses.
        "heatmap": st.sampled_from(EVIL),
        "fields": anything,
        "sample_total": st.sampled_from(EVIL),
        "__class__": anything,
    },
)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(hostile_details)
def test_hostile_details_are_drawn_escaped_and_never_raise(details: dict[str, Any]) -> None:
    html = comparison_html(details, "run-0")
    if html is not None:
        assert_escaped(html)


def _largest_capped_details() -> dict[str, Any]:
    """The largest details the caps let through: every list at MAX_DETAIL_ITEMS, every text at its cap."""
    text = "<zz onmouseover=alert(1)>\"'&" * 60
    number = -1.2345678901234567e-300
    side = {
        "type": text,
        "shape": [2**62] * 64,
        "dtype": text,
        "length": 2**62,
        "keys": [text] * 64,
        "value": text,
        "sample": [number] * 64,
    }
    return cap_details(
        {
            "path": text,
            "reason": text,
            "expected": side,
            "got": {**side, "sample": [-number] * 64},
            "mismatches": 2**62,
            "total": 2**62,
            "first_mismatches": [{"index": [2**62] * 64, "expected": number, "got": -number}] * 64,
            "max_abs_error": number,
            "max_rel_error": number,
            "nonfinite_mismatches": 2**62,
            "first_nonfinite": [2**62] * 64,
            "rtol": number,
            "atol": number,
            "round": 3,
            "error_heatmap": [[number * (i + j + 1) for j in range(64)] for i in range(64)],
        }
    )


def _timed_draw(details: Any, repeat: int = 5) -> tuple[str, float]:
    html = comparison_html(details, "run-0")  # the template compiled once
    assert html is not None
    started = time.perf_counter()
    for _ in range(repeat):
        comparison_html(details, "run-0")
    return html, (time.perf_counter() - started) / repeat


def test_the_largest_capped_details_draw_small_and_fast() -> None:
    # Measured: about 185 KB of HTML in about 12 ms. The bound leaves room for a slow CI machine while a
    # drawing that grew with the details (a cap lost, a loop over the whole grid) would fail it.
    html, seconds = _timed_draw(_largest_capped_details())
    assert_escaped(html)
    assert len(html) < 512 * 1024
    assert seconds < 0.25
    # The heatmap is drawn at MAX_CELLS x MAX_CELLS at most, whatever the grid holds.
    assert html.count("<rect ") <= 32 * 32 + 1


def test_what_the_judge_writes_for_a_hostile_output_is_drawn_escaped_and_bounded() -> None:
    key = "<img src=x onerror=alert(1)>" + "A" * 300
    expected = {key: _tensor(np.random.default_rng(0).random((512, 512)))}
    got_array = np.random.default_rng(1).random((512, 512)) * 1e300
    got_array[0, 0] = np.nan
    got = {key: _tensor(got_array)}
    comparison = compare_outputs(expected, got, {}, Tolerance())
    assert not comparison.passed
    details = cap_details(json.loads(json.dumps(comparison.details)))
    html, seconds = _timed_draw(details)
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html  # shown, as text
    assert_escaped(html)
    assert len(html) < 64 * 1024
    assert seconds < 0.05


def _tensor(array: np.ndarray) -> Any:
    from grader.containers.values import Tensor

    return Tensor("float64", array)


def test_deeply_nested_details_are_read_without_recursion() -> None:
    # Stored verdicts pass cap_details (depth 6); a deeper value must still not fail the reader.
    deep: Any = "x"
    for _ in range(5000):
        deep = [deep]
    for where in ({"reason": deep}, {"expected": {"value": deep}}, {"first_mismatches": [{"index": deep}]}):
        html = comparison_html(where, "1")
        assert html is None or "<zz" not in html
    capped = cap_details({"expected": {"value": deep}})
    assert comparison_html(capped, "1") is not None


# -- through the API: Run's answer, and the page that inserts it ---------------------------------------
@pytest.fixture
def drawing_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    from grader.app import create_app
    from grader.components import build
    from grader.config import Settings
    from grader.grading.verdict import Status, TestStatus
    from grader.submissions.runs import RunPublic, RunTestPublic
    from tests.unit.conftest import TINY_PROBLEM

    problems = tmp_path / "problems"
    problems.mkdir()
    (problems / "tiny.yaml").write_text(TINY_PROBLEM)
    settings_ = Settings(data_dir=tmp_path / "data", problems_dir=problems, problems_poll_s=0, max_grading_starts=1)  # type: ignore[call-arg]
    service = build(settings_)
    service.db.create_all()
    service.watcher.poll()
    hostile = _largest_capped_details()

    async def answer(problem: Any, request: Any, who: str) -> RunPublic:
        tests = [
            RunTestPublic(
                index=i,
                name='"><zz id=hm-title-run-0>',
                visible=True,
                status=TestStatus.FAILED,
                message="<zz>",
                details=hostile,
            )
            for i in range(3)
        ]
        return RunPublic(problem_id=problem.id, status=Status.WRONG_ANSWER, score=0.0, tests=tests)

    monkeypatch.setattr(service.runs, "answer", answer)
    with TestClient(create_app(settings_, components=service)) as client:
        yield client


def test_runs_details_html_is_escaped_bounded_and_uses_its_own_ids(drawing_client: TestClient) -> None:
    response = drawing_client.post(
        "/api/runs", json={"problem_id": "tiny-problem", "source": "def double(x):\n    return 2 * x\n"}
    )
    assert response.status_code == 200, response.text
    tests = response.json()["tests"]
    assert len(tests) == 3
    for position, test in enumerate(tests):
        html = test["details_html"]
        assert isinstance(html, str)
        assert_escaped(html)
        assert len(html) < 512 * 1024
        # The heatmap's ids are the run's own, by position: nothing a test carries names an element.
        assert f'id="hm-title-run-{position}"' in html
        assert "zz id" not in html


def test_the_page_that_inserts_details_html_runs_no_inline_script(drawing_client: TestClient) -> None:
    response = drawing_client.get("/problems/tiny-problem")
    assert response.status_code == 200
    policy = response.headers["content-security-policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
    assert directives["script-src"] == "'self'"
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert directives["default-src"] == "'none'"
    assert response.headers["x-content-type-options"] == "nosniff"


def test_non_finite_numbers_never_reach_the_drawing_as_markup() -> None:
    details = {
        "max_abs_error": math.inf,
        "max_rel_error": "nan",
        "error_heatmap": [["inf", "nan", 1e308, -1e308], [2**2000, "<zz>", None, True]],
        "expected": {"shape": [2, 4], "sample": ["nan", "inf", "-inf", 1e-320]},
        "got": {"shape": [2, 4], "sample": ["<zz>", None, 2**4000, -0.0]},
    }
    html = comparison_html(details, "run-0")
    assert html is not None
    assert_escaped(html)
