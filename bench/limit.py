"""The limit every judge figure is compared with: a problem's tests with a correct module, in one warm process
of the sandbox image, on one CPU, with no judge around them (no container pool, no child per submission, no
frames, no database, no HTTP).

The process loads the module once and compiles each test's code once, as a test runner would; a pass then runs
every test: its seeds set, its inputs drawn, the entry point called. The limit is the median pass, after
warm-up passes. Only the tests' own work is in it: comparing a value with the expected one is the judge's
work, and counted as the judge's (a pass that also compared each value with torch.allclose took some 15 % more
on embedding-layer). What a submission costs beyond this is the judge.

    .venv/bin/python bench/limit.py [PROBLEM]     (prints the limit of a problem's reference)
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sandbox.runner.messages import Job  # noqa: E402

# Run inside the sandbox image (python3 -I -B -c): the job on stdin, the pass times (ms) as JSON on stdout.
IN_CONTAINER = r"""
import json, os, random, sys, time
sys.path.insert(0, "/opt")
os.environ["OMP_NUM_THREADS"] = "1"
import numpy as np
import torch
torch.set_num_threads(1)
torch.set_num_interop_threads(1)
from runner import execute, testcode
from runner.messages import Job

job = Job.parse(sys.stdin.buffer.read())
passes, warm = int(sys.argv[1]), int(sys.argv[2])
entry_points, failure = execute.load_submission(job.source, job.entry_points)
if failure is not None:
    raise SystemExit(f"the module did not load: {failure.message}")
helpers = compile(job.helpers, "<helpers>", "exec") if job.helpers else None
tests = []
for index, test in enumerate(job.tests):
    namespace = execute._test_globals(entry_points)
    exec(testcode.compile_test(test.code, f"<test {index + 1}>"), namespace)
    tests.append((test.seed, namespace))


def one_pass():
    for seed, namespace in tests:
        torch.default_generator.manual_seed(seed)
        random.seed(seed)
        np.random.seed(seed % 2**32)
        if helpers is not None:  # the problem's shared code, after the seeds, as the judge runs it
            exec(helpers, namespace)
        namespace["__test__"]()


times = []
for number in range(warm + passes):
    started = time.perf_counter()
    one_pass()
    if number >= warm:
        times.append((time.perf_counter() - started) * 1000)
print(json.dumps(times))
"""


def measure(image: str, job: Job, passes: int = 200, warm: int = 20, cpu: int = 0) -> list[float]:
    """Each pass's time (ms) of the job's tests in one warm process of `image`, pinned to one CPU."""
    command = [
        "docker", "run", "--rm", "-i", "--network", "none", "--cpuset-cpus", str(cpu), "--user", "10001:10001",
        "--entrypoint", "python3", image, "-I", "-B", "-c", IN_CONTAINER, str(passes), str(warm),
    ]  # fmt: skip
    done = subprocess.run(command, input=job.payload(), capture_output=True, timeout=600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the limit's run failed: {done.stderr.decode(errors='replace')[-2000:]}")
    return [float(value) for value in json.loads(done.stdout)]


def main() -> int:
    from grader.config import Settings
    from grader.grading.execution import build_job
    from grader.problems.registry import EffectiveLimits, Registry, parse_problem

    problem_id = sys.argv[1] if len(sys.argv) > 1 else "embedding-layer"
    settings = Settings()
    limits = EffectiveLimits(
        time_s=settings.default_time_s, memory_mb=settings.default_memory_mb, output_kb=settings.default_output_kb
    )
    spec = parse_problem((ROOT / "problems" / f"{problem_id}.yaml").read_text(), problem_id)
    problem = Registry(limits).make(spec)
    times = measure(settings.sandbox_image, build_job(problem, spec.reference, settings.sandbox, seed=1))
    print(f"{problem_id}: {len(problem.tests)} tests, one pass p50 {statistics.median(times):.2f} ms "
          f"(min {min(times):.2f}, max {max(times):.2f}, n={len(times)})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
