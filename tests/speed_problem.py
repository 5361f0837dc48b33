"""The pairwise-distances problem the tests' services serve: problems/pairwise-distances.yaml with the speed
section it had at timing version 1 (point clouds of 16 to 48 points in space, a Python loop over every pair as
the baseline, 5x to reach).

The speed tests (tests/integration/test_speed_grading.py, the attacks in tests/security/) are about the judge's
timing and its defences, each calibrated on these sizes: small calls make work moved to an import, a first call
or another size stand out, and a loop over pairs is slow enough to stop early. The problem's own timed sizes
(about 1 ms a call) are checked where the problem is: `grader problems check` on every problem file
(tests/integration/test_problem_authoring.py), which times its reference, alternatives and slow pitfalls.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import textwrap
from pathlib import Path

# The baseline: a Python loop over every pair of points (also submitted as a module: as fast as the baseline).
PAIR_LOOP = """import torch


def pairwise_distances(x, y):
    out = torch.empty(x.shape[0], y.shape[0], dtype=x.dtype)
    for i in range(x.shape[0]):
        for j in range(y.shape[0]):
            out[i, j] = torch.sqrt(((x[i] - y[j]) ** 2).sum())
    return out
"""
BASELINE = textwrap.indent(PAIR_LOOP, " " * 8, lambda line: bool(line.strip()))
SPEED = f"""speed:
  call: pairwise_distances
  inputs: |
    return [torch.randn(size["n"], size["d"]), torch.randn(size["m"], size["d"])]
  sizes:
    - {{name: 16 x 16, n: 16, m: 16, d: 3}}
    - {{name: 32 x 32, n: 32, m: 32, d: 3}}
    - {{name: 48 x 48, n: 48, m: 48, d: 3}}
  baseline: pair-loop
  baselines:
    - name: pair-loop
      code: |
{BASELINE}  warmup: 2
  repeats: 15
  check: {{rtol: 1.0e-4, atol: 2.0e-3}}
  threshold: 5
  score: geomean
"""


def service_problems(source: Path) -> Path:
    """A copy of `source` (a problems directory) whose pairwise-distances has the speed section above, in a
    temporary directory of its own, removed when the process ends."""
    folder = Path(tempfile.mkdtemp(prefix="torchjudge-problems-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    for path in source.glob("*.yaml"):
        shutil.copy(path, folder / path.name)
    target = folder / "pairwise-distances.yaml"
    text = target.read_text()
    target.write_text(text[: text.index("\nspeed:\n") + 1] + SPEED)
    return folder
