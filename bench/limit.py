"""The limit every judge figure is compared with: a problem's tests with a correct module, in one warm process
of the sandbox image, on one CPU, with no judge around them (no container pool, no child per submission, no
frames, no database, no HTTP).

The process loads the module once and compiles each test's code once, as a test runner would; a pass then runs
every test: its seeds set, its inputs drawn, the entry point called. The limit is the median pass, after
warm-up passes. Only the tests' own work is in it: comparing a value with the expected one is the judge's
work, and counted as the judge's (a pass that also compared each value with torch.allclose took some 15 % more
on embedding-layer). What a submission costs beyond this is the judge.

The same process then measures what isolation alone costs, with no judge either: a fresh process per
submission, as the judge's zygote makes them (the parent's objects frozen for the garbage collector, its memory
on huge pages, then a fork), running one pass of the same tests and ending; once after the judge's own warm-up
in it (as a pool's child has had before its job comes), once without. For each: the pass's time in the fresh
process, and the CPU the process costs in all (the fork, the warm-up, the pass, its end). No judge that keeps a
fresh process per submission can do better: the least of the two CPU figures bounds its throughput (the cores /
that CPU), and the warmed-up pass bounds its time. Last, the contract's own share: the pass in a fresh, warmed-up
process driven as the runner drives a child, one command frame and one result frame (the value encoded) per
test over pipes, and nothing else of the judge's (no settings put back, no measures, no limits).

    .venv/bin/python bench/limit.py [PROBLEM]     (prints the limit of a problem's reference)
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sandbox.runner.messages import Job  # noqa: E402

# Run inside the sandbox image (python3 -I -B -c): the job on stdin; on stdout, as JSON, each pass's ms in the
# warm process, then in fresh processes (warmed up, not, and driven a frame per test) and their CPU.
IN_CONTAINER = r"""
import gc, json, os, random, resource, struct, sys, time
sys.path.insert(0, "/opt")
os.environ["OMP_NUM_THREADS"] = "1"
import numpy as np
import torch
torch.set_num_threads(1)
torch.set_num_interop_threads(1)
from runner import execute, hugepages, protocol, testcode, values
from runner.messages import Job

job = Job.parse(sys.stdin.buffer.read())
passes, warm, forks = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
entry_points, failure = execute.load_submission(job.source, job.entry_points)
if failure is not None:
    raise SystemExit(f"the module did not load: {failure.message}")
helpers = compile(job.helpers, "<helpers>", "exec") if job.helpers else None
tests = []
for index, test in enumerate(job.tests):
    namespace = execute._test_globals(entry_points)
    exec(testcode.compile_test(test.code, f"<test {index + 1}>"), namespace)
    tests.append((test.seed, namespace))


def run_test(seed, namespace):  # one test as the limit runs it: its seeds, its helpers, its function
    torch.default_generator.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    if helpers is not None:  # the problem's shared code, after the seeds, as the judge runs it
        exec(helpers, namespace)
    return namespace["__test__"]()


def one_pass():
    for seed, namespace in tests:
        run_test(seed, namespace)


times = []
for number in range(warm + passes):
    started = time.perf_counter()
    one_pass()
    if number >= warm:
        times.append((time.perf_counter() - started) * 1000)


def framed_child(commands, results):  # ready, then each test on its command, its value encoded and sent back
    protocol.write_all(results, protocol.encode(protocol.CHILD_READY, {}))
    while True:
        try:
            _, header, _ = protocol.read_frame(commands, max_body=0)
        except EOFError:
            os._exit(0)
        body = values.encode_value(run_test(*tests[header["index"]]), 1 << 26)
        protocol.write_all(results, protocol.encode(protocol.CHILD_RESULT, {"index": header["index"]}, body))


def framed():  # one fresh process, warmed up, driven a frame per test: the pass's ms, as its parent sees it
    commands, command_w = os.pipe()
    result_r, results = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(command_w)
        os.close(result_r)
        execute.warm_up()
        framed_child(commands, results)
    os.close(commands)
    os.close(results)
    protocol.read_frame(result_r, max_body=0)  # warmed up and ready, as a pool's child is: the pass starts now
    started = time.perf_counter()
    for index in range(len(tests)):
        protocol.write_all(command_w, protocol.encode(protocol.CHILD_TEST, {"index": index}))
        protocol.read_frame(result_r, max_body=1 << 26)
    elapsed = (time.perf_counter() - started) * 1000
    os.close(command_w)
    os.close(result_r)
    os.waitpid(pid, 0)
    return elapsed


def cpu_ms(who):
    used = resource.getrusage(who)
    return (used.ru_utime + used.ru_stime) * 1000


