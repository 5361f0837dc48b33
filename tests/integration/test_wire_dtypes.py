"""Issue 24, point 5, against the real sandbox: a test returns one tensor of every dtype on the wire
(protocol.WIRE_DTYPES), each arrives on the trusted side as that very dtype, bit for bit, and a `holds:`
there tells each one from every other (a bfloat16 is no float32)."""

from __future__ import annotations

import numpy as np
import pytest

from grader.containers.protocol import WIRE_DTYPES
from grader.containers.values import DTYPES, Tensor
from grader.grading.execution import run_module
from grader.grading.verdict import Status
from grader.problems.check import ProblemChecker
from grader.problems.registry import Registry, parse_problem
from sandbox.runner.messages import Limits
from tests.integration.test_authoring_features import grade

pytestmark = pytest.mark.docker

NAMES = sorted(WIRE_DTYPES)
VALUES = [[1.0, 2.0], [0.5, 4.0]]  # exact in every float dtype, float8_e8m0fnu (powers of two) included


def sums(name: str) -> float:
    """What `.double().sum()` of VALUES in dtype `name` is (ints truncate 0.5; bools are all True)."""
    return 4 if name == "bool" else 7 if name.startswith(("int", "uint")) else 7.5


def holds(name: str) -> list[str]:
    values = f"{name}.real" if name.startswith("complex") else name
    return [
        f"{name}.dtype == torch.{name}",
        f"{name}.dtype not in ({', '.join(f'torch.{other}' for other in NAMES if other != name)})",
        f"{values}.double().sum().item() == {sums(name)}",
        f"{name}.shape == (2, 2)",
    ]


def problem_text() -> str:
    checks = "".join(f"      {name}: {{holds: {holds(name)!r}}}\n" for name in NAMES)
    return f"""\
id: wire-dtypes
title: Wire dtypes
difficulty: easy
statement: Return x in the dtype named.
starter_code: |
  def cast(x, name):
      pass
entry_points: [cast]
reference: |
  import torch


  def cast(x, name):
      return x.to(getattr(torch, name))
tests:
  - name: one tensor of each dtype, compared with the reference's
    visible: true
    code: |
      x = torch.tensor({VALUES})
      return {{name: cast(torch.complex(x, -x) if name.startswith("complex") else x, name) for name in {NAMES!r}}}
  - name: one tensor of each dtype, each checked on the trusted side
    visible: true
    code: |
      x = torch.tensor({VALUES})
      out = {{name: cast(torch.complex(x, -x) if name.startswith("complex") else x, name) for name in {NAMES!r}}}
      # a bool whose byte is 2 (a view of a uint8): it arrives as True, like the 1 beside it
      out["odd_bool"] = torch.tensor([2, 1], dtype=torch.uint8).view(torch.bool)
      return out
    check:
{checks}      odd_bool: {{holds: ["odd_bool.all()", "odd_bool.sum().item() == 2", "(odd_bool == True).all()"]}}
"""


@pytest.fixture(scope="module")
def checker(shared_checker: ProblemChecker) -> ProblemChecker:
    return shared_checker  # on the session's warm sandboxes (tests/conftest.py)


def reference_source() -> str:
    return "import torch\n\n\ndef cast(x, name):\n    return x.to(getattr(torch, name))\n"


def test_every_wire_dtype_arrives_as_itself_bit_for_bit(checker: ProblemChecker) -> None:
    problem = Registry(Limits(time_s=10, memory_mb=1024, output_kb=64)).make(
        parse_problem(problem_text(), "wire-dtypes.yaml")
    )
    run = run_module(checker.sandboxes(), problem, problem.reference, checker.sandbox, rules=False)
    value = run.value(0)
    assert sorted(value) == NAMES
    for name in NAMES:
        tensor = value[name]
        assert isinstance(tensor, Tensor), (name, tensor)
        assert tensor.dtype == name and tensor.array.dtype == DTYPES[name]
        base = np.array(VALUES)
        want = (base - 1j * base if name.startswith("complex") else base).astype(DTYPES[name])
        assert tensor.array.tobytes() == want.tobytes(), name  # the same bits as NumPy's (ml_dtypes') own
        assert tensor.array.nbytes == 4 * WIRE_DTYPES[name]  # never widened
    odd = run.value(1)["odd_bool"]
    assert odd.array.tolist() == [True, True] and odd.array.view(np.uint8).tolist() == [1, 1]


def test_each_dtype_is_checked_as_itself_on_the_trusted_side(checker: ProblemChecker) -> None:
    verdict = grade(checker, problem_text(), reference_source())
    assert verdict.status == Status.ACCEPTED, [(t.name, t.message) for t in verdict.tests]


@pytest.mark.parametrize(("narrow", "wide"), [("bfloat16", "float32"), ("float8_e5m2", "float16"), ("uint8", "bool")])
def test_another_dtype_fails_the_comparison_and_the_check(checker: ProblemChecker, narrow: str, wide: str) -> None:
    """A cast that sends `narrow` where `wide` was asked: a dtype mismatch against the reference, and the
    `holds:` that it is `wide` is false (both passed through float32 before, the check included)."""
    source = reference_source().replace(
        "return x.to(getattr(torch, name))",
        f"return x.to(torch.{narrow} if name == {wide!r} else getattr(torch, name))",
    )
    verdict = grade(checker, problem_text(), source)
    assert verdict.status == Status.WRONG_ANSWER
    compared, checked = verdict.tests
    assert compared.status.value == "failed" and f"dtype {narrow} instead of {wide}" in (compared.message or "")
    assert checked.status.value == "failed" and f"{wide}.dtype == torch.{wide}" in (checked.message or "")
