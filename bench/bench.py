"""Benchmark: warm sandbox pool against one cold container per submission, in one run.

    make bench            (or: .venv/bin/python bench/bench.py --help)

Starts the service with `make run` on a free port and a fresh data directory, and measures:
  - the time from `make run` to ready (/healthz 200);
  - the baseline: one cold container of torchjudge-sandbox per submission (start, import torch,
    grade, remove: what the simplest judges do), timed from the job's start to its verdict;
  - warm end-to-end latency through HTTP (POST ?wait=), p50 and p95, one client at a time;
  - throughput (accepted submissions per second) at concurrency 1, 4 and 8;
  - the memory of one warm container (the cgroup's usage, page cache excluded).
Prints a table, the ratio warm p50 / cold p50, and each target with PASS or FAIL.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.config import Settings  # noqa: E402
from grader.grading.execution import build_job, job_bound_s  # noqa: E402
from grader.problems.registry import EffectiveLimits, Registry, parse_problem  # noqa: E402
from grader.sandboxes.container import SandboxContainer, docker_client  # noqa: E402

PROBLEM = "embedding-layer"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


def _post(base: str, source: str) -> tuple[float, str]:
    body = json.dumps({"problem_id": PROBLEM, "source": source}).encode()
    request = urllib.request.Request(
        f"{base}/api/submissions?wait=60", data=body, headers={"content-type": "application/json"}
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as response:
        verdict = json.load(response)
    return (time.perf_counter() - started) * 1000, verdict["status"]


def measure_cold(source: str, count: int) -> list[float]:
    """One fresh container per submission: start (import torch), run the job, remove."""
    settings = Settings(data_dir=Path(tempfile.mkdtemp()))
    registry = Registry(
        EffectiveLimits(
            time_s=settings.default_time_s, memory_mb=settings.default_memory_mb, output_kb=settings.default_output_kb
        )
    )
    problem = registry.make(parse_problem((ROOT / "problems" / f"{PROBLEM}.yaml").read_text(), PROBLEM))
    client = docker_client()
    job = build_job(problem, source, settings)
    timings = []
    for _ in range(count):
        started = time.perf_counter()
        container = SandboxContainer(client, settings)
        try:
            container.start()
            outcome = container.run_job(job, time.monotonic() + job_bound_s(problem, settings))
        finally:
            container.remove()
        assert outcome.load.status == "ok" and all(h.status == "ok" for h, _ in outcome.tests)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def measure_throughput(base: str, source: str, concurrency: int, total: int) -> tuple[float, int]:
    lock = threading.Lock()
    remaining = [total]
    accepted = [0]

    def client() -> None:
        while True:
            with lock:
                if remaining[0] == 0:
                    return
                remaining[0] -= 1
            _, status = _post(base, source)
            if status == "accepted":
                with lock:
                    accepted[0] += 1

    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return accepted[0] / (time.perf_counter() - started), accepted[0]


def container_memory_mb(label_value: str) -> float:
    client = docker_client()
    sizes = []
    for container in client.containers.list(filters={"label": f"torchjudge.sandbox={label_value}"}):
        stats = container.stats(stream=False)
        memory = stats["memory_stats"]
        cache = memory.get("stats", {}).get("cache", memory.get("stats", {}).get("inactive_file", 0))
        sizes.append((memory["usage"] - cache) / 2**20)
    return max(sizes) if sizes else float("nan")


def start_service(env: dict[str, str], base: str) -> tuple[subprocess.Popen[bytes], float]:
    """`make run` with this environment; returns the process and the seconds until /healthz said ready."""
    started = time.perf_counter()
    server = subprocess.Popen(
        ["make", "--no-print-directory", "run"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    while True:
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=2) as response:
                if response.status == 200:
                    return server, time.perf_counter() - started
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        if server.poll() is not None:
            raise SystemExit("make run exited before the service was ready")
        if time.perf_counter() - started > 600:
            os.killpg(server.pid, signal.SIGTERM)
            raise SystemExit("the service was not ready within 600 s")
        time.sleep(0.05)


def measure_mode(seeds: str, source: str, warm_count: int, per_level: int, levels: tuple[int, ...]) -> dict:
    """The service under GRADER_SEEDS=seeds: warm latency, throughput, memory."""
    port = _free_port()
    data_dir = Path(tempfile.mkdtemp(prefix="torchjudge-bench-"))
    env = {**os.environ, "GRADER_PORT": str(port), "GRADER_DATA_DIR": str(data_dir), "GRADER_SEEDS": seeds}
    base = f"http://127.0.0.1:{port}"
    server, ready_s = start_service(env, base)
    try:
        _post(base, source)  # expected outputs computed once per problem version, image (and seed)
        if seeds == "pool":
            time.sleep(10)  # the pool of seeds fills in the background, as it does while a service runs
        warm = [_post(base, source)[0] for _ in range(warm_count)]
        throughput = {c: measure_throughput(base, source, c, per_level) for c in levels}
        from grader.sandboxes.container import owner_label

        memory_mb = container_memory_mb(owner_label(Settings(data_dir=data_dir)))
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    return {"ready_s": ready_s, "warm": warm, "throughput": throughput, "memory_mb": memory_mb}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cold", type=int, default=8, help="cold submissions (baseline)")
    parser.add_argument("--warm", type=int, default=40, help="sequential warm submissions")
    parser.add_argument("--throughput", type=int, default=60, help="submissions per concurrency level")
    args = parser.parse_args()

    problem = parse_problem((ROOT / "problems" / f"{PROBLEM}.yaml").read_text(), PROBLEM)
    source = problem.reference
    main_run = measure_mode("pool", source, args.warm, args.throughput, (1, 4, 8))
    others = {
        mode: measure_mode(mode, source, args.warm // 2, args.throughput // 2, (8,)) for mode in ("fixed", "fresh")
    }
    cold = measure_cold(source, args.cold)
    cold_p50, warm_p50, warm_p95 = (
        statistics.median(cold),
        statistics.median(main_run["warm"]),
        _percentile(main_run["warm"], 0.95),
    )
    ratio = warm_p50 / cold_p50
    throughput = main_run["throughput"]
    memory_mb = main_run["memory_mb"]

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"problem: {PROBLEM} ({len(problem.tests)} tests), solution: its reference")
    print("hidden inputs: drawn per submission from a pool of seeds (GRADER_SEEDS=pool, the default)\n")
    rows = [
        ("time from `make run` to ready", f"{main_run['ready_s']:.2f} s"),
        (f"cold: a container per submission, p50 (n={len(cold)})", f"{cold_p50:.0f} ms"),
        ("cold p95", f"{_percentile(cold, 0.95):.0f} ms"),
        (f"warm: HTTP end to end, p50 (n={len(main_run['warm'])})", f"{warm_p50:.1f} ms"),
        ("warm p95", f"{warm_p95:.1f} ms"),
        ("warm p50 / cold p50", f"{ratio * 100:.1f} %"),
    ]
    for concurrency, (per_second, accepted) in throughput.items():
        rows.append((f"throughput at concurrency {concurrency}", f"{per_second:.1f} accepted/s ({accepted} accepted)"))
    rows.append(("memory of one warm container", f"{memory_mb:.0f} MiB"))
    for mode, run in others.items():
        rows.append((f"GRADER_SEEDS={mode}: warm p50", f"{statistics.median(run['warm']):.1f} ms"))
        rows.append((f"GRADER_SEEDS={mode}: throughput at concurrency 8", f"{run['throughput'][8][0]:.1f} accepted/s"))
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")

    targets = [
        ("warm p50 at most 5% of cold p50", ratio <= 0.05),
        ("at least 10 accepted/s at concurrency 8", throughput[8][0] >= 10),
        ("at most 400 MB per warm container", memory_mb <= 400),
    ]
    print()
    for name, met in targets:
        print(f"{'PASS' if met else 'FAIL'}  {name}")
    return 0 if all(met for _, met in targets) else 1


if __name__ == "__main__":
    sys.exit(main())
