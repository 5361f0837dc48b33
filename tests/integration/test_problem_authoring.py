"""`grader problems check` in real sandboxes, run as the command it is (a subprocess).

Each run gets its own data directory, hence its own container label, so the test can see that
every container the check started is gone when it returns.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import docker
import pytest

from grader.containers.container import LABEL, owner_label
from tests.conftest import PROBLEMS_DIR

pytestmark = pytest.mark.docker

PROBLEM_FILES = sorted(PROBLEMS_DIR.glob("*.yaml"))
STEPS = ["schema", "reference", "deterministic", "starter", "pitfalls", "tolerances"]  # alternatives: skipped when none


# Every shipped problem passes its check under 3 seeds here (each was checked under 32 when written:
# `grader problems check --seeds 32`); the check's own seeds are tested in tests/unit/test_problem_check.py.
SEEDS = "3"
# The whole check of every shipped problem: the four speed-graded ones' speed steps take 1-2.5 minutes each on a
# 2-core machine (each times its reference, alternatives and slow pitfalls), the others seconds.
CHECK_S = 1800


def run_check(data_dir: Path, *paths: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GRADER_DATA_DIR": str(data_dir)}
    return subprocess.run(
        [sys.executable, "-m", "grader.cli", "problems", "check", "--seeds", SEEDS, *map(str, paths)],
        capture_output=True,
        text=True,
        env=env,
        timeout=CHECK_S,
    )


def leftover_containers(data_dir: Path) -> list[str]:
    label = f"{LABEL}={owner_label(data_dir)}"
    return [c.name for c in docker.from_env().containers.list(all=True, filters={"label": label})]


@pytest.mark.timeout(CHECK_S + 60)
def test_every_problem_file_checks_itself(tmp_path: Path) -> None:
    result = run_check(tmp_path, *PROBLEM_FILES)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    for path in PROBLEM_FILES:
        section = re.split(r"\n  ok  \d", out.split(f"{path}\n", 1)[1], maxsplit=1)[0]  # up to "  ok  3.1 s"
        for step in STEPS:
            done = re.search(rf"^  ok    {step} ", section, re.M)
            # A problem whose tests return no floats has no tolerance to check.
            skipped = re.search(r"^  skip  tolerances +no test returns floats", section, re.M)
            no_floats = step == "tolerances" and skipped
            assert done or no_floats, (path, step, section)
    assert f"{len(PROBLEM_FILES)} problem files ok" in out
    assert leftover_containers(tmp_path) == []


BROKEN_REFERENCE = """\
id: broken-reference
title: A reference that raises
difficulty: easy
statement: Return twice the input.
starter_code: |
  def double(x):
      pass
entry_points: [double]
reference: |
  import torch


  def double(x):
      if x.numel() > 3:
          raise ValueError("the author's bug")
      return 2 * x
tests:
  - name: three ones
    visible: true
    code: |
      return {"out": double(torch.ones(3))}
  - name: four ones
    code: |
      return {"out": double(torch.ones(4))}
"""

HARMLESS_PITFALL = """\
id: harmless-pitfall
title: A pitfall that passes every test
difficulty: easy
statement: Return twice the input.
starter_code: |
  def double(x):
      pass
entry_points: [double]
reference: |
  def double(x):
      return 2 * x
tests:
  - name: three ones
    visible: true
    code: |
      return {"out": double(torch.ones(3))}
pitfalls:
  - name: added the input to itself
    hint: This is not a mistake at all.
    code: |
      def double(x):
          return x + x
"""


def line_of(text: str, needle: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if needle in line)


def test_bad_files_fail_naming_file_line_and_field(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(BROKEN_REFERENCE)
    harmless = tmp_path / "harmless.yaml"
    harmless.write_text(HARMLESS_PITFALL)
    unparsable = tmp_path / "unparsable.yaml"
    unparsable.write_text(HARMLESS_PITFALL.replace("difficulty: easy", "difficulty: [easy"))
    result = run_check(tmp_path / "data", broken, harmless, unparsable)
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    raise_line = line_of(BROKEN_REFERENCE, 'raise ValueError("the author')
    assert (
        f"{broken}:{raise_line}: reference: the reference fails test 2 'four ones': ValueError: the author's bug"
    ) in out
    pitfall_line = line_of(HARMLESS_PITFALL, "- name: added")
    assert f"{harmless}:{pitfall_line}: pitfalls.1: pitfall 'added the input to itself' passes every test" in out
    assert re.search(rf"^          {re.escape(str(unparsable))}:\d+: YAML syntax error", out, re.M), out
    assert "3 of 3 problem files failed" in result.stderr
    assert leftover_containers(tmp_path / "data") == []
