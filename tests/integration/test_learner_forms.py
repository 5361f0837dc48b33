"""Correct solutions written the ways learners write them are accepted, in the real sandbox: a tuple subclass
(a namedtuple, what torch.max(x, dim) and torch.topk return, torch.Size) where a tuple is asked; an
OrderedDict where a dict is; a file saved with a byte-order mark."""

from __future__ import annotations

import pytest

from grader.api.schemas import SubmissionCreate
from grader.grading.execution import run_module
from grader.grading.judge import Expected, judge_module
from grader.grading.verdict import Status, Verdict
from grader.problems.check import ProblemChecker
from grader.problems.registry import Registry, parse_problem
from sandbox.runner.messages import Limits

pytestmark = pytest.mark.docker

PROBLEM = """\
id: largest
title: Largest
difficulty: easy
statement: Return the largest value of each row and where it is, as a tuple (values, indices); and the shape.
starter_code: |
  def largest(x):
      pass


  def described(x):
      pass
entry_points: [largest, described]
reference: |
  def largest(x):
      values, indices = x.max(dim=1)
      return (values, indices)


  def described(x):
      return {"shape": tuple(x.shape), "sizes": [int(s) for s in x.shape]}
tests:
  - name: rows
    visible: true
    code: |
      x = torch.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
      return {"largest": largest(x), "described": described(x)}
"""

FORMS = {
    "torch.return_types": "def largest(x):\n    return torch.max(x, dim=1)\n",
    "a namedtuple": (
        "from collections import namedtuple\n\nBest = namedtuple('Best', 'values indices')\n\n\n"
        "def largest(x):\n    return Best(*x.max(dim=1))\n"
    ),
    "torch.topk": (
        "def largest(x):\n    found = torch.topk(x, 1, dim=1)\n    return found.values[:, 0], found.indices[:, 0]\n"
    ),
}
DESCRIBED = {
    "torch.Size and an OrderedDict": (
        "from collections import OrderedDict\n\n\ndef described(x):\n"
        "    return OrderedDict(shape=x.shape, sizes=list(x.shape))\n"
    ),
}


@pytest.fixture(scope="module")
def checker(shared_checker: ProblemChecker) -> ProblemChecker:
    return shared_checker  # on the session's warm sandboxes (tests/conftest.py)


def grade(checker: ProblemChecker, source: str) -> Verdict:
    problem = Registry(Limits(time_s=10, memory_mb=1024, output_kb=64)).make(parse_problem(PROBLEM, "p.yaml"))
    sandboxes = checker.sandboxes()
    reference = run_module(sandboxes, problem, problem.reference, checker.sandbox, rules=False)
    expected = Expected([reference.body(i) for i in range(len(problem.tests))], [])
    return judge_module(problem, expected, run_module(sandboxes, problem, source, checker.sandbox, rules=True))


REFERENCE_DESCRIBED = "def described(x):\n    return {'shape': tuple(x.shape), 'sizes': [int(s) for s in x.shape]}\n"
REFERENCE_LARGEST = "def largest(x):\n    return tuple(x.max(dim=1))\n"


@pytest.mark.parametrize("form", list(FORMS))
def test_a_tuple_subclass_is_taken_as_the_tuple_it_is(checker: ProblemChecker, form: str) -> None:
    source = "import torch\n\n" + FORMS[form] + "\n\n" + REFERENCE_DESCRIBED
    verdict = grade(checker, source)
    assert verdict.status == Status.ACCEPTED, [(t.name, t.message) for t in verdict.tests]


@pytest.mark.parametrize("form", list(DESCRIBED))
def test_a_size_and_an_ordered_dict_are_taken_as_what_they_hold(checker: ProblemChecker, form: str) -> None:
    verdict = grade(checker, "import torch\n\n" + REFERENCE_LARGEST + "\n\n" + DESCRIBED[form])
    assert verdict.status == Status.ACCEPTED, [(t.name, t.message) for t in verdict.tests]


def test_a_list_is_still_not_a_tuple(checker: ProblemChecker) -> None:
    source = "import torch\n\ndef largest(x):\n    return list(x.max(dim=1))\n\n\n" + REFERENCE_DESCRIBED
    verdict = grade(checker, source)
    assert verdict.status == Status.WRONG_ANSWER
    assert verdict.tests[0].message == "expected a tuple, got a list"


def test_a_file_saved_with_a_byte_order_mark_is_accepted(checker: ProblemChecker) -> None:
    source = "\ufeffimport torch\n\n" + REFERENCE_LARGEST + "\n\n" + REFERENCE_DESCRIBED
    body = SubmissionCreate.model_validate({"problem_id": "largest", "source": source})
    assert not body.source.startswith("\ufeff")
    assert grade(checker, body.source).status == Status.ACCEPTED
    # Without the intake's care, compile() refuses it: the mark is not Python.
    assert grade(checker, source).status == Status.COMPILE_ERROR
