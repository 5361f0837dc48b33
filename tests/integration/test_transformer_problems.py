"""The problems from "Attention Is All You Need", graded for real: references and other correct
solutions are accepted, and a submission that makes a pitfall's mistake gets that pitfall's hint.

Other correct solutions live in tests/alternatives/<problem>/*.py, for every problem in problems/:
each is written differently from the reference (another order of operations, another library call,
another initialisation, another random sampler, Python numbers for NumPy ones), so their acceptance
shows that the tests accept every valid implementation, not just the reference's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from grader.problems.registry import parse_problem
from tests.conftest import PROBLEMS_DIR

pytestmark = pytest.mark.docker

NEW_PROBLEMS = ["scaled-dot-product-attention", "multi-head-attention", "positional-encoding", "lr-schedule"]
PROBLEMS = {pid: parse_problem((PROBLEMS_DIR / f"{pid}.yaml").read_text(), f"{pid}.yaml") for pid in NEW_PROBLEMS}
ALTERNATIVES = sorted((Path(__file__).parent.parent / "alternatives").glob("*/*.py"))
ALL_PROBLEMS = sorted(path.stem for path in PROBLEMS_DIR.glob("*.yaml"))


@pytest.mark.parametrize("problem_id", NEW_PROBLEMS)
def test_the_reference_is_accepted_against_the_current_version(problem_id: str, submit, client: TestClient) -> None:
    problem = PROBLEMS[problem_id]
    verdict = submit(problem.reference, problem_id=problem_id)
    assert verdict["status"] == "accepted", verdict
    assert verdict["score"] == 1.0
    assert len(verdict["tests"]) == len(problem.tests)
    assert verdict["problem_version"] == client.get(f"/api/problems/{problem_id}").json()["version"]


def test_every_problem_has_an_alternative_solution() -> None:
    assert sorted({path.parent.name for path in ALTERNATIVES}) == ALL_PROBLEMS


@pytest.mark.parametrize("path", ALTERNATIVES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_other_correct_solutions_are_accepted(path: Path, submit) -> None:
    verdict = submit(path.read_text(), problem_id=path.parent.name)
    assert verdict["status"] == "accepted", [t for t in verdict["tests"] if t["status"] != "passed"] or verdict


HINTED = [
    ("scaled-dot-product-attention", "the mask read the wrong way round"),
    ("multi-head-attention", "heads split by reshaping straight to (B, h, L, d_k)"),
    ("positional-encoding", "sines and cosines concatenated instead of interleaved"),
    ("lr-schedule", "the scheduler's first update has a rate of 0"),
]


@pytest.mark.parametrize(("problem_id", "pitfall_name"), HINTED, ids=[h[0] for h in HINTED])
def test_a_submission_equal_to_a_pitfall_gets_its_hint(problem_id: str, pitfall_name: str, submit) -> None:
    pitfall = next(p for p in PROBLEMS[problem_id].pitfalls if p.name == pitfall_name)
    verdict = submit(pitfall.module, problem_id=problem_id)
    assert verdict["status"] == "wrong_answer", verdict
    assert verdict["hint"] == pitfall.hint
    failed_visible = [t for t in verdict["tests"] if t["visible"] and t["status"] == "failed"]
    assert failed_visible, "each of these mistakes fails a visible test"
    for test in failed_visible:
        assert test["hint"] == pitfall.hint
        assert test["details"]["expected"] != test["details"]["got"]


# The same mistake as the pitfall "a fully masked query left as nan", written another way: hints
# follow what a submission outputs, not how its code reads.
SAME_MISTAKE_OTHER_CODE = """
import torch
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-1, -2)) * q.shape[-1] ** -0.5
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -float("inf"))
    weights = F.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights
"""


def test_the_same_mistake_written_differently_gets_the_same_hint(submit) -> None:
    pitfall = next(p for p in PROBLEMS["scaled-dot-product-attention"].pitfalls if "nan" in p.name)
    verdict = submit(SAME_MISTAKE_OTHER_CODE, problem_id="scaled-dot-product-attention")
    assert verdict["status"] == "wrong_answer"
    assert verdict["hint"] == pitfall.hint
    assert verdict["message"] == "a hidden test: failed"


@pytest.mark.parametrize("problem_id", NEW_PROBLEMS)
def test_the_problem_page_never_leaks_the_reference_hidden_tests_or_pitfalls(
    problem_id: str, client: TestClient
) -> None:
    problem = PROBLEMS[problem_id]
    response = client.get(f"/api/problems/{problem_id}")
    assert response.status_code == 200
    body = response.json()
    assert body["entry_points"] == problem.entry_points
    assert [t["name"] for t in body["visible_tests"]] == [t.name for t in problem.tests if t.visible]
    assert body["hidden_tests"] == sum(not t.visible for t in problem.tests) >= 6
    text = response.text
    for test in problem.tests:
        if not test.visible:
            assert test.name not in text
    for pitfall in problem.pitfalls:
        assert pitfall.hint not in text and pitfall.name not in text
    assert "reference" not in body
