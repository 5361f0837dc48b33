"""The server-side rendering pieces, without Docker: TeX to MathML (and its allowlist), Markdown with raw
HTML off, code highlighting, and the report's numbers, rows and heatmap."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import numpy as np
import pytest

from grader.grading import verdict
from grader.problems.registry import Registry, parse_problem
from grader.submissions import public as schemas
from grader.web.markup import highlight_python, render_markdown
from grader.web.mathml import sanitize_mathml, tex_to_mathml
from grader.web.report import (
    PENDING,
    _split_ranges,
    comparison,
    fmt_ms,
    fmt_number,
    fmt_shape,
    heatmap_svg,
    report_rows,
    tally,
    values_differ,
)
from sandbox.runner.messages import Limits


# -- math ---------------------------------------------------------------------------------------------------
def test_tex_becomes_mathml_with_its_source_annotated() -> None:
    html = str(tex_to_mathml(r"\tilde{e}_t = W_E[t] \cdot \sqrt{d_{\text{model}}}", display=True))
    assert html.startswith('<math xmlns="http://www.w3.org/1998/Math/MathML" display="block"><semantics>')
    assert "<msqrt>" in html and "<mtext>model</mtext>" in html
    assert r'<annotation encoding="application/x-tex">\tilde{e}_t = W_E[t] \cdot' in html


def test_aligned_and_matrices_convert() -> None:
    aligned = str(tex_to_mathml(r"\begin{aligned} a &= b \\ c &= d \end{aligned}", display=True))
    assert "<mtable" in aligned and "math-source" not in aligned
    matrix = str(tex_to_mathml(r"W = \begin{bmatrix} 1 & 2 \\ 3 & 4 \end{bmatrix}", display=True))
    assert matrix.count("<mtr>") == 2


def test_named_spaces_become_lengths_browsers_understand() -> None:
    html = str(tex_to_mathml(r"\sin\!\left(x\right)"))
    assert "negativethinmathspace" not in html
    assert 'width="-0.1667em"' in html


@pytest.mark.parametrize(
    "tex",
    [
        r"\text{<img src=x onerror=alert(1)>}",
        r'\text{<img src="x" onerror="alert(1)"/>}',
        r"\text{<script>alert(1)</script>}",
        r"\href{javascript:alert(1)}{x}",
        r"\style{background:url(x)}{x}",
        "x < y > z & w",
    ],
)
def test_math_never_carries_markup_or_attributes_outside_the_allowlist(tex: str) -> None:
    html = str(tex_to_mathml(tex))
    tags = re.findall(r"<[a-zA-Z][^>]*>", html)  # real tags only: escaped text reads "&lt;"
    assert not [tag for tag in tags if re.match(r"<(img|script)\b", tag)]
    assert not [tag for tag in tags if re.search(r"\s(href|style|on\w+)=", tag)]
    # Whatever the converter made of it, the page gets MathML or the escaped TeX, nothing else.
    assert html.startswith("<math") or html.startswith('<code class="math-source"')


def test_tex_that_does_not_convert_is_shown_as_escaped_source() -> None:
    html = str(tex_to_mathml(r"\left( <b> x^", display=True))
    assert html.startswith('<code class="math-source math-source-block"')
    assert "&lt;b&gt;" in html


def test_sanitizer_rejects_foreign_elements_and_drops_foreign_attributes() -> None:
    with pytest.raises(ValueError):
        sanitize_mathml('<math><mtext><img src="x"/></mtext></math>')
    cleaned = sanitize_mathml('<math><mi onclick="alert(1)" mathvariant="bold" href="javascript:x">a</mi></math>')
    assert cleaned == '<math><mi mathvariant="bold">a</mi></math>'


# -- markdown -------------------------------------------------------------------------------------------
def test_raw_html_in_a_statement_is_text() -> None:
    html = str(render_markdown('Hello <script>alert(1)</script> <img src=x onerror="alert(2)">\n\n<div>block</div>'))
    assert "<script>" not in html and "<img" not in html and "<div>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;div&gt;block&lt;/div&gt;" in html


def test_dangerous_links_are_not_links() -> None:
    html = str(render_markdown("[click](javascript:alert(1)) [ok](https://example.org/x)"))
    assert 'href="javascript' not in html
    assert '<a href="https://example.org/x">ok</a>' in html


def test_inline_and_display_math_and_dollars_that_are_not_math() -> None:
    html = str(render_markdown("Inline $x^2$, display:\n\n$$\\sum_i x_i$$\n\nIt costs $5 and $6."))
    assert html.count("<math") == 2
    assert '<span class="math inline"><math' in html
    # A display formula may scroll sideways: a tab stop with a name, so the keyboard can scroll it.
    block = r'<div class="math block" tabindex="0" role="group" aria-label="Equation">\s*<math [^>]*display="block">'
    assert re.search(block, html)
    assert "It costs $5 and $6." in html
    assert "</math>,</span>" in html  # the comma stays on the formula's line


def test_code_fences_are_highlighted_with_classes_and_tables_scroll() -> None:
    html = str(render_markdown("```python\ndef f(x):\n    return x  # <b>\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"))
    assert '<span class="k">def</span>' in html and '<span class="nf">f</span>' in html
    assert "&lt;b&gt;" in html and "<b>" not in html
    assert 'style="' not in html
    assert '<div class="table-scroll" tabindex="0"><table>' in html
    assert '<pre tabindex="0" role="group" aria-label="Code example"><code class="language-python">' in html


def test_unknown_fence_language_is_escaped_text() -> None:
    html = str(render_markdown("```nosuchlanguage\n<script>x</script>\n```"))
    assert "&lt;script&gt;x&lt;/script&gt;" in html and "<script>" not in html


def test_source_listing_numbers_lines_and_marks_one() -> None:
    html = str(highlight_python("a = 1\nb = (\nc = '<x>'\n", highlight_line=2, line_numbers=True))
    assert '<a id="L-2" name="L-2"></a><span class="hll">' in html
    assert html.count('<span class="normal">') == 3
    assert "&lt;x&gt;" in html
    # The code's block (not the line numbers') is a tab stop named as asked: it scrolls when lines are long.
    assert html.count("<pre") == 2 and html.count('tabindex="0"') == 1
    assert '<pre tabindex="0" role="group" aria-label="Code"><span></span><code>' in html
    named = str(highlight_python("x = 1\n", label='Test "1" <a>'))
    assert '<pre tabindex="0" role="group" aria-label="Test &#34;1&#34; &lt;a&gt;">' in named


# -- report pieces ------------------------------------------------------------------------------------------
def test_numbers_for_people() -> None:
    assert fmt_number(0.05999999865889549) == "0.06"
    assert fmt_number(1234567.0) == "1.23457e+06"
    assert fmt_number("nan") == "nan" and fmt_number(float("inf")) == "inf"
    assert fmt_number(-0.0) == "0"
    assert fmt_number(True) == "True" and fmt_number(7) == "7" and fmt_number(None) == "None"
    assert fmt_ms(None) == "—" and fmt_ms(4.606) == "4.6 ms" and fmt_ms(48.2) == "48 ms" and fmt_ms(2500) == "2.50 s"
    assert fmt_shape([3, 4]) == "(3, 4)" and fmt_shape([0]) == "(0,)" and fmt_shape([]) == "()"


def test_sample_values_differ_with_the_tests_tolerance() -> None:
    assert not values_differ(1.0, 1.0 + 1e-7, 1e-5, 1e-6)
    assert values_differ(0.02, 0.01, 1e-5, 1e-6)
    assert not values_differ("nan", "nan", 1e-5, 1e-6)
    assert values_differ("nan", 1.0, 1e-5, 1e-6)
    assert values_differ("inf", "-inf", 1e-5, 1e-6)
    assert values_differ("a", "b", None, None)


@pytest.mark.parametrize(("size", "parts"), [(3, 3), (37, 16), (16, 16), (100, 7), (5, 1)])
def test_heatmap_blocks_match_numpy_array_split(size: int, parts: int) -> None:
    expected = [(int(block[0]), int(block[-1])) for block in np.array_split(np.arange(size), parts)]
    assert _split_ranges(size, parts) == expected


def test_heatmap_is_an_accessible_svg_with_a_cell_per_block() -> None:
    grid = [[0.0, 0.5, 1.0], [0.25, "inf", 0.0]]
    svg = str(heatmap_svg(grid, [2, 3], "7"))
    assert svg.startswith('<svg class="heatmap" role="img" aria-labelledby="hm-title-7 hm-desc-7"')
    assert "<title" in svg and "largest error 1." in svg
    assert len(re.findall(r"<rect [^>]*><title>", svg)) == 6
    assert "rows 1, columns 1: inf or nan" in svg
    assert "<script" not in svg and "style=" not in svg


def test_heatmap_of_a_pooled_output_names_block_ranges() -> None:
    grid = [[float(r + c) for c in range(16)] for r in range(16)]
    svg = str(heatmap_svg(grid, [37, 512], "x"))
    assert "rows 0–2, columns 0–31" in svg
    assert "as 16 × 16 blocks" in svg


def test_comparison_lays_out_expected_against_got() -> None:
    details = {
        "path": "out",
        "reason": "values differ",
        "expected": {"type": "tensor", "shape": [2, 2], "dtype": "float32", "sample": [1.0, 2.0, 3.0, 4.0]},
        "got": {"type": "tensor", "shape": [2, 2], "dtype": "float32", "sample": [1.0, 2.5, 3.0, 4.0]},
        "mismatches": 1,
        "total": 4,
        "first_mismatches": [{"index": [0, 1], "expected": 2.0, "got": 2.5}],
        "error_heatmap": [[0.0, 0.5], [0.0, 0.0]],
        "max_abs_error": 0.5,
        "max_rel_error": 0.25,
        "rtol": 1e-5,
        "atol": 1e-6,
    }
    view = comparison(details, "1")
    assert view is not None
    assert [(f.label, f.expected, f.got, f.differs) for f in view.fields] == [
        ("type", "tensor", "tensor", False),
        ("shape", "(2, 2)", "(2, 2)", False),
        ("dtype", "float32", "float32", False),
    ]
    assert view.sample == [("1", "1", False), ("2", "2.5", True), ("3", "3", False), ("4", "4", False)]
    assert view.first_mismatches == [{"index": "[0, 1]", "expected": "2", "got": "2.5", "diff": "0.5"}]
    assert view.max_abs_error == "0.5" and view.rtol == "1e-05"
    assert view.heatmap is not None


def test_comparison_of_scalars_and_mismatched_types() -> None:
    view = comparison(
        {
            "path": "shape[1]",
            "reason": "values differ",
            "expected": {"type": "int", "value": 3},
            "got": {"type": "int", "value": 4},
        },
        "2",
    )
    assert view is not None
    assert [(f.label, f.expected, f.got, f.differs) for f in view.fields][-1] == ("value", "3", "4", True)
    other = comparison(
        {
            "path": "out",
            "reason": "expected a tensor, got a None",
            "expected": {"type": "tensor", "shape": [3], "dtype": "float32", "sample": [1.0]},
            "got": {"type": "None"},
        },
        "3",
    )
    assert other is not None
    assert ("type", "tensor", "None", True) in [(f.label, f.expected, f.got, f.differs) for f in other.fields]
    assert other.heatmap is None


TWO_TESTS = """\
id: two-tests
title: Two tests
difficulty: easy
statement: Return twice the input.
starter_code: |
  def double(x):
      pass