def fresh(warmed):  # one fresh process: forked, warmed up as the judge's children are (or not), one pass, its end
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        if warmed:
            execute.warm_up()
        started = time.perf_counter()
        one_pass()
        os.write(write, struct.pack("d", (time.perf_counter() - started) * 1000))
        os._exit(0)
    os.close(write)
    got = os.read(read, 8)
    os.close(read)
    os.waitpid(pid, 0)
    return struct.unpack("d", got)[0]


def fresh_run(warmed):  # each pass's ms, and the CPU of one fresh process (the parent's fork and wait in it)
    before = cpu_ms(resource.RUSAGE_SELF) + cpu_ms(resource.RUSAGE_CHILDREN)
    times = [fresh(warmed) for _ in range(forks)]
    return times, (cpu_ms(resource.RUSAGE_SELF) + cpu_ms(resource.RUSAGE_CHILDREN) - before) / max(1, forks)


gc.collect()
gc.freeze()
hugepages.collapse()
fresh(True)
warmed_times, warmed_cpu = fresh_run(True)
cold_times, cold_cpu = fresh_run(False)
framed_times = [framed() for _ in range(forks)]
print(json.dumps({"passes": times, "fresh": warmed_times, "fresh_cpu_ms": warmed_cpu, "cold": cold_times,
                  "cold_cpu_ms": cold_cpu, "framed": framed_times}))
"""


@dataclass(frozen=True)
class Limit:
    """A problem's limit (each pass's ms) and what a fresh process per submission adds to it."""

    passes: list[float]
    fresh: list[float]  # the pass in a fresh process, after the judge's warm-up in it (ms)
    fresh_cpu_ms: float  # the CPU of one such process: fork, warm-up, pass, end
    cold: list[float]  # the pass in a fresh process without the warm-up
    cold_cpu_ms: float  # the CPU of one such process: fork, pass, end
    framed: list[float]  # the pass in a fresh, warmed-up process, a command and a result (its value) per test


def measure(image: str, job: Job, passes: int = 200, warm: int = 20, forks: int = 30, cpu: int = 0) -> Limit:
    """Each pass's time (ms) of the job's tests in one warm process of `image`, pinned to one CPU; then the
    same tests in `forks` fresh processes of it."""
    command = [
        "docker", "run", "--rm", "-i", "--network", "none", "--cpuset-cpus", str(cpu), "--user", "10001:10001",
        "--entrypoint", "python3", image, "-I", "-B", "-c", IN_CONTAINER, str(passes), str(warm), str(forks),
    ]  # fmt: skip
    done = subprocess.run(command, input=job.payload(), capture_output=True, timeout=600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the limit's run failed: {done.stderr.decode(errors='replace')[-2000:]}")
    found = json.loads(done.stdout)
    return Limit(
        passes=[float(value) for value in found["passes"]],
        fresh=[float(value) for value in found["fresh"]],
        fresh_cpu_ms=float(found["fresh_cpu_ms"]),
        cold=[float(value) for value in found["cold"]],
        cold_cpu_ms=float(found["cold_cpu_ms"]),
        framed=[float(value) for value in found["framed"]],
    )


def main() -> int:
    from grader.config import Settings
    from grader.grading.execution import build_job
    from grader.problems.registry import Registry, parse_problem
    from sandbox.runner.messages import Limits

    problem_id = sys.argv[1] if len(sys.argv) > 1 else "embedding-layer"
    settings = Settings()
    limits = Limits(
        time_s=settings.limits.default_time_s,
        memory_mb=settings.limits.default_memory_mb,
        output_kb=settings.limits.default_output_kb,
    )
    spec = parse_problem((ROOT / "problems" / f"{problem_id}.yaml").read_text(), problem_id)
    problem = Registry(limits).make(spec)
    found = measure(settings.sandbox.image, build_job(problem, spec.reference, settings.sandbox, seed=1))
    times = found.passes
    print(f"{problem_id}: {len(problem.tests)} tests, one pass p50 {statistics.median(times):.2f} ms "
          f"(min {min(times):.2f}, max {max(times):.2f}, n={len(times)})")  # fmt: skip
    print(f"  in a fresh process, warmed up: the pass p50 {statistics.median(found.fresh):.2f} ms, the process's CPU "
          f"(fork, warm-up, pass, end) {found.fresh_cpu_ms:.2f} ms (n={len(found.fresh)})")  # fmt: skip
    print(f"  in a fresh process, not warmed up: the pass p50 {statistics.median(found.cold):.2f} ms, the process's "
          f"CPU (fork, pass, end) {found.cold_cpu_ms:.2f} ms (n={len(found.cold)})")  # fmt: skip
    print(f"  in a fresh process, warmed up, a frame per test: the pass p50 {statistics.median(found.framed):.2f} ms "
          f"(n={len(found.framed)})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
