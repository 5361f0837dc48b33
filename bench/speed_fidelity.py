"""Benchmark: how faithful speed grading's times are, per speed-graded problem and input size.

    make bench-speed      (or: .venv/bin/python bench/speed_fidelity.py --help)

In one run, for each speed-graded problem in problems/ and an idiomatic solution of it (torch.cdist, the softmax
of torch, F.embedding_bag, F.conv1d):
  - the truth: the solution's call on the problem's own speed inputs (its `speed.inputs` and helpers, each size,
    distinct inputs drawn as the judge draws them), in one warm process of the sandbox image pinned to one CPU,
    one thread, no judge around it: the median of --calls calls, each timed alone on the process's CPU clock
    (as the judge times a child), the solution and its x2 and x4 versions in turn, call by call;
  - the judged time: `speed.sizes[].submission_ms` of the verdict the judge's speed grading makes of the same
    solution (grader/grading/speed.py, on warm sandboxes of the local engine);
  - the judged ratio of the same solution doing its work twice and four times (the last result returned), which
    is 2x and 4x in truth: a judge that charges its own per-call costs to the submission shows less;
  - with --gradings N (20 by default): the solution doing its work twice and three times (1.5x apart in truth),
    each graded N times in turn: how often the judge orders them right, and the spread (sd) of one's scores.
The targets (DESIGN.md, "Speed-graded problems"): judged within 1.5x the truth + 0.05 ms at every size; x4
judged 4x within 25 %; 1.5x apart ordered right in at least 19 of 20; sd at most 5 % of the mean. Each line
says whether its figure meets its target; nothing is asserted (a benchmark, not a test). --runtime runsc
measures under gVisor.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from speed_common import speed_bench  # noqa: E402

from grader.config import Settings  # noqa: E402
from grader.grading.execution import bench_job  # noqa: E402
from grader.grading.speed import SpeedGrader  # noqa: E402
from grader.grading.verdict import Status, Verdict  # noqa: E402
from grader.problems.registry import LoadedProblem, Registry, parse_problem  # noqa: E402
from sandbox.runner.messages import Limits  # noqa: E402

# The idiomatic solution of each speed-graded problem: what a learner who knows torch writes.
IDIOMATIC = {
    "pairwise-distances": "import torch\n\n\ndef pairwise_distances(x, y):\n    return torch.cdist(x, y)\n",
    "fused-softmax": "import torch\n\n\ndef softmax(x):\n    return torch.softmax(x, dim=-1)\n",
    "embedding-bag": (
        "import torch.nn.functional as F\n\n\ndef embedding_bag_mean(weight, indices, offsets):\n"
        "    return F.embedding_bag(indices, weight, offsets, mode='mean')\n"
    ),
    "conv1d": (
        "import torch.nn.functional as F\n\n\ndef conv1d(x, weight, bias=None, padding=0):\n"
        "    return F.conv1d(x, weight, bias, padding=padding)\n"
    ),
}
ACCEPTED = Verdict(status=Status.ACCEPTED, score=1.0)

# Run inside the sandbox image (python3 -I -B -c), pinned to one CPU: the problem's benchmark job and the modules
# on stdin; on stdout, as JSON, each module's median call per size in ms.
IN_CONTAINER = r"""
import json, os, statistics, sys, time
sys.path.insert(0, "/opt")
os.environ["OMP_NUM_THREADS"] = "1"
import torch
torch.set_num_threads(1)
torch.set_num_interop_threads(1)
from runner import execute, execute_bench, testcode
from runner.bench_job import BenchJob

given = json.loads(sys.stdin.buffer.read())
bench = BenchJob.parse(given["job"].encode()).bench
calls, distinct, warm = given["calls"], given["distinct"], given["warm"]
execute_bench.steady_allocator()  # as in the judge's timed children
code = testcode.compile_test(bench.inputs, execute_bench.INPUTS_FILE)
functions = {}
for label, source in given["modules"].items():
    entry_points, failure = execute.load_submission(source, (bench.entry_point,))
    if failure is not None:
        raise SystemExit(f"{label} did not load: {failure.message}")
    functions[label] = entry_points[bench.entry_point]
found = {label: [] for label in functions}
for size in range(len(bench.sizes)):
    inputs = [execute_bench.build_call(bench, code, size, call) for call in range(distinct)]
    times = {label: [] for label in functions}
    for call in range(warm + calls):  # the modules in turn, call by call: the machine's drift is on all alike
        arguments = inputs[call % distinct]
        for label, function in functions.items():
            started = time.process_time_ns()
            function(*arguments["args"], **arguments["kwargs"])
            if call >= warm:
                times[label].append(time.process_time_ns() - started)
    for label in functions:
        found[label].append(statistics.median(times[label]) / 1e6)
