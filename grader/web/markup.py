"""Problem statements and code as HTML, rendered on the server: Markdown with raw HTML turned off, TeX
math as MathML, code highlighted by Pygments (CSS classes only, so the pages need no inline styles)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt
from markupsafe import Markup, escape
from mdit_py_plugins.dollarmath import dollarmath_plugin
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer, TextLexer, get_lexer_by_name
from pygments.util import ClassNotFound

from grader.web.mathml import tex_to_mathml


def _math(content: str, options: dict[str, Any]) -> str:
    return str(tex_to_mathml(content, display=bool(options.get("display_mode"))))


def _highlight_fence(code: str, lang: str, _attrs: str) -> str:
    """A fenced code block: highlighted when its language is known, escaped text otherwise."""
    try:
        lexer = get_lexer_by_name(lang or "python")
    except ClassNotFound:
        return ""  # markdown-it then escapes the block itself
    return highlight(code, lexer, HtmlFormatter(nowrap=True))


def _markdown() -> MarkdownIt:
    # "commonmark" plus tables and strikethrough; html=False renders any raw HTML in a statement as
    # text, and markdown-it refuses javascript:, vbscript: and data: (except images) link targets.
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.options["highlight"] = _highlight_fence
    # allow_digits=False: "costs $5 and $6" stays text; labels are not used by problem files.
    md.use(dollarmath_plugin, allow_labels=False, allow_digits=False, renderer=_math)

    # Wide tables and display math scroll sideways on narrow screens instead of widening the page.
    def table_open(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        return '<div class="table-scroll" tabindex="0">' + self.renderToken(tokens, idx, options, env)

    def table_close(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        return self.renderToken(tokens, idx, options, env) + "</div>"

    md.add_render_rule("table_open", table_open)
    md.add_render_rule("table_close", table_close)
    return md


_MD = _markdown()


# Punctuation right after inline math moves inside its (nowrap) span, so a line never starts with "." or ",".
_MATH_THEN_PUNCTUATION = re.compile(r"(</math>)</span>([.,;:!?)\]]+)")
# Blocks that scroll sideways when wider than the page: reachable with the keyboard (a tab stop) and named,
# so that keyboard users can scroll them too (WCAG 2.1.1).
_DISPLAY_MATH = re.compile(r'<div class="math (block|inline)">')
_CODE_BLOCK = re.compile(r"<pre>(?=<code)")


def scrollable(label: str) -> str:
    """The attributes of a block that may scroll: a tab stop with an accessible name."""
    return f'tabindex="0" role="group" aria-label="{escape(label)}"'


@lru_cache(maxsize=256)
def render_markdown(text: str) -> Markup:
    """Statement Markdown as safe HTML (cached: a statement changes only with its problem's version)."""
    html = _MATH_THEN_PUNCTUATION.sub(r"\1\2</span>", _MD.render(text))
    html = _DISPLAY_MATH.sub(lambda m: f'<div class="math {m[1]}" {scrollable("Equation")}>', html)
    return Markup(_CODE_BLOCK.sub(f"<pre {scrollable('Code example')}>", html))


def highlight_python(
    code: str,
    *,
    label: str = "Code",
    highlight_line: int | None = None,
    line_numbers: bool = False,
    first_line: int = 1,
    max_html: int | None = None,
) -> Markup:
    """Python source as highlighted HTML in a <pre> (a tab stop named `label`, for it may scroll);
    optionally numbered from `first_line` (a window of a longer source), with one line marked (its number in
    the whole source). `max_html`: past so many bytes of HTML (a span per token: code of one-character tokens
    makes some 27 bytes of HTML per character), the same lines as plain escaped text, numbered alike."""
    marked = highlight_line - first_line + 1 if highlight_line else 0
    formatter = HtmlFormatter(
        cssclass="highlight",
        linenos="table" if line_numbers else False,
        linenostart=first_line,
        lineanchors="L" if line_numbers else "",
        anchorlinenos=False,
        hl_lines=[marked] if marked > 0 else [],
        wrapcode=True,
    )
    if not code.strip():
        return Markup(f'<div class="highlight"><pre {scrollable(label)}><code></code></pre></div>')
    html = highlight(code, PythonLexer(stripnl=False, ensurenl=True), formatter)
    if max_html is not None and len(html) > max_html:
        html = highlight(code, TextLexer(stripnl=False, ensurenl=True), formatter)
    # The code's own <pre> (not the line numbers' one) starts with Pygments' empty span, then <code>.
    return Markup(html.replace("<pre><span></span><code>", f"<pre {scrollable(label)}><span></span><code>", 1))


MAX_SHOWN_LINES = 400  # of a submission's source on its report: the rest is at its raw-text link
MAX_LINE_CHARS = 240  # of each line shown (a longer one is cut, with an ellipsis)
MAX_SHOWN_CHARS = 24 * 1024  # of source shown in all
MAX_SOURCE_HTML = 160 * 1024  # highlighted past this, the window is shown as plain text (highlight_python)


@dataclass(frozen=True)
class SourceWindow:
    """The lines of a source a page shows: `text`, from line `first` of `total`."""

    text: str
    first: int
    total: int
    cut: bool = False  # a line shown was cut short

    @property
    def last(self) -> int:
        return self.first + self.text.count("\n")

    @property
    def whole(self) -> bool:
        return self.first == 1 and self.last >= self.total and not self.cut


def source_window(source: str, marked: int | None = None, lines: int = MAX_SHOWN_LINES) -> SourceWindow:
    """At most `lines` lines of `source`, each cut to MAX_LINE_CHARS, and no more than make MAX_SHOWN_CHARS:
    from the first line, or around line `marked` (up to half the window before it) where it lies beyond the
    first window. However many lines a (capped) source has, and however long, its page holds this much (the
    HTML of a highlighted, numbered line is several times the line)."""
    all_lines = source.split("\n")
    total = len(all_lines)

    def shown(line: str) -> str:
        return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + " …"

    start = 0
    if marked is not None and 0 < marked <= total:
        first = [shown(line) for line in all_lines[:lines]]
        if marked > len(first) or sum(len(line) + 1 for line in first[:marked]) > MAX_SHOWN_CHARS:
            start, budget = marked - 1, MAX_SHOWN_CHARS // 2  # back from the marked line, half the budget
            while start > 0 and marked - start < lines // 2 and budget - len(shown(all_lines[start - 1])) > 0:
                start -= 1
                budget -= len(shown(all_lines[start])) + 1
    window: list[str] = []
    budget = MAX_SHOWN_CHARS
    for line in all_lines[start : start + lines]:
        line = shown(line)
        if window and budget - len(line) < 0:
            break
        window.append(line)
        budget -= len(line) + 1
    cut = any(len(line) > MAX_LINE_CHARS for line in all_lines[start : start + len(window)])
    return SourceWindow("\n".join(window), start + 1, total, cut)
