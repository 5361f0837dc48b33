"""Each problem's `alternatives:` and its files under tests/alternatives/<id>/ are the same solutions:
the check runs the first, the integration tests submit the second through the API."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.config import REPO_ROOT
from grader.problems.registry import parse_problem

PROBLEM_FILES = sorted((REPO_ROOT / "problems").glob("*.yaml"))
ALTERNATIVES_DIR = Path(__file__).parent.parent / "alternatives"


@pytest.mark.parametrize("path", PROBLEM_FILES, ids=lambda path: path.stem)
def test_the_problem_file_lists_every_alternative_file_and_no_other(path: Path) -> None:
    problem = parse_problem(path.read_text(), path.name)
    files = {file.stem.replace("_", " "): file.read_text() for file in (ALTERNATIVES_DIR / path.stem).glob("*.py")}
    assert files, f"{path.stem} has no alternative solution in tests/alternatives/{path.stem}/"
    assert {a.name: a.code for a in problem.alternatives} == files
