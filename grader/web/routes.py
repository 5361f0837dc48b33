"""The web pages: the problem list, a problem with its editor, and a submission's live report.

Server-rendered with Jinja2 (autoescape on); the JavaScript is plain ES modules in static/, loaded from
this origin only. Every page carries a Content-Security-Policy without 'unsafe-inline', so nothing a
problem statement or a submission contains can run as script even if it slipped through escaping.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.types import Scope

from grader.api.deps import AdminCallerDep, DatabaseDep, RegistryDep
from grader.api.leaderboard import board
from grader.containers.protocol import bounded_text
from grader.grading.speed_stats import SpeedResult
from grader.grading.verdict import FINAL, Status, TestStatus
from grader.problems.public import SpeedPublic, by_track, problem_public, problem_summary
from grader.problems.registry import LoadedProblem
from grader.submissions.public import read_submission
from grader.web import report
from grader.web.markup import MAX_SOURCE_HTML, highlight_python, render_markdown, source_window
from grader.web.speed import SCORE_WORDS, SpeedView, speed_view
from grader.web.speed_chart import fmt_times

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
MAX_SUBMITTER = 64  # characters of a submitter's name, as the leaderboard stores it

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "manifest-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    # A report changes while its submission runs: always ask again (the live stream covers the rest).
    "Cache-Control": "no-cache",
}


class RevalidatedStaticFiles(StaticFiles):
    """Static files that browsers revalidate (ETag) on every load, so a new release is never half-cached."""

    def file_response(self, full_path: Any, stat_result: Any, scope: Scope, status_code: int = 200) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers["Cache-Control"] = "no-cache"
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=True,  # every template, whatever its extension
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(
        submission_status=report.SUBMISSION_STATUS,
        test_status=report.TEST_STATUS,
        explanation=report.SUBMISSION_EXPLANATION,
        final_statuses=" ".join(sorted(status.value for status in FINAL)),
    )
    env.filters.update(
        number=report.fmt_number, ms=report.fmt_ms, mb=report.fmt_mb, shape=report.fmt_shape, times=fmt_times
    )
    return env


templates = Jinja2Templates(env=_environment())


def comparison_html(details: Any, test_id: str) -> str | None:
    """A failed comparison's details drawn as the report page draws them (templates/_comparison.html), for
    Run's answer; None where there are none. Escaped like every template: the values came from a submission."""
    laid_out = report.comparison(details, test_id)
    if laid_out is None:
        return None
    return templates.env.get_template("_comparison.html").render(c=laid_out)


web_router = APIRouter(include_in_schema=False)
web_router.mount("/static", RevalidatedStaticFiles(directory=HERE / "static"), name="static")


def _page(request: Request, template: str, context: dict[str, Any], status_code: int = 200) -> HTMLResponse:
    return templates.TemplateResponse(request, template, context, status_code=status_code, headers=PAGE_HEADERS)


def _cut(value: str, limit: int = 100) -> str:
    """An id from the URL, as a page repeats it."""
    return value if len(value) <= limit else value[:limit] + "…"


def _not_found(request: Request, what: str) -> HTMLResponse:
    return _page(request, "not_found.html", {"what": what, "title": "Not found"}, status_code=404)


@web_router.api_route("/", methods=["GET", "HEAD"], response_class=HTMLResponse)
def index_page(request: Request, registry: RegistryDep) -> HTMLResponse:
    groups = by_track([problem_summary(problem) for problem in registry.all()])
    return _page(request, "index.html", {"title": "Problems", "groups": groups})


def _problem_context(problem: LoadedProblem) -> dict[str, Any]:
    public = problem_public(problem)
    return {
        "title": public.title,
        "problem": public,
        "statement_html": render_markdown(public.statement),
        "visible_tests": [
            (test, highlight_python(test.code, label=f"Code of test {number}: {test.name}"))
            for number, test in enumerate(public.visible_tests, start=1)
        ],
        "helpers_html": (
            highlight_python(public.helpers, label="Helpers shared by the tests") if public.helpers else None
        ),
        **speed_section(public.speed),
    }


def speed_section(speed: SpeedPublic | None) -> dict[str, Any]:
    """The problem page's speed section: the sizes' parameters as columns, the baseline's code and the inputs'
    code highlighted."""
    if speed is None:
        return {"speed": None}
    baseline = next((b for b in speed.baselines if b.get("name") == speed.baseline), None)
    return {
        "speed": speed,
        "speed_params": list(dict.fromkeys(key for size in speed.sizes for key in size if key != "name")),
        "baseline_html": (
            highlight_python(baseline["code"], label=f"The baseline, {speed.baseline}") if baseline else None
        ),
        "inputs_html": highlight_python(speed.inputs, label="How each call's inputs are built"),
        "score_words": SCORE_WORDS.get(speed.score, speed.score),
    }