entry_points: [double]
reference: |
  def double(x):
      return 2 * x
tests:
  - name: first
    visible: true
    code: |
      return {"out": double(1)}
  - name: second
    code: |
      return {"out": double(2)}
  - name: third
    visible: true
    code: |
      return {"out": double(3)}
"""


def _public(status: verdict.Status, tests: list[schemas.TestPublic], version: str) -> schemas.SubmissionPublic:
    now = datetime.now(UTC)
    return schemas.SubmissionPublic(
        id="a" * 32,
        problem_id="two-tests",
        problem_version=version,
        status=status,
        score=0.0,
        created_at=now,
        tests=tests,
    )


def test_rows_of_a_running_submission_wait_in_file_order() -> None:
    """The hidden tests are one row that waits for the verdict; for the admin (or a problem that opts into
    per-test statuses) each is a row of its own."""
    problem = Registry(Limits(time_s=2, memory_mb=1024, output_kb=256)).make(parse_problem(TWO_TESTS, "two-tests.yaml"))
    landed = [schemas.TestPublic(index=0, name="first", visible=True, status=verdict.TestStatus.PASSED)]
    public = _public(verdict.Status.RUNNING, landed, problem.version)
    public.hidden = schemas.HiddenSummary(total=1)
    rows = report_rows(public, problem)
    assert [(row.position, row.name, row.status) for row in rows] == [
        (1, "first", "passed"),
        (2, "1 hidden test", PENDING),
        (3, "third", PENDING),
    ]
    assert tally(rows) == {"total": 3, "finished": 1, "passed": 1}
    hidden = schemas.TestPublic(index=1, name="hidden test 1", visible=False, status=verdict.TestStatus.FAILED)
    public = _public(verdict.Status.RUNNING, [*landed, hidden], problem.version)
    public.hidden = schemas.HiddenSummary(total=1, per_test=True)
    assert [(row.position, row.name, row.status) for row in report_rows(public, problem)] == [
        (1, "first", "passed"),
        (2, "hidden test 1", "failed"),
        (3, "third", PENDING),
    ]


def test_a_final_verdict_shows_the_hidden_tests_as_a_summary() -> None:
    problem = Registry(Limits(time_s=2, memory_mb=1024, output_kb=256)).make(parse_problem(TWO_TESTS, "two-tests.yaml"))
    tests = [
        schemas.TestPublic(index=0, name="first", visible=True, status=verdict.TestStatus.PASSED),
        schemas.TestPublic(index=1, name="hidden test 1", visible=False),
        schemas.TestPublic(index=2, name="third", visible=True, status=verdict.TestStatus.PASSED),
    ]
    public = _public(verdict.Status.WRONG_ANSWER, tests, problem.version)
    public.hidden = schemas.HiddenSummary(total=1, passed=0, first_failed=1)
    rows = report_rows(public, problem)
    assert [(row.position, row.name, row.status) for row in rows] == [
        (1, "first", "passed"),
        (2, "1 hidden test", "some-failed"),
        (3, "third", "passed"),
    ]
    assert tally(rows) == {"total": 3, "finished": 3, "passed": 2}


def test_rows_of_a_final_verdict_are_its_tests() -> None:
    problem = Registry(Limits(time_s=2, memory_mb=1024, output_kb=256)).make(parse_problem(TWO_TESTS, "two-tests.yaml"))
    tests = [schemas.TestPublic(name="first", visible=True, status=verdict.TestStatus.SKIPPED)]
    rows = report_rows(_public(verdict.Status.INTERNAL_ERROR, tests, problem.version), problem)
    assert [(row.name, row.status) for row in rows] == [("first", "skipped")]
    assert report_rows(_public(verdict.Status.RUNNING, [], "another-version"), problem) == []
