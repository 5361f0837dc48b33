"""Measures the page-cache channel between two sandbox containers, with the image's prewarm off and on.

    PYTHONPATH=. .venv/bin/python bench/page_cache_channel.py [--runtime runsc] [--rounds 6] [--bits 256]

The attack is tests/security/page_cache.py: a SENDER submission reads the pages of image files (Python
sources nobody reads at run time) where a fixed 256-bit pattern has a 1, then holds its container; a
RECEIVER submission, sent meanwhile to the pool's other container, times a 1-byte read of each page
and reports the bits it recovers in its first (visible) test's message. Both go through the real
service (grader.components + the HTTP API through TestClient), a pool of two sandbox containers.

For each mode the channel files are first evicted from the host's page cache (a helper container
under runc: posix_fadvise DONTNEED, which sandboxes may not call), so that both start cold; then the
service starts, and every round uses fresh pages (a page, once read, stays resident). Modes:
  off     GRADER_SANDBOX_PREWARM=false: no keeper, no prewarm in the containers
  on      the defaults: the pool's keeper locks every page of the image in memory before any sandbox
          starts, and each runc sandbox reads the image at start
  once    prewarm on but the image not pinned (GRADER_SANDBOX_PIN_IMAGE=false): read once at start;
          with --idle S, the rounds start S seconds later (the host may evict idle pages meanwhile)
For each round: bit accuracy, the threshold the receiver chose, the median read time of 1-pages and
0-pages, the channel's capacity in bits per second, (1 - H(error rate)) * bits / (sender's reading
time + receiver's probing time), both measured inside the sandboxes, and the same over the round's
wall-clock time (submissions, scheduling and the sender's hold included). Also the cost of the
prewarm on a container start (--starts N: N warm starts with and without it).
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fastapi.testclient import TestClient  # noqa: E402

from grader.app import create_app  # noqa: E402
from grader.components import build  # noqa: E402
from grader.config import Settings  # noqa: E402
from grader.containers.container import SandboxContainer, docker_client, owner_label  # noqa: E402
from tests.security import page_cache as pc  # noqa: E402
from tests.security.attacks import CORRECT  # noqa: E402

MODES = {
    "off": {"sandbox_prewarm": False},
    "on": {"sandbox_prewarm": True, "sandbox_pin_image": True},
    "once": {"sandbox_prewarm": True, "sandbox_pin_image": False},
}


def settings_for(args: argparse.Namespace, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "data_dir": Path(tempfile.mkdtemp(prefix="torchjudge-pagecache-")),
        "problems_dir": ROOT / "problems",
        "sandbox_image": args.image,
        "sandbox_runtime": args.runtime,
        "pool_size": 2,
        "sandbox_reuse": 1_000_000,
        "problems_poll_s": 0,
        # gVisor serves files slowly: room to load the submission.
        "compile_time_s": 30.0 if args.runtime != "runc" else 10.0,
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


def run_mode(args: argparse.Namespace, mode: str, slots: list[pc.Slot]) -> list[tuple[float, pc.Round]]:
    client = docker_client()
    left = pc.evict(client, args.image, [slot.path for slot in slots])
    print(f"\n== {mode} ({args.runtime}): channel files evicted, {left:.0%} of their pages still resident")
    settings = settings_for(args, **MODES[mode])
    service = build(settings)
    started = time.monotonic()
    service.start()
    results = []
    try:
        while not service.pool.ready:
            if time.monotonic() - started > 300:
                raise SystemExit(f"the pool did not warm up: {service.pool.last_error}")
            time.sleep(0.2)
        print(f"   pool ready in {time.monotonic() - started:.1f} s")
        with TestClient(create_app(settings, components=service)) as http:

            def post(source: str) -> dict:
                body = {"problem_id": "embedding-layer", "source": source}
                response = http.post("/api/submissions?wait=60", json=body)
                response.raise_for_status()
                return response.json()  # type: ignore[no-any-return]

            assert post(CORRECT)["status"] == "accepted"  # the reference run, not part of any round
            if args.idle and mode != "off":
                print(f"   idle for {args.idle:.0f} s")
                time.sleep(args.idle)
            for number in range(args.rounds):
                per_round = args.bits * args.copies
                chosen = slots[number * per_round : (number + 1) * per_round]
                before = pc.resident(client, args.image, chosen)
                result = pc.run_round(service, post, chosen, pc.PATTERN[: args.bits], args.copies)
                resident_before = sum(before) / len(before)
                results.append((resident_before, result))
                print(
                    f"   round {number + 1}: accuracy {result.accuracy:6.1%}  "
                    f"{result.capacity():8.0f} bit/s  "
                    f"send {result.send_s * 1e3:5.1f} ms  receive {result.recv_s * 1e3:5.1f} ms  "
                    f"wall {result.wall_s:4.2f} s  1-pages {result.median_us(1):6.1f} µs  "
                    f"0-pages {result.median_us(0):6.1f} µs  threshold {result.threshold_ns / 1e3:6.1f} µs  "
                    f"resident before {resident_before:4.0%}"
                )
    finally:
        service.stop()
    return results


def summarise(mode: str, results: list[tuple[float, pc.Round]], bits: int) -> str:
    rounds = [result for _, result in results]
    accuracy = statistics.mean(result.accuracy for result in rounds)
    error = min(1 - accuracy, accuracy)  # a receiver that is always wrong is as good as one always right
    seconds = statistics.mean(result.send_s + result.recv_s for result in rounds)
    wall = statistics.mean(result.wall_s for result in rounds)
    capacity = (1 - pc.binary_entropy(error)) * bits / seconds
    per_wall = (1 - pc.binary_entropy(error)) * bits / wall
    low = min(result.accuracy for result in rounds)
    high = max(result.accuracy for result in rounds)
    resident = statistics.mean(before for before, _ in results)
    return (
        f"{mode:5} {accuracy:7.1%} ({low:.0%}-{high:.0%})  {capacity:10.1f}  {per_wall:12.2f}  "
        f"{seconds * 1e3:8.1f}  {statistics.median(r.median_us(1) for r in rounds):7.1f}  "
        f"{statistics.median(r.median_us(0) for r in rounds):7.1f}  {resident:7.0%}"
    )


def measure_starts(args: argparse.Namespace, count: int) -> None:
    """Warm container starts (engine call to the runner's hello), with and without the prewarm."""
    client = docker_client()
    print(f"\n== container start, warm host page cache ({args.runtime}), {count} each")
    for prewarm in (False, True, False, True):
        settings = settings_for(args, sandbox_prewarm=prewarm)
        times = []
        for _ in range(count):
            container = SandboxContainer(
                client, settings.sandbox, settings.limits, owner_label(settings.storage.data_dir)
            )
            started = time.perf_counter()
            container.start()
            times.append((time.perf_counter() - started) * 1000)
            container.remove()
        label = "with prewarm   " if prewarm else "without prewarm"
        print(f"   {label}: median {statistics.median(times):6.0f} ms  ({', '.join(f'{t:.0f}' for t in times)})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runtime", default=os.environ.get("GRADER_SANDBOX_RUNTIME", "runc"))
    parser.add_argument("--image", default=os.environ.get("GRADER_SANDBOX_IMAGE", "torchjudge-sandbox"))
    parser.add_argument("--modes", default="off,on", help="comma-separated: off, on, once")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--bits", type=int, default=256, help="bits per round (at most 256)")
    parser.add_argument("--copies", type=int, default=1, help="pages per bit (the receiver averages their times)")
    parser.add_argument("--stride", type=int, default=4, help="pages between two slots")
    parser.add_argument("--idle", type=float, default=0.0, help="seconds between the pool's start and the rounds")
    parser.add_argument("--starts", type=int, default=0, help="also time N container starts with and without prewarm")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if not 8 <= args.bits <= 256:
        parser.error("--bits must be between 8 and 256")

    slots = pc.channel_slots(docker_client(), args.image, args.stride)
    needed = args.rounds * args.bits * args.copies
    if len(slots) < needed:
        parser.error(f"{len(slots)} slots of stride {args.stride}: not enough for {args.rounds} rounds")
    print(
        f"page-cache channel, {args.runtime}, image {args.image}: {args.rounds} rounds of {args.bits} bits, "
        f"{args.copies} page(s) per bit, {args.stride} pages apart in "
        f"{len({slot.path for slot in slots[:needed]})} Python sources"
    )
    summaries = []
    for mode in args.modes.split(","):
        summaries.append(summarise(mode, run_mode(args, mode, slots), args.bits))
    if args.starts:
        measure_starts(args, args.starts)
    print(f"\n== summary ({args.runtime}; capacity = (1 - H(error rate)) * {args.bits} / (send + receive time))")
    print("mode  accuracy (min-max)  bits/s   bits/s(wall)   send+recv ms  1-page µs  0-page µs  resident before")
    for line in summaries:
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
