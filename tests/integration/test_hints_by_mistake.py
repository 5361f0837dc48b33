"""Hints by mistake, not by bytes, graded for real: each problem's pitfalls written a second way (another
spelling of the same mistake: tests/mistakes/<problem>/*.py, whose first line names the pitfall) are
submitted to the service, and each must get its pitfall's hint.

A variant is the same mistake with other code: another operation, another order of float operations,
NaN where the pitfall gives an infinity, another but equivalent way of registering or reshaping.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from grader.problems.registry import parse_problem
from tests.conftest import PROBLEMS_DIR

pytestmark = pytest.mark.docker

MISTAKES = sorted((Path(__file__).parent.parent / "mistakes").glob("*/*.py"))
PROBLEMS = {
    path.parent.name: parse_problem((PROBLEMS_DIR / f"{path.parent.name}.yaml").read_text(), path.parent.name)
    for path in MISTAKES
}
# The mistake stops a test with an exception, so the verdict is a runtime error, and hints come only
# with wrong answers (a runtime error's message already names the line that raised).
RUNTIME_ERRORS = {("lr-schedule", "product_to_the_minus_half")}


FINAL_WAIT_S = 600  # each submission runs the reference and every pitfall under its own seed


def graded(client: TestClient, source: str, problem_id: str) -> dict:
    """The final verdict of a submission, however long the pitfalls under its seed take on a busy machine."""
    response = client.post("/api/submissions?wait=60", json={"problem_id": problem_id, "source": source})
    assert response.status_code in (200, 202), response.text
    verdict = response.json()
    deadline = time.monotonic() + FINAL_WAIT_S
    while verdict["status"] in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(1.0)
        verdict = client.get(f"/api/submissions/{verdict['id']}").json()
    return verdict


def pitfall_of(path: Path):  # type: ignore[no-untyped-def]
    first = path.read_text().splitlines()[0]
    assert first.startswith("# pitfall: "), f"{path}: the first line names the pitfall"
    name = first.removeprefix("# pitfall: ")
    problem = PROBLEMS[path.parent.name]
    matching = [p for p in problem.pitfalls if p.name == name]
    assert matching, f"{path}: no pitfall {name!r} in {problem.id}"
    return matching[0]


def test_every_pitfall_of_every_problem_is_written_a_second_way() -> None:
    named = {(path.parent.name, pitfall_of(path).name) for path in MISTAKES}
    for problem_file in sorted(PROBLEMS_DIR.glob("*.yaml")):
        problem = parse_problem(problem_file.read_text(), problem_file.name)
        for pitfall in problem.pitfalls:
            if pitfall.slow:  # correct, refused for its speed: no wrong answer to give a hint with
                continue
            assert (problem.id, pitfall.name) in named, f"{problem.id}: pitfall {pitfall.name!r} has no variant"


@pytest.mark.parametrize(
    "path",
    [path for path in MISTAKES],
    ids=lambda p: f"{p.parent.name}/{p.stem}",
)
def test_the_same_mistake_written_another_way_gets_its_hint(path: Path, client: TestClient) -> None:
    pitfall = pitfall_of(path)
    source = path.read_text()
    assert source.strip() != pitfall.code.strip()
    verdict = graded(client, source, path.parent.name)
    if (path.parent.name, path.stem) in RUNTIME_ERRORS:
        assert verdict["status"] == "runtime_error", verdict
        assert verdict.get("hint") is None
        return
    assert verdict["status"] == "wrong_answer", verdict
    assert verdict["hint"] == pitfall.hint, [t["name"] for t in verdict["tests"] if t["status"] != "passed"]
    for test in verdict["tests"]:
        if test["visible"]:  # a hidden test shows its status only
            assert test.get("hint") == (pitfall.hint if test["status"] == "failed" else None), test
