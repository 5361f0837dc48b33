"""`grader submit` and `grader problems list|show`, run as a learner runs them: the installed command,
in a process of its own, against the real service served by uvicorn on a port."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from grader.client import MARKS
from grader.components import Components
from grader.config import REPO_ROOT
from grader.problems.registry import parse_problem
from tests.conftest import PROBLEMS_DIR, wait_until_ready

pytestmark = pytest.mark.docker

GRADER = REPO_ROOT / ".venv" / "bin" / "grader"
EMBEDDING = parse_problem((PROBLEMS_DIR / "embedding-layer.yaml").read_text(), "embedding-layer.yaml")
UNSCALED = next(p.module for p in EMBEDDING.pitfalls if "sqrt" in p.hint)


@pytest.fixture(scope="module")
def url(service: Components) -> Iterator[str]:
    """The session's service (tests/conftest.py), served on a port of its own for the command to reach."""
    from grader.app import create_app

    settings, components = service.settings, service
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(settings, components=components), port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    try:
        wait_until_ready(components)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)


def printed_as_test(stdout: str, name: str) -> int:
    """How many times a test was printed as a test (its mark, then its name)."""
    marks = {mark.strip() for mark in MARKS.values()}
    return sum(1 for line in stdout.splitlines() if line[2:6].strip() in marks and line[8:].startswith(name + " "))


def grader(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(GRADER), *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_an_accepted_submission_exits_0_and_shows_each_test(url: str, tmp_path: Path) -> None:
    solution = tmp_path / "solution.py"
    solution.write_text(EMBEDDING.reference)
    done = grader("submit", str(solution), "--problem", "embedding-layer", "--url", url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "accepted  score 1.000" in done.stdout
    visible = [test.name for test in EMBEDDING.tests if test.visible]
    hidden = len(EMBEDDING.tests) - len(visible)
    assert done.stdout.count("  ok  ") == len(visible) + 1, done.stdout  # each visible test, and the hidden ones
    assert f"hidden tests: {hidden} of {hidden} passed\n" in done.stdout
    assert "hidden test 1" not in done.stdout, "no hidden test is shown on its own"
    assert f"({len(EMBEDDING.tests)}/{len(EMBEDDING.tests)} tests)" in done.stdout


def test_a_wrong_submission_exits_1_with_expected_against_got_and_the_hint(url: str, tmp_path: Path) -> None:
    solution = tmp_path / "solution.py"
    solution.write_text(UNSCALED)
    done = grader("submit", str(solution), "--problem", "embedding-layer", "--url", url)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "wrong_answer" in done.stdout and "hint: " in done.stdout
    assert "first failing visible test:" in done.stdout
    assert "expected: " in done.stdout and "got: " in done.stdout and "max_abs_error" in done.stdout
    assert "  output:   out" in done.stdout, "the path of the output that differs"
    for test in EMBEDDING.tests:
        if test.visible:
            assert printed_as_test(done.stdout, test.name) == 1, (test.name, done.stdout)  # each test once
    assert "hidden tests: " in done.stdout and "the first that did not: hidden test " in done.stdout


def test_a_wrong_value_in_a_list_is_named_by_its_path(url: str, tmp_path: Path) -> None:
    """lr-schedule returns lists of rates: the first failing one is named as the API names it (`rates[0]`)."""
    schedule = parse_problem((PROBLEMS_DIR / "lr-schedule.yaml").read_text(), "lr-schedule.yaml")
    solution = tmp_path / "solution.py"
    solution.write_text(next(p.module for p in schedule.pitfalls if "-0.5 instead" in p.name))
    done = grader("submit", str(solution), "--problem", "lr-schedule", "--url", url)
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(r"^  output:   rates\[\d+\]$", done.stdout, re.MULTILINE), done.stdout
    for test in schedule.tests:
        if test.visible:
            assert printed_as_test(done.stdout, test.name) == 1, (test.name, done.stdout)


def test_run_runs_the_visible_tests_without_submitting(url: str, tmp_path: Path) -> None:
    solution = tmp_path / "solution.py"
    solution.write_text(UNSCALED)
    done = grader("submit", str(solution), "--problem", "embedding-layer", "--url", url, "--run", "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    assert '"status": "wrong_answer"' in done.stdout and '"expected"' in done.stdout


def test_usage_and_connection_errors_exit_2(url: str, tmp_path: Path) -> None:
    solution = tmp_path / "solution.py"
    solution.write_text(EMBEDDING.reference)
    assert grader("submit", str(solution)).returncode == 2, "no --problem"
    assert grader("submit", str(tmp_path / "missing.py"), "--problem", "embedding-layer", "--url", url).returncode == 2
    unknown = grader("submit", str(solution), "--problem", "no-such-problem", "--url", url)
    assert unknown.returncode == 2 and "404" in unknown.stderr
    nobody = grader("submit", str(solution), "--problem", "embedding-layer", "--url", "http://127.0.0.1:9")
    assert nobody.returncode == 2 and "cannot reach" in nobody.stderr


def test_problems_list_and_show(url: str) -> None:
    listing = grader("problems", "list", "--url", url)
    assert listing.returncode == 0 and "embedding-layer" in listing.stdout
    shown = grader("problems", "show", "embedding-layer", "--url", url)
    assert shown.returncode == 0 and "entry points: create_embedding_layer, embed_tokens" in shown.stdout
    assert "--- starter code ---" in shown.stdout


def test_a_folder_of_solutions_is_graded_as_a_batch_into_json_lines(url: str, tmp_path: Path) -> None:
    folder = tmp_path / "solutions"
    folder.mkdir()
    (folder / "a_correct.py").write_text(EMBEDDING.reference)
    (folder / "b_unscaled.py").write_text(UNSCALED)
    (folder / "c_empty.py").write_text("   \n")
    (folder / "notes.txt").write_text("not a solution")
    out = tmp_path / "verdicts.jsonl"
    done = grader("submit", "--batch", str(folder), "--problem", "embedding-layer", "--url", url, "--out", str(out))
    assert done.returncode == 1, done.stdout + done.stderr  # not every one is accepted
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["file"] for line in lines] == ["a_correct.py", "b_unscaled.py", "c_empty.py"]
    assert lines[0]["status"] == "accepted" and lines[0]["metadata"] == {"file": "a_correct.py"}
    assert lines[1]["status"] == "wrong_answer" and lines[1]["batch_id"] == lines[0]["batch_id"]
    assert lines[2]["refused"]["status"] == 422 and "empty" in lines[2]["refused"]["detail"]
    assert "3 solutions in" in done.stderr and "1 accepted" in done.stderr and "1 refused" in done.stderr
    assert "3/3 graded" in done.stderr  # progress, as lines when stderr is not a terminal

    items = tmp_path / "items.jsonl"
    items.write_text(
        json.dumps({"file": "solutions/a_correct.py", "metadata": {"sample": 1}})
        + "\n\n"
        + json.dumps({"source": EMBEDDING.reference, "problem_id": "embedding-layer"})
        + "\n"
    )
    done = grader("submit", "--batch", str(items), "--problem", "embedding-layer", "--url", url)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["status"] for line in lines] == ["accepted", "accepted"]
    assert lines[0]["metadata"] == {"sample": 1} and lines[1]["file"] == "line 3"
    assert grader("submit", "--batch", str(tmp_path / "missing"), "--url", url).returncode == 2
    assert grader("submit", "--batch", str(folder), "--url", url).returncode == 2  # a folder needs --problem