@web_router.api_route("/problems/{problem_id}", methods=["GET", "HEAD"], response_class=HTMLResponse)
def problem_page(problem_id: str, request: Request, registry: RegistryDep) -> HTMLResponse:
    problem = registry.get(problem_id)
    if problem is None:
        return _not_found(request, f"There is no problem “{_cut(problem_id)}”.")
    return _page(request, "problem.html", _problem_context(problem))


def _speed_view(speed: SpeedResult | None, submission_id: str) -> SpeedView | None:
    """The report's speed section; None, and the page without it, for a stored timing it cannot lay out (no
    verdict should hold one: speed.py answers for any value)."""
    if speed is None:
        return None
    try:
        return speed_view(speed)
    except Exception:
        log.exception("the report of %s cannot show its timing", submission_id)
        return None


@web_router.api_route("/submissions/{submission_id}", methods=["GET", "HEAD"], response_class=HTMLResponse)
def submission_page(
    submission_id: str, request: Request, db: DatabaseDep, registry: RegistryDep, admin: AdminCallerDep
) -> HTMLResponse:
    # The admin (its token, sent by a script: a browser sends none) sees every test whole, as in the API.
    view = read_submission(db, registry, submission_id, admin=admin)
    if view is None:
        return _not_found(request, f"There is no submission “{_cut(submission_id)}”.")
    public, source, problem = view.public, view.source, view.problem
    rows = report.report_rows(public, problem)
    # The line of the submitter's own source to mark: where it failed to load, else where the first visible
    # test that raised was (the sandbox reports lines of the submission's file only).
    error_line = public.line or next(
        (t.line for t in public.tests if t.visible and t.line and t.status != TestStatus.PASSED), None
    )
    problem_title = problem.problem.title if problem is not None else public.problem_id
    all_skipped = report.nothing_ran(public)
    window = source_window(source, error_line)
    context = {
        "title": f"{report.SUBMISSION_STATUS[public.status].label} · {problem_title}",
        "submission": public,
        "problem_title": problem_title,
        "problem_exists": problem is not None,
        "rows": rows,
        "tally": report.tally(rows),
        "final": public.status in FINAL,
        "all_skipped": all_skipped,
        # Nothing ran (compile error, an exception or a limit at import, the judge's failure): the message,
        # line and traceback get a section of their own instead of a table of skipped tests.
        "load_failed": public.status in FINAL - {Status.ACCEPTED} and (all_skipped or not public.tests),
        "comparisons": {
            row.position: report.comparison(row.test.details if row.test else None, str(row.position))
            for row in rows
            if row.has_details
        },
        "source_html": highlight_python(
            window.text,
            label="Your code",
            highlight_line=error_line,
            line_numbers=True,
            first_line=window.first,
            max_html=MAX_SOURCE_HTML,
        ),
        "source_window": window,
        "error_line": error_line,
        "speed": _speed_view(public.speed, submission_id),
        "submitter": bounded_text(public.submitter, MAX_SUBMITTER) if public.submitter else None,
    }
    try:
        return _page(request, "submission.html", context)
    except Exception:  # a stored verdict's details that the page cannot lay out: the page, without them
        log.exception("the report of %s cannot show its details", submission_id)
        context["comparisons"] = {position: report.UNAVAILABLE for position in context["comparisons"]}
        if context["speed"] is not None and context["speed"].comparison is not None:
            context["speed"] = replace(context["speed"], comparison=report.UNAVAILABLE)
        return _page(request, "submission.html", context)


@web_router.api_route("/problems/{problem_id}/leaderboard", methods=["GET", "HEAD"], response_class=HTMLResponse)
def leaderboard_page(
    problem_id: str, request: Request, registry: RegistryDep, db: DatabaseDep, admin: AdminCallerDep
) -> HTMLResponse:
    problem = registry.get(problem_id)
    if problem is None:
        return _not_found(request, f"There is no problem “{_cut(problem_id)}”.")
    if problem.speed is None:
        return _not_found(request, f"“{problem.problem.title}” is not speed-graded: it has no leaderboard.")
    with db.session() as session:
        shown = board(session, problem, admin=admin)
    context = {
        "title": f"Leaderboard · {problem.problem.title}",
        "problem": problem_summary(problem),
        "board": shown,
        "admin": admin,  # the admin (its token, from a script) sees which submission set each entry
        "score_words": SCORE_WORDS.get(shown.score, shown.score),
    }
    return _page(request, "leaderboard.html", context)