print(json.dumps(found))
"""


def times_over(source: str, entry: str, times: int) -> str:
    """The module doing its work `times` times per call, the last result returned."""
    if times == 1:
        return source
    return (
        f"{source}\n\n_once = {entry}\n\n\ndef {entry}(*args, **kwargs):\n"
        f"    for _ in range({times - 1}):\n        _once(*args, **kwargs)\n    return _once(*args, **kwargs)\n"
    )


def truth(image: str, problem: LoadedProblem, modules: dict[str, str], args: argparse.Namespace, cpu: int) -> dict:
    """Each module's median call per size (ms), in one warm process of the image on one CPU."""
    job = bench_job(problem, "", "", Settings(data_dir=Path(tempfile.mkdtemp())).sandbox, seed=1)
    given = {"job": job.payload().decode(), "modules": modules, "calls": args.calls, "distinct": 20, "warm": 20}
    command = [
        "docker", "run", "--rm", "-i", "--network", "none", "--cpuset-cpus", str(cpu), "--user", "10001:10001",
        "--entrypoint", "python3", image, "-I", "-B", "-c", IN_CONTAINER,
    ]  # fmt: skip
    done = subprocess.run(command, input=json.dumps(given).encode(), capture_output=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the truth's run failed: {done.stderr.decode(errors='replace')[-2000:]}")
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def judged(grader: SpeedGrader, problem: LoadedProblem, source: str, seed: int) -> list[tuple[float, int, float]]:
    """Per size, of one grading: the judged time of a call (ms), the calls in each timed region, and the harness's
    time per call taken off (ms)."""
    verdict = grader.grade(problem, source, seed, ACCEPTED)
    speed = verdict.speed
    if speed is None or speed.speedup is None or not speed.sizes:
        raise SystemExit(f"{problem.id}: not measured: {verdict.status} {verdict.message}")
    return [(size.submission_ms, size.batch, size.harness_ms) for size in speed.sizes]


def score(grader: SpeedGrader, problem: LoadedProblem, source: str, seed: int) -> float:
    verdict = grader.grade(problem, source, seed, ACCEPTED)
    if verdict.speed is None or verdict.speed.speedup is None:
        raise SystemExit(f"{problem.id}: not measured: {verdict.status} {verdict.message}")
    return verdict.speed.speedup


def mark(ok: bool) -> str:
    return "meets" if ok else "MISSES"


def fidelity(grader: SpeedGrader, image: str, problem: LoadedProblem, args: argparse.Namespace, cpu: int) -> None:
    entry = problem.speed.call or problem.entry_points[0]  # type: ignore[union-attr]
    source = IDIOMATIC[problem.id]
    modules = {f"x{k}": times_over(source, entry, k) for k in (1, 2, 4)}
    true = truth(image, problem, modules, args, cpu)
    seen = {label: judged(grader, problem, module, 7 + index) for index, (label, module) in enumerate(modules.items())}
    print(f"{problem.id} ({entry}):")
    print(
        f"  {'size':<34} {'truth ms':>9} {'judged ms':>10} {'judged/truth':>13}  {'x2 judged':>9} {'x4 judged':>9}"
        f" {'region':>6} {'harness ms':>10}"
    )
    for index, size in enumerate(problem.speed.sizes):  # type: ignore[union-attr]
        t, (j, batch, harness) = true["x1"][index], seen["x1"][index]
        x2, x4 = seen["x2"][index][0] / j, seen["x4"][index][0] / j
        t4 = true["x4"][index] / t
        print(
            f"  {size.name[:34]:<34} {t:>9.4f} {j:>10.4f} {j / t:>12.2f}x  {x2:>8.2f}x {x4:>8.2f}x"
            f" {batch:>6} {harness:>10.4f}"
            f"   within 1.5x+0.05 ms: {mark(j <= 1.5 * t + 0.05)}; x4 within 25 %: {mark(abs(x4 / 4 - 1) <= 0.25)}"
            f" (truth x4 {t4:.2f}x)"
        )


def ordering(grader: SpeedGrader, problem: LoadedProblem, runs: int) -> None:
    entry = problem.speed.call or problem.entry_points[0]  # type: ignore[union-attr]
    twice, thrice = (times_over(IDIOMATIC[problem.id], entry, k) for k in (2, 3))
    faster, slower = [], []
    for run in range(runs):  # in turn: the host's own noise drifts
        faster.append(score(grader, problem, twice, 1000 + run))
        slower.append(score(grader, problem, thrice, 2000 + run))
    right = sum(1 for a, b in zip(faster, slower, strict=True) if a > b)
    sd = statistics.pstdev(faster) / statistics.mean(faster) * 100
    print(
        f"  1.5x apart (work twice against three times), {runs} gradings each: ordered right {right} of {runs} "
        f"({mark(right >= 0.95 * runs)}); scores {statistics.median(faster):.3f}x against "
        f"{statistics.median(slower):.3f}x (medians); sd of one's scores {sd:.1f} % of the mean ({mark(sd <= 5)})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runtime", default="runc", help="the sandbox runtime (runc or runsc)")
    parser.add_argument("--calls", type=int, default=400, help="calls timed per size for the truth (default 400)")
    parser.add_argument("--gradings", type=int, default=20, help="gradings for the ordering and spread (0: none)")
    parser.add_argument("problems", nargs="*", default=sorted(IDIOMATIC), help="speed-graded problems to measure")
    args = parser.parse_args()
    registry = Registry(Limits(time_s=4, memory_mb=1024, output_kb=64))
    with speed_bench(args.runtime) as bench:
        grader, settings = bench.grader, bench.settings
        cpu = max(0, (len(__import__("os").sched_getaffinity(0)) - 1))
        started = time.monotonic()
        print(f"speed grading's fidelity ({args.runtime}; truth: median of {args.calls} calls in one warm process)")
        for problem_id in args.problems:
            text = (ROOT / "problems" / f"{problem_id}.yaml").read_text()
            problem = registry.make(parse_problem(text, problem_id))
            fidelity(grader, settings.sandbox.image, problem, args, cpu)
            if args.gradings:
                ordering(grader, problem, args.gradings)
        print(f"  ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
