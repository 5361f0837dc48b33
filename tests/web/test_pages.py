"""The HTML pages through the TestClient, against the real service: status codes, what each page shows,
what it must never show (hidden tests, the reference), escaping, and the security headers."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.conftest import CASES_DIR
from tests.web.solutions import CORRECT, SCRIPT_IN_MESSAGE

pytestmark = pytest.mark.docker


def case(name: str) -> str:
    return (CASES_DIR / "embedding-layer" / name / "solution.py").read_text()


def assert_page_headers(response: Any) -> None:
    assert response.headers["content-type"].startswith("text/html")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert "default-src 'none'" in policy
    assert "frame-ancestors 'none'" in policy
    assert response.headers["x-content-type-options"] == "nosniff"


def assert_no_inline_script(html: str) -> None:
    """Every <script> loads a file from this origin; no element carries an event-handler attribute."""
    for tag in re.findall(r"<script\b[^>]*>", html):
        assert re.search(r'\bsrc="/static/[\w.-]+\.js"', tag), tag
    assert not re.search(r"<script\b[^>]*>\s*[^<\s]", html), "a script element with inline content"
    assert not re.search(r"<[a-z][^>]*\son[a-z]+\s*=", html, re.IGNORECASE), "an inline event handler"
    assert "javascript:" not in html


@pytest.fixture(scope="module")
def wrong_answer(submit: Any) -> dict[str, Any]:
    return submit(case("forgot-scaling"))  # type: ignore[no-any-return]


def test_index_lists_problems_with_difficulty_and_tags(client: TestClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert_page_headers(response)
    html = response.text
    assert '<a href="/problems/embedding-layer">Embedding Layer</a>' in html
    assert "difficulty-easy" in html and "</span>Easy</span>" in html
    assert '<li class="tag">transformer</li>' in html
    assert 'data-progress-for="embedding-layer"' in html  # filled from this browser's localStorage
    assert "<main" in html and "<nav" in html and "<header" in html and "<footer" in html
    assert_no_inline_script(html)


def test_index_shows_the_transformer_track_in_order_then_the_other_problems(client: TestClient) -> None:
    html = client.get("/").text
    track = html[html.index(">The Transformer <") : html.index("More problems")]
    track_ids = re.findall(r'<a href="/problems/([a-z0-9-]+)">', track)
    problems = {p["id"]: p for p in client.get("/api/problems").json()}
    in_track = sorted((p for p in problems.values() if p["track"] == "The Transformer"), key=lambda p: p["order"])
    assert track_ids == [p["id"] for p in in_track]
    assert track_ids[:3] == ["embedding-layer", "positional-encoding", "scaled-dot-product-attention"]
    assert track.startswith(">The Transformer <") and '<ol class="problem-list track">' in track
    assert re.findall(r'<span class="track-step" aria-hidden="true">(\d+)</span>', track) == [
        str(n) for n in range(1, len(track_ids) + 1)
    ]
    rest = re.findall(r'<a href="/problems/([a-z0-9-]+)">', html[html.index("More problems") :])
    assert rest and set(rest) == {pid for pid, p in problems.items() if p["track"] is None}
    assert "descriptive-statistics" in rest and "inverted-dropout" in rest


def test_problem_page_renders_statement_math_tests_and_editor(client: TestClient) -> None:
    response = client.get("/problems/embedding-layer")
    assert response.status_code == 200
    assert_page_headers(response)
    html = response.text
    assert html.count("<math") > 20
    assert "math-source" not in html  # every formula of the statement converted
    assert "\\sqrt{d_{\\text{model}}}$" not in html  # no raw TeX left in the text
    assert '<annotation encoding="application/x-tex">' in html
    assert '<div class="table-scroll" tabindex="0"><table>' in html  # the statement's Markdown table
    # The starter code is in the editor, escaped as text; the visible tests are highlighted.
    assert '<textarea id="source"' in html
    assert "def embed_tokens(embedding: nn.Embedding, tokens: torch.Tensor, d_model: int) -&gt; torch.Tensor:" in html
    assert '<label for="source">Your solution</label>' in html
    assert "the numerical example from the statement" in html
    assert '<span class="n">embed_tokens</span>' in html  # Pygments' classes, no inline styles
    assert not re.search(r'\sstyle="', html)  # the CSP allows no inline style either
    assert_no_inline_script(html)


def test_problem_page_never_shows_the_reference_hidden_tests_or_pitfalls(client: TestClient) -> None:
    html = client.get("/problems/embedding-layer").text
    assert "return embedding(tokens) * math.sqrt(d_model)" not in html  # the reference's body
    assert "d_model = 1024 (the big Transformer)" not in html  # a hidden test's name
    assert "the paper's sizes, a vocabulary of 37000 and d_model = 512" not in html
    assert "forgot the sqrt(d_model) scaling" not in html  # a pitfall's name
    assert "multiply it by math.sqrt(d_model)" not in html  # a pitfall's hint
    assert "hidden" in html  # only their number is told


@pytest.mark.parametrize(
    "path", ["/problems/no-such-problem", "/submissions/0123456789abcdef0123456789abcdef", "/submissions/x"]
)
def test_unknown_pages_are_404_html(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert_page_headers(response)
    assert "Not found" in response.text
    assert "See all problems" in response.text


def test_a_hostile_path_segment_is_escaped_on_the_404_page(client: TestClient) -> None:
    response = client.get("/problems/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E")
    assert response.status_code == 404
    assert "<img" not in response.text
    assert "&lt;img src=x onerror=alert(1)&gt;" in response.text


def test_head_requests_are_answered(client: TestClient) -> None:
    for path in ("/", "/problems/embedding-layer"):
        response = client.head(path)
        assert response.status_code == 200
        assert response.text == ""


def test_static_files_are_served_and_revalidated(client: TestClient) -> None:
    for name, kind in (("app.css", "text/css"), ("report.js", "javascript"), ("editor.js", "javascript")):
        response = client.get(f"/static/{name}")
        assert response.status_code == 200, name
        assert kind in response.headers["content-type"]
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["x-content-type-options"] == "nosniff"
    assert client.get("/static/../routes.py").status_code == 404
    assert client.get("/static/%2e%2e/routes.py").status_code == 404
    assert client.get("/static/no-such-file.js").status_code == 404


def test_wrong_answer_report_shows_expected_against_got_heatmap_and_hint(
    client: TestClient, wrong_answer: dict[str, Any]
) -> None:
    assert wrong_answer["status"] == "wrong_answer"
    response = client.get(f"/submissions/{wrong_answer['id']}")
    assert response.status_code == 200
    assert_page_headers(response)
    html = response.text
    assert 'data-status="wrong_answer"' in html
    assert ">Wrong answer</h1>" in html  # in words, not only in colour
    assert "The lookup is right but not scaled; multiply it by math.sqrt(d_model)." in html
    # The first visible test's 3 x 4 output: shape, dtype, samples, errors, first mismatches, heatmap.
    assert "Expected against got" in html
    assert "<code>(3, 4)</code>" in html and "<code>float32</code>" in html
    assert "<code>0.02</code>" in html and "<code>0.01</code>" in html  # expected 0.02, got 0.01
    assert "Max abs error" in html and "Max rel error" in html and "<code>0.5</code>" in html
    assert "First mismatches" in html and "<code>[0, 0]</code>" in html
    assert '<svg class="heatmap" role="img"' in html
    assert html.count("<rect ") >= 12  # one cell per element of the 3 x 4 output, plus the legend
    assert "12 of 12 values differ" in html
    assert_no_inline_script(html)


def test_report_hides_hidden_tests_details(client: TestClient, wrong_answer: dict[str, Any]) -> None:
    """The hidden tests are one row: how many passed and the first that did not, no row (or status) each."""
    html = client.get(f"/submissions/{wrong_answer['id']}").text
    hidden = [t for t in wrong_answer["tests"] if not t["visible"]]
    assert hidden and all(re.fullmatch(r"hidden test \d+", t["name"]) and t["status"] is None for t in hidden)
    summary = wrong_answer["hidden"]
    assert summary["total"] == len(hidden) and summary["per_test"] is False
    for test in hidden:
        assert f'data-test-name="{test["name"]}"' not in html
    assert html.count("data-hidden-summary") == 1
    assert (
        f"{summary['passed']} of {len(hidden)} passed · first that did not: hidden test {summary['first_failed']}"
        in html
    )
    assert "d_model = 1024" not in html
    assert "37000 x 512" not in html
    # Only the visible failures have a details row.
    failed_visible = [t for t in wrong_answer["tests"] if t["visible"] and t["status"] != "passed"]
    assert html.count('class="details-row"') == len(failed_visible)


def test_the_submitted_source_is_shown_escaped(client: TestClient, submit: Any) -> None:
    verdict = submit(SCRIPT_IN_MESSAGE)
    assert verdict["status"] == "runtime_error"
    html = client.get(f"/submissions/{verdict['id']}").text
    assert "<script>alert(1)</script>" not in html
    assert "ValueError: &lt;script&gt;alert(1)&lt;/script&gt;" in html  # the message and the traceback
    assert html.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 3
    raise_line = next(n for n, line in enumerate(SCRIPT_IN_MESSAGE.splitlines(), 1) if "raise" in line)
    assert f'href="#L-{raise_line}">line {raise_line}</a> of your code' in html  # the raise, in its own file
    assert '<span class="hll">' in html  # ... marked in the source below
    assert_no_inline_script(html)


def test_compile_error_report_names_and_marks_the_line(client: TestClient, submit: Any) -> None:
    verdict = submit(case("syntax-error"))
    assert verdict["status"] == "compile_error"
    html = client.get(f"/submissions/{verdict['id']}").text
    assert ">Compile error</h1>" in html
    assert "Your code did not load" in html
    assert "SyntaxError" in html
    assert '<a href="#L-6">line 6</a>' in html
    assert '<a id="L-6" name="L-6"></a><span class="hll">' in html
    assert "tests were skipped" in html


def test_accepted_report(client: TestClient, submit: Any) -> None:
    verdict = submit(CORRECT)
    assert verdict["status"] == "accepted"
    html = client.get(f"/submissions/{verdict['id']}").text
    assert ">Accepted</h1>" in html
    total = len(verdict["tests"])
    assert f'<span data-passed>{total}</span><span class="score-sep">/</span><span data-total>{total}</span>' in html
    assert "score 100%" in html
    assert 'class="details-row"' not in html
    assert 'data-final="true"' in html
