"""Benchmark: how steady speed grading's numbers are, and whether a 2x solution is told apart from a 1x one.

    make bench-speed      (or: .venv/bin/python bench/speed_noise.py --help)

In one run, on warm sandboxes of the local engine (the timing path of grader/grading/speed.py, with the
reference's outputs checked on every timed call, as a submission's are):
  - a synthetic problem whose baseline does its work twice: the baseline itself submitted (1x) and a
    solution doing the work once (2x), each graded N times (20 by default) in turn; the spread of their
    scores, how often each one's interval holds 1, and whether every 2x score is above every 1x one;
  - problems/pairwise-distances.yaml's reference graded N times: the spread on a real problem, whose fast
    calls are dominated by the judge's round trip;
  - the judge's own round trip: a call that returns at once, against itself.
Prints the tables; --runtime runsc measures under gVisor. The numbers go to docs/BENCHMARKS.md by hand.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from speed_common import speed_bench

from grader.config import REPO_ROOT
from grader.grading.execution import bench_job, run_benchmark
from grader.grading.speed import SpeedGrader
from grader.grading.verdict import Status, Verdict
from grader.problems.registry import LoadedProblem, Registry
from sandbox.runner.messages import Limits

# The work is a chain of small operations, each costing the same whatever ran before it (no cache to warm,
# nothing to allocate anew): the baseline's chain is twice as long, so that a solution doing it once is
# twice as fast, exactly (a matrix product done twice is not: the second finds its inputs in the cache).
TWICE = """\
id: twice-the-work
title: Twice the work
difficulty: easy
statement: Multiply a vector by one, three hundred times.
starter_code: |
  def chain(x):
      pass
entry_points: [chain]
reference: |
  def chain(x):
      for _ in range(300):
          x = x * 1.0
      return x
tests:
  - name: one
    visible: true
    code: |
      return {"out": chain(torch.randn(4))}
speed:
  inputs: |
    return [torch.randn(size["n"])]
  sizes:
    - {name: n=64, n: 64}
    - {name: n=256, n: 256}
  baseline: twice
  baselines:
    - name: twice
      code: |
        def chain(x):
            for _ in range(600):
                x = x * 1.0
            return x
  warmup: 2
  repeats: 15
  check: {rtol: 0.0, atol: 0.0}
  threshold: 1.5
"""
ONCE = "def chain(x):\n    for _ in range(300):\n        x = x * 1.0\n    return x\n"
SAME = "def chain(x):\n    for _ in range(600):\n        x = x * 1.0\n    return x\n"
ACCEPTED = Verdict(status=Status.ACCEPTED, score=1.0)


def load(text: str) -> LoadedProblem:
    registry = Registry(Limits(time_s=4, memory_mb=1024, output_kb=64))
    return registry.make(registry.parse(text, "problem.yaml"))


def spread(values: list[float]) -> str:
    ordered = sorted(values)
    cut = max(1, len(ordered) // 20)
    return (
        f"median {statistics.median(ordered):.3f}, min {ordered[0]:.3f}, max {ordered[-1]:.3f}, "
        f"5-95 % {ordered[cut - 1]:.3f}-{ordered[-cut]:.3f}, sd {statistics.pstdev(ordered):.3f} "
        f"({statistics.pstdev(ordered) / statistics.mean(ordered) * 100:.1f} % of the mean)"
    )


def grade_many(grader: SpeedGrader, problem: LoadedProblem, source: str, runs: int, seed: int) -> list[dict]:
    found = []
    for run in range(runs):
        verdict = grader.grade(problem, source, seed + run, ACCEPTED)
        speed = verdict.speed
        if speed is None or speed.speedup is None or speed.interval is None:
            raise SystemExit(f"not measured: {verdict.status} {verdict.message}")
        found.append({"score": speed.speedup, "interval": speed.interval, "sizes": [s.speedup for s in speed.sizes]})
    return found


def report(label: str, found: list[dict]) -> None:
    scores = [entry["score"] for entry in found]
    holds_one = sum(1 for entry in found if entry["interval"][0] <= 1.0 <= entry["interval"][1])
    print(f"  {label}: {spread(scores)}; interval holds 1x in {holds_one} of {len(found)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="gradings of each solution (default 20)")
    parser.add_argument("--runtime", default="runc", help="the sandbox runtime (runc or runsc)")
    args = parser.parse_args()
    with speed_bench(args.runtime) as bench:
        grader, pool, settings = bench.grader, bench.pool, bench.settings
        started = time.monotonic()
        twice = load(TWICE)
        print(f"speed grading's noise ({args.runtime}, {args.runs} gradings each)")
        same = grade_many(grader, twice, SAME, args.runs, 1000)
        once = grade_many(grader, twice, ONCE, args.runs, 2000)
        report("1x (the baseline itself)", same)
        report("2x (the work once)", once)
        lowest_2x, highest_1x = min(e["score"] for e in once), max(e["score"] for e in same)
        apart = sum(1 for e in once if e["interval"][0] > max(x["interval"][1] for x in same))
        print(
            f"  told apart: lowest 2x score {lowest_2x:.3f} against highest 1x score {highest_1x:.3f} "
            f"({'every time' if lowest_2x > highest_1x else 'NOT every time'}); 2x intervals above every 1x "
            f"interval: {apart} of {len(once)}"
        )
        pairwise = load((REPO_ROOT / "problems" / "pairwise-distances.yaml").read_text())
        report("pairwise-distances, its reference", grade_many(grader, pairwise, pairwise.reference, args.runs, 3000))
        null = "def chain(x):\n    return 1\n"  # its values are not checked here: only its times are read
        run = run_benchmark(pool, bench_job(twice, null, null, settings.sandbox, 1, give_up=False))
        for size, header in zip(twice.speed.sizes, run.outcome.sizes if run.outcome else [], strict=False):  # type: ignore[union-attr]
            timed = header.subject_ns[1 + twice.speed.warmup :]  # type: ignore[union-attr]
            print(f"  the judge's round trip, {size.name}: {statistics.median(timed) / 1e6:.3f} ms a call (median)")
        print(f"  ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
