"""Load test of the scale-out mode: Celery workers under load, one killed with SIGKILL halfway.

    make load            (or: .venv/bin/python bench/load.py --help)

On this machine, against the real Redis and a PostgreSQL database made for the run (both started by
scripts/ensure-services.sh, which `make load` runs), it starts
  - the API: `grader serve` with GRADER_QUEUE=celery, on a free port;
  - two workers: `grader worker`, each with a warm pool of one sandbox container;
then 32 client threads send 1,000 submissions between them, each a POST ?wait=60 (then GET polls if the
answer is 202), with an Idempotency-Key so that a retried POST can never create a second submission.
Most submissions are the embedding reference, some are known wrong ones; each must get its verdict.
When the 500th submission has been stored, worker 1 is killed with SIGKILL mid-grading and a new worker
is started under its name (which also removes the sandbox the dead one left).

Before that, the baseline: local mode as `make run` starts it (SQLite, the in-process queue, two warm
sandboxes: as many as the two workers have), as many submissions of the same plan as the Celery run
stores before the kill, from the same clients.

It prints throughput and latency percentiles, where a submission's time went on each worker, and fails
(exit 1) unless: zero submissions lost (every one final at the end, none queued or running), zero 5xx
answers, zero connection errors, every verdict the expected one, exactly one stored submission per
client submission, and the Celery throughput before the kill within 20% of local mode's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
import redis  # noqa: E402
import yaml  # noqa: E402
from common import breakdown_rows, free_port, mean_phases, percentile, read_phases  # noqa: E402

from grader.containers.container import LABEL  # noqa: E402

PROBLEM = "embedding-layer"
REDIS_URL = "redis://127.0.0.1:6379/0"
PG_ADMIN = "postgresql://torchjudge:torchjudge@127.0.0.1:5432/torchjudge"
GRADER = str(ROOT / ".venv" / "bin" / "grader")
CASES = ROOT / "tests" / "cases" / PROBLEM
# (weight, source, expected status): mostly small, fast, accepted solutions, and a few wrong ones.
# What makes a service Celery-mode; the local-mode baseline runs without them.
CELERY_SETTINGS = ("GRADER_QUEUE", "GRADER_DATABASE_URL", "GRADER_BROKER_URL", "GRADER_CELERY_QUEUE")
WRONG_CASES = [("forgot-scaling", 10), ("syntax-error", 5), ("missing-function", 5)]


@dataclass
class Results:
    lock: threading.Lock = field(default_factory=threading.Lock)
    stored: int = 0  # POSTs answered 200 or 202
    latencies: list[float] = field(default_factory=list)
    answers: Counter[str] = field(default_factory=Counter)
    wrong_verdicts: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    ids: dict[int, str] = field(default_factory=dict)
    verdicts: Counter[str] = field(default_factory=Counter)
    finished: list[float] = field(default_factory=list)  # time.monotonic() of each verdict


def _request(
    method: str, url: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, Any, dict[str, str]]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.load(response), dict(response.headers)
    except urllib.error.HTTPError as exc:
        payload = exc.read()
        try:
            parsed = json.loads(payload or b"null")
        except json.JSONDecodeError:
            parsed = payload.decode(errors="replace")
        return exc.code, parsed, dict(exc.headers)


class Process:
    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.args, self.env, self.log = args, env, log
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> Process:
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(
                [GRADER, *self.args], env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        return self

    def kill9(self) -> None:
        assert self.popen is not None
        os.kill(self.popen.pid, signal.SIGKILL)
        self.popen.wait(timeout=30)

    def stop(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            os.kill(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.kill(self.popen.pid, signal.SIGKILL)
                self.popen.wait(timeout=30)


def _wait_http(url: str, process: Process, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.popen is not None
        if process.popen.poll() is not None:
            raise SystemExit(f"{process.args} exited early; see {process.log}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise SystemExit(f"{url} not ready within {timeout:.0f} s; see {process.log}")


def send_all(
    base: str,
    plan: list[tuple[str, str, str]],
    clients: int,
    run: str,
    results: Results,
    kill_at: int | None = None,
    kill_event: threading.Event | None = None,
) -> None:
    """Every submission of the plan from `clients` threads, each a POST ?wait=60 (then GET polls if the
    answer is 202) with an Idempotency-Key; the kill event is set when the kill_at-th one is stored."""
    next_index = [0]

    def client() -> None:
        while True:
            with results.lock:
                index = next_index[0]
                if index >= len(plan):
                    return
                next_index[0] += 1
            name, source, expected = plan[index]
            body = json.dumps({"problem_id": PROBLEM, "source": source}).encode()
            headers = {"content-type": "application/json", "Idempotency-Key": f"{run}-{index}"}
            started = time.monotonic()
            verdict = None
            for _try in range(20):
                try:
                    status, payload, answer_headers = _request("POST", f"{base}/api/submissions?wait=60", body, headers)
                except (urllib.error.URLError, OSError) as exc:
                    with results.lock:
                        results.errors.append(f"#{index} POST: {exc}")
                    time.sleep(1)
                    continue  # safe: the Idempotency-Key makes a retry find what the first try stored
                with results.lock:
                    results.answers[f"POST {status}"] += 1
                if status == 429:
                    time.sleep(float(answer_headers.get("Retry-After", "1")))
                    continue
                break
            else:
                with results.lock:
                    results.errors.append(f"#{index}: no answer after 20 tries")
                return
            if status >= 500 or status not in (200, 202):
                with results.lock:
                    results.errors.append(f"#{index} POST answered {status}: {payload}")
                continue
            submission_id = payload["id"]
            with results.lock:
                results.ids[index] = submission_id
                results.stored += 1
                if results.stored == kill_at and kill_event is not None:
                    kill_event.set()
            verdict = payload if status == 200 else None
            deadline = time.monotonic() + 600
            while verdict is None and time.monotonic() < deadline:
                time.sleep(0.5)
                try:
                    status, payload, _ = _request("GET", f"{base}/api/submissions/{submission_id}")
                except (urllib.error.URLError, OSError) as exc:
                    with results.lock:
                        results.errors.append(f"#{index} GET: {exc}")
                    continue
                with results.lock:
                    results.answers[f"GET {status}"] += 1
                if status >= 500:
                    with results.lock:
                        results.errors.append(f"#{index} GET answered {status}")
                elif status == 200 and payload["status"] not in ("queued", "running"):
                    verdict = payload
            if verdict is None:
                continue  # counted as lost below, from the database
            with results.lock:
                results.latencies.append(time.monotonic() - started)
                results.finished.append(time.monotonic())
                results.verdicts[verdict["status"]] += 1
                if verdict["status"] != expected:
                    results.wrong_verdicts.append(f"#{index} {name}: {verdict['status']} (expected {expected})")

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def measure_local(plan: list[tuple[str, str, str]], clients: int, problems_dir: Path, workdir: Path) -> float:
    """The baseline the Celery run is held to: local mode as `make run` starts it (SQLite, the in-process
    queue) with as many warm sandboxes as the two workers have between them, under the same clients and
    mix; its verdicts per second."""
    port = free_port()
    env = {
        **{key: value for key, value in os.environ.items() if key not in CELERY_SETTINGS},
        "GRADER_DATA_DIR": str(workdir / "local"),
        "GRADER_PROBLEMS_DIR": str(problems_dir),
        "GRADER_POOL_SIZE": "2",
        "GRADER_LOG_LEVEL": "WARNING",
        "GRADER_PORT": str(port),
    }
    server = Process(["serve"], env, workdir / "local.log").start()
    results = Results()
    try:
        _wait_http(f"http://127.0.0.1:{port}/healthz", server)
        print(f"local mode: {len(plan)} submissions from {clients} clients, for comparison", flush=True)
        started = time.monotonic()
        send_all(f"http://127.0.0.1:{port}", plan, clients, f"local-{uuid.uuid4().hex[:10]}", results)
        wall = time.monotonic() - started
    finally:
        server.stop()
    if results.errors or results.wrong_verdicts or len(results.latencies) != len(plan):
        raise SystemExit(f"the local-mode run failed: {(results.errors + results.wrong_verdicts)[:5]}")
    return len(results.latencies) / wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submissions", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--kill-at", type=int, default=None, help="kill worker 1 after this many (default: half)")
    parser.add_argument("--lease-s", type=float, default=10.0, help="GRADER_LEASE_S of the workers")
    parser.add_argument("--keep", action="store_true", help="keep the run's directory (logs) afterwards")
    parser.add_argument(
        "--compare",
        type=int,
        default=None,
        help="submissions of the local-mode run the Celery throughput is held to (default: as many as before the kill)",
    )
    args = parser.parse_args()
    kill_at = args.kill_at if args.kill_at is not None else args.submissions // 2

    problem = yaml.safe_load((ROOT / "problems" / f"{PROBLEM}.yaml").read_text())
    mix: list[tuple[str, str, str]] = []  # (name, source, expected status)
    wrong_weight = 0
    for name, weight in WRONG_CASES:
        expected = yaml.safe_load((CASES / name / "expect.yaml").read_text())["status"]
        mix += [(name, (CASES / name / "solution.py").read_text(), expected)] * weight
        wrong_weight += weight
    mix += [("reference", problem["reference"], "accepted")] * (100 - wrong_weight)
    rng = random.Random(7)
    plan = [rng.choice(mix) for _ in range(args.submissions)]

    run = uuid.uuid4().hex[:10]
    queue, database = f"tjload-{run}", f"torchjudge_load_{run}"
    workdir = Path(tempfile.mkdtemp(prefix="torchjudge-load-"))
    problems_dir = workdir / "problems"
    problems_dir.mkdir()
    shutil.copy(ROOT / "problems" / f"{PROBLEM}.yaml", problems_dir)
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "GRADER_QUEUE": "celery",
        "GRADER_DATABASE_URL": f"postgresql://torchjudge:torchjudge@127.0.0.1:5432/{database}",
        "GRADER_BROKER_URL": REDIS_URL,
        "GRADER_CELERY_QUEUE": queue,
        "GRADER_DATA_DIR": str(workdir / "data"),
        "GRADER_PROBLEMS_DIR": str(problems_dir),
        "GRADER_LEASE_S": str(args.lease_s),
        "GRADER_POOL_SIZE": "1",
        "GRADER_LOG_FORMAT": "json",
        "GRADER_LOG_LEVEL": "WARNING",
        "GRADER_PORT": str(port),
    }
    api = Process(["serve"], env, workdir / "api.log")
    workers = {
        name: Process(
            ["worker", "--name", name],
            {**env, "GRADER_WORKER_HTTP_PORT": str(free_port())},
            workdir / f"{name}-1.log",
        )
        for name in ("load-1", "load-2")
    }
    replacement: Process | None = None
    results = Results()
    killed_at: float | None = None
    try:
        local_rate = measure_local(plan[: args.compare or kill_at], args.clients, problems_dir, workdir)
        api.start()
        for worker in workers.values():
            worker.start()
        _wait_http(f"{base}/healthz", api)
        for worker in workers.values():
            _wait_http(f"http://127.0.0.1:{worker.env['GRADER_WORKER_HTTP_PORT']}/healthz", worker)
        print(
            f"load: {args.submissions} submissions from {args.clients} clients; celery mode, 2 workers"
            f" (1 warm sandbox each), PostgreSQL + Redis; worker load-1 gets SIGKILL at #{kill_at}",
            flush=True,
        )

        kill_event = threading.Event()

        def killer() -> None:
            nonlocal replacement, killed_at
            kill_event.wait()
            killed_at = time.monotonic()
            workers["load-1"].kill9()
            print(f"  #{kill_at} stored: worker load-1 killed with SIGKILL; starting a new load-1", flush=True)
            replacement = Process(
                ["worker", "--name", "load-1"],
                {**env, "GRADER_WORKER_HTTP_PORT": str(free_port())},
                workdir / "load-1-2.log",
            ).start()

        kill_thread = threading.Thread(target=killer, daemon=True)
        kill_thread.start()
        started = time.monotonic()
        send_all(base, plan, args.clients, run, results, kill_at, kill_event)
        wall = time.monotonic() - started
        kill_event.set()
        kill_thread.join(timeout=30)

        # The database's word on every submission of the run.
        with psycopg.connect(env["GRADER_DATABASE_URL"]) as connection:
            rows = connection.execute("SELECT id, status, attempts FROM submissions").fetchall()
        by_status = Counter(status for _, status, _ in rows)
        lost = sum(by_status[status] for status in ("queued", "running"))
        regraded = sum(1 for _, _, attempts in rows if attempts > 1)
        stored_ids = {row[0] for row in rows}
        missing = [index for index in range(len(plan)) if results.ids.get(index) not in stored_ids]
        five_xx = sum(count for answer, count in results.answers.items() if answer.split()[1].startswith("5"))

        lat = results.latencies
        print()
        print(f"wall time                    {wall:.1f} s")
        print(f"throughput                   {len(lat) / wall:.2f} verdicts/s ({len(lat)} verdicts)")
        if lat:
            p50, p90, p99 = (percentile(lat, q) * 1000 for q in (0.5, 0.9, 0.99))
            print(
                f"latency, POST to verdict     p50 {p50:.0f} ms   p90 {p90:.0f} ms   p99 {p99:.0f} ms"
                f"   max {max(lat) * 1000:.0f} ms"
            )
        print(f"HTTP answers                 {dict(sorted(results.answers.items()))}")
        print(f"verdicts (clients)           {dict(sorted(results.verdicts.items()))}")
        print(f"submissions stored           {len(rows)} ({dict(sorted(by_status.items()))})")
        print(f"graded again after the kill  {regraded} (attempts > 1)")
        print(f"5xx answers                  {five_xx}")
        print(f"connection errors            {len(results.errors)}")
        print(f"wrong verdicts               {len(results.wrong_verdicts)}")
        print(f"lost (queued/running at end) {lost}; client submissions without a stored one: {len(missing)}")
        for line in (results.errors + results.wrong_verdicts)[:10]:
            print(f"  {line}")
        checks = [
            ("zero lost", lost == 0 and not missing and len(lat) == len(plan)),
            ("zero 5xx", five_xx == 0),
            ("zero connection errors", not results.errors),
            ("every verdict as expected", not results.wrong_verdicts),
            ("one stored submission per client submission", len(rows) == len(plan)),
            ("a worker was killed mid-run", killed_at is not None and killed_at < started + wall),
        ]
        before_kill = killed_at if killed_at is not None else started + wall
        celery_rate = sum(1 for at in results.finished if at <= before_kill) / max(1e-9, before_kill - started)
        print(f"throughput, local mode         {local_rate:.2f} verdicts/s (the same mix, 2 warm sandboxes, SQLite)")
        print(
            f"throughput, celery before kill {celery_rate:.2f} verdicts/s"
            f" ({celery_rate / local_rate * 100 if local_rate else 0:.0f} % of local mode)"
        )
        checks.append(("celery throughput within 20% of local mode", celery_rate >= 0.8 * local_rate))
        live = {"load-2": workers["load-2"], **({"load-1 (restarted)": replacement} if replacement else {})}
        _print_breakdowns(live, statistics.mean(lat) * 1000 if lat else 0.0)
        print()
        for name, ok in checks:
            print(f"{'PASS' if ok else 'FAIL'}  {name}")
        return 0 if all(ok for _, ok in checks) else 1
    finally:
        for process in [api, *workers.values(), *([replacement] if replacement else [])]:
            process.stop()
        _cleanup(database, queue, workdir, keep=args.keep)


def _print_breakdowns(workers: dict[str, Process], end_to_end_ms: float) -> None:
    """Where a submission's time went on each live worker (its /metrics), as make bench prints it."""
    for name, process in workers.items():
        url = f"http://127.0.0.1:{process.env['GRADER_WORKER_HTTP_PORT']}/metrics"
        try:
            reading = read_phases(url)
        except OSError as exc:
            print(f"\nworker {name}: no metrics ({exc})")
            continue
        print(f"\nwhere a submission's time went on worker {name} (mean of {reading[1]:.0f}):")
        for label, value in breakdown_rows(mean_phases(({}, 0.0), reading), end_to_end_ms):
            print(f"  {label:<48} {value}")


def _cleanup(database: str, queue: str, workdir: Path, *, keep: bool) -> None:
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=f"{queue}:*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()
    # The run's own sandbox containers, if a killed worker's were left behind (a clean stop leaves none).
    import docker

    from grader.config import Settings
    from grader.containers.container import owner_label
    from grader.worker import worker_settings

    engine = docker.from_env()
    for name in ("load-1", "load-2"):
        label = owner_label(worker_settings(Settings(data_dir=workdir / "data"), name).storage.data_dir)
        for container in engine.containers.list(all=True, filters={"label": f"{LABEL}={label}"}):
            container.remove(force=True)
    engine.close()
    if keep:
        print(f"logs kept in {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
