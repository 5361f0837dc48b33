"""Run is Submit on the visible tests: every problem in problems/, through POST /api/runs and through a real
submission, with its reference, each of its alternatives and its first pitfalls, gets the same status on
every visible test (the same job builder: helpers, seeds, limits, checkers). And each problem's custom test
on its defaults, through Run, accepts the reference: what the problem page's form starts from works.

Real sandboxes, a real database; the runs' own rate limit is off here (this file makes some hundred runs)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from grader.problems.registry import parse_problem
from grader.problems.schema import Problem
from tests.conftest import PROBLEMS_DIR

pytestmark = pytest.mark.docker

PROBLEMS = {path.stem: parse_problem(path.read_text(), path.name) for path in sorted(PROBLEMS_DIR.glob("*.yaml"))}
PITFALLS_TRIED = 2


def accepted(problem: Problem) -> str:
    """The reference, or where the problem forbids what its reference uses (forbid:, which holds for every
    submission), its first alternative."""
    return problem.alternatives[0].code if problem.forbid else problem.reference


def modules(problem: Problem) -> list[tuple[str, str]]:
    return [
        ("the reference", accepted(problem)),
        *((f"alternative {a.name!r}", a.code) for a in problem.alternatives),
        *((f"pitfall {p.name!r}", p.code) for p in problem.pitfalls[:PITFALLS_TRIED]),
    ]


@pytest.mark.parametrize("problem_id", sorted(PROBLEMS))
def test_run_and_submit_give_every_visible_test_the_same_status(client: TestClient, problem_id: str) -> None:
    problem = PROBLEMS[problem_id]
    visible = [test.name for test in problem.tests if test.visible]  # names are unique in a problem
    for label, source in modules(problem):
        body = {"problem_id": problem_id, "source": source}
        run = client.post("/api/runs", json=body)
        assert run.status_code == 200, (label, run.text)
        submitted = client.post("/api/submissions?wait=60", json=body)
        assert submitted.status_code == 200, (label, submitted.text)
        on_run = {test["name"]: test["status"] for test in run.json()["tests"]}
        on_submit = {test["name"]: test["status"] for test in submitted.json()["tests"] if test["visible"]}
        assert list(on_run) == visible, (label, on_run)
        assert on_run == on_submit, (label, run.json()["message"], submitted.json()["message"])
        if label == "the reference" or label.startswith("alternative"):
            assert set(on_run.values()) == {"passed"}, (label, run.json())


@pytest.mark.parametrize("problem_id", sorted(PROBLEMS))
def test_the_custom_test_on_its_defaults_accepts_the_reference(client: TestClient, problem_id: str) -> None:
    problem = PROBLEMS[problem_id]
    assert problem.custom_test is not None, f"{problem_id} has no custom test"
    defaults = {argument.name: argument.default for argument in problem.custom_test.arguments}
    for inputs in ({}, defaults):  # left out, or sent as the page's form sends them
        body = {"problem_id": problem_id, "source": accepted(problem), "inputs": inputs}
        run = client.post("/api/runs", json=body)
        assert run.status_code == 200, run.text
        answer = run.json()
        assert answer["kind"] == "custom" and answer["status"] == "accepted", answer
        (test,) = answer["tests"]
        assert test["name"] == problem.custom_test.name and test["expected"] and test["got"]
