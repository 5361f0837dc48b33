"""Benchmark of the batch endpoint: N solutions (a quarter of them looping forever) graded through
`grader submit --batch`, against `grader serve` as `make run` starts it (SQLite, the in-process queue,
GRADER_POOL_SIZE warm sandboxes).

    .venv/bin/python bench/batch.py [--n 1000] [--loopers 0.25]

It prints the wall time, the throughput, and the sandbox-seconds the loopers cost (each test's time_ms
from the admin's export, every hidden test included) beside what they would cost if every test ran to its
time limit (what a looper cost before the tests after a timeout were skipped). The baseline, measured in
the same run before the batch: single submissions one at a time (POST ?wait=), a correct one and a looper,
their median latency; from them, the wall time the batch would take if its solutions were sent that way
on every sandbox at once (N x latency / pool size). Exit 1 unless every solution got its expected verdict
(accepted, wrong_answer, time_limit_exceeded)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from common import free_port  # noqa: E402

from grader.problems.registry import parse_problem  # noqa: E402

PROBLEM = "embedding-layer"
GRADER = str(ROOT / ".venv" / "bin" / "grader")
TOKEN = "bench-batch-admin-token-0123456789"
LOOPER = """\
import torch.nn as nn

def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)

def embed_tokens(embedding, tokens, d_model):
    while True:
        pass
"""


def wait_ready(url: str, deadline_s: float = 300) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=5) as response:
                if json.loads(response.read()).get("ready"):
                    return
        except OSError:
            pass
        time.sleep(1)
    raise SystemExit("the service did not get ready")


def export(url: str, batch_ids: set[str]) -> list[dict]:
    records = []
    for batch_id in sorted(batch_ids):
        request = urllib.request.Request(
            f"{url}/api/submissions/export?format=jsonl&batch_id={batch_id}",
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        with urllib.request.urlopen(request, timeout=300) as response:
            records += [json.loads(line) for line in response.read().decode().splitlines()]
    return records


def single(url: str, source: str) -> float:
    """Seconds from POST ?wait=60 to its verdict."""
    body = json.dumps({"problem_id": PROBLEM, "source": source}).encode()
    request = urllib.request.Request(
        f"{url}/api/submissions?wait=60", data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=120) as response:
        status = json.loads(response.read())["status"]
    if status not in ("accepted", "wrong_answer", "time_limit_exceeded"):
        raise SystemExit(f"a single submission was {status}")
    return time.monotonic() - started


def report(n: int, loopers: int, wall: float, looper_ms: list[float], full_s: float, ideal: float) -> None:
    cost = sum(looper_ms) / 1000
    print(f"{n} solutions ({loopers} looping forever) through POST /api/submissions/batch")
    print(f"  wall time          {wall:8.1f} s   ({n / wall:.1f} solutions/s)")
    print(f"  loopers' cost      {cost:8.1f} sandbox-s  ({cost / max(loopers, 1):.2f} s each)")
    print(f"  without the skip   {full_s * loopers:8.1f} sandbox-s  ({full_s:.0f} s each: every test to its limit)")
    print(f"  baseline           {ideal:8.1f} s   (single submissions' latency x N / pool size)")
    print(f"  ratio              {wall / max(ideal, 1e-9):8.2f} x the baseline")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--loopers", type=float, default=0.25, help="the share of solutions that loop forever")
    args = parser.parse_args()
    problem = parse_problem((ROOT / "problems" / f"{PROBLEM}.yaml").read_text(), f"{PROBLEM}.yaml")
    wrong = next(p.module for p in problem.pitfalls if "sqrt" in p.hint)
    loopers = round(args.n * args.loopers)
    plan = ["looper"] * loopers + ["wrong"] * ((args.n - loopers) // 5)
    plan += ["correct"] * (args.n - len(plan))
    plan.sort(key=lambda kind: hash((kind, len(kind))))  # mixed, the same way every run
    sources = {"correct": problem.reference, "wrong": wrong, "looper": LOOPER}
    expected = {"correct": "accepted", "wrong": "wrong_answer", "looper": "time_limit_exceeded"}

    with tempfile.TemporaryDirectory(prefix="bench-batch-") as scratch:
        data = Path(scratch)
        items = data / "items.jsonl"
        items.write_text(
            "".join(
                json.dumps({"source": sources[kind], "metadata": {"n": n, "kind": kind}}) + "\n"
                for n, kind in enumerate(plan)
            )
        )
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        env = {
            **os.environ,
            "GRADER_DATA_DIR": str(data),
            "GRADER_PORT": str(port),
            "GRADER_ADMIN_TOKEN": TOKEN,
            "GRADER_PROBLEMS_POLL_S": "0",
            "GRADER_LOG_LEVEL": "WARNING",
        }
        server = subprocess.Popen([GRADER, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            wait_ready(url)
            single(url, problem.reference)  # warm
            correct_s = statistics.median(single(url, problem.reference) for _ in range(9))
            looper_s = statistics.median(single(url, LOOPER) for _ in range(3))
            pool = int(json.loads(urllib.request.urlopen(f"{url}/healthz", timeout=10).read())["sandbox"]["size"])
            ideal = ((args.n - loopers) * correct_s + loopers * looper_s) / pool
            out = data / "verdicts.jsonl"
            started = time.monotonic()
            done = subprocess.run(
                [GRADER, "submit", "--batch", str(items), "--problem", PROBLEM, "--url", url, "--out", str(out)],
                stderr=subprocess.PIPE,
                text=True,
            )
            wall = time.monotonic() - started
            if done.returncode == 2:
                print(done.stderr, file=sys.stderr)
                return 1
            verdicts = [json.loads(line) for line in out.read_text().splitlines()]
            records = {record["id"]: record for record in export(url, {v["batch_id"] for v in verdicts})}
        finally:
            server.terminate()
            server.wait(timeout=60)
    kinds = list(zip(plan, verdicts, strict=True))
    unexpected = Counter((kind, v.get("status")) for kind, v in kinds if v.get("status") != expected[kind])
    looper_ms = [sum(t["time_ms"] or 0 for t in records[v["id"]]["tests"]) for kind, v in kinds if kind == "looper"]
    report(args.n, loopers, wall, looper_ms, (problem.limits.time_s or 2.0) * len(problem.tests), ideal)
    if unexpected:
        print(f"unexpected verdicts: {dict(unexpected)}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
