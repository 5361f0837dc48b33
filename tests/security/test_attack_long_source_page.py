"""Issue 41, point 3 (everything rendered has a budget): a report page shows at most MAX_SHOWN_LINES lines of
the submission's source (grader/web/markup.py `source_window`), with a link to the whole source as text.
Before, a correct source of 63 KiB in 32,000 short lines (under the source cap) rendered a page of 2,990 KiB,
every line highlighted, numbered and anchored, on every view (24 views at once held /healthz 3.9 s): the
page's bytes are now bounded whatever the source, and with them the work of making it.

The service is real (SQLite, the problems of problems/) but not started: the verdict is stored as the grader
stores it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from grader.app import create_app
from grader.components import Components, build
from grader.config import Settings
from grader.grading import verdict as verdicts
from grader.grading.verdict import Status
from grader.storage import crud
from grader.web.markup import MAX_SHOWN_LINES
from tests.conftest import PROBLEMS_DIR

LINES = 32_000
SOURCE = "".join("x=1\n" if i != 20_000 else "y=x/0\n" for i in range(LINES))  # 128 KiB is over the cap: short lines
PAGE_BUDGET = 200 * 1024  # bytes of one report page, whatever the source


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Components:
    components = build(Settings(data_dir=tmp_path_factory.mktemp("long-source"), problems_dir=PROBLEMS_DIR))  # type: ignore[call-arg]
    components.db.create_all()
    components.watcher.poll()
    return components


@pytest.fixture(scope="module")
def http(service: Components) -> Iterator[TestClient]:
    with TestClient(create_app(service.settings, components=service)) as client:
        yield client


def store(service: Components, source: str, line: int | None) -> str:
    problem = service.registry.get("embedding-layer")
    assert problem is not None
    with service.db.session() as session:
        submission_id = crud.create_submission(
            session, problem_id=problem.id, problem_version=problem.version, source=source
        ).id
    status = Status.RUNTIME_ERROR if line else Status.ACCEPTED
    verdict = verdicts.Verdict(status=status, score=0.0 if line else 1.0, message="ZeroDivisionError", line=line)
    with service.db.session() as session:
        crud.finish_submission(session, submission_id=submission_id, verdict=verdict)
    return submission_id


@pytest.mark.parametrize("line", [None, 20_001])
def test_a_source_of_many_lines_renders_a_page_within_its_budget(service: Components, http: TestClient, line) -> None:  # type: ignore[no-untyped-def]
    submission_id = store(service, SOURCE, line)
    page = http.get(f"/submissions/{submission_id}")
    assert page.status_code == 200
    assert len(page.content) < PAGE_BUDGET, len(page.content)
    assert f"of {LINES + 1} shown" in page.text  # the source ends with a newline: an empty last line
    assert f'href="/api/submissions/{submission_id}/source"' in page.text
    if line:  # the window holds the marked line, numbered as in the whole source
        assert f'<a id="L-{line}" name="L-{line}"></a><span class="hll">' in page.text
    else:
        assert 'id="L-1"' in page.text and f'id="L-{MAX_SHOWN_LINES + 1}"' not in page.text
    whole = http.get(f"/api/submissions/{submission_id}/source")
    assert whole.status_code == 200 and whole.text == SOURCE


# A white-box review's: one line of 64 KiB whose tokens alternate (a span each: about 27 bytes of HTML per
# character) made a page of 1.7 MB within 400 lines; and 400 such lines of 239 characters.
LONG_LINES = {
    "one line of 64 KiB": ("1&" * 32767)[: 64 * 1024 - 1],
    "400 lines of one-character tokens": "\n".join(("1&" * 120)[:239] for _ in range(400)),
}


@pytest.mark.parametrize("name", sorted(LONG_LINES))
def test_long_lines_render_a_page_within_its_budget(service: Components, http: TestClient, name: str) -> None:
    source = LONG_LINES[name]
    submission_id = store(service, source, 1)
    page = http.get(f"/submissions/{submission_id}")
    assert page.status_code == 200
    assert len(page.content) < PAGE_BUDGET, len(page.content)
    assert f'href="/api/submissions/{submission_id}/source"' in page.text and "shown" in page.text
    assert http.get(f"/api/submissions/{submission_id}/source").text == source
