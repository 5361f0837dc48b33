"""What bench.py and load.py share: ports, percentiles, and where a submission's time went, read from
a service's (or a worker's) /metrics (torchjudge_phase_seconds, grader/phases.py)."""

from __future__ import annotations

import re
import socket
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from grader.phases import PHASES  # noqa: E402

SUM_LINE = re.compile(r'^torchjudge_phase_seconds_sum\{phase="([^"]+)"\} ([0-9.eE+-]+)$')
SAMPLES_LINE = re.compile(r"^torchjudge_phase_samples_total ([0-9.eE+-]+)$")
_INSIDE_JOB = ("load", "first test", "other tests", "compare", "progress")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


def read_phases(metrics_url: str) -> tuple[dict[str, float], float]:
    """Seconds spent per phase so far, summed over every recorded submission, and how many there were."""
    with urllib.request.urlopen(metrics_url, timeout=30) as response:
        text = response.read().decode()
    sums: dict[str, float] = {}
    samples = 0.0
    for line in text.splitlines():
        if match := SUM_LINE.match(line):
            sums[match.group(1)] = float(match.group(2))
        elif match := SAMPLES_LINE.match(line):
            samples = float(match.group(1))
    return sums, samples


def mean_phases(before: tuple[dict[str, float], float], after: tuple[dict[str, float], float]) -> dict[str, float]:
    """Milliseconds per submission, per phase, between two readings."""
    count = after[1] - before[1]
    if count <= 0:
        return {}
    names = set(after[0]) | set(before[0])
    return {name: (after[0].get(name, 0.0) - before[0].get(name, 0.0)) * 1000 / count for name in names}


def breakdown_rows(per_phase: dict[str, float], end_to_end_ms: float) -> list[tuple[str, str]]:
    """One submission, phase by phase, and what is left of the end-to-end time (HTTP, the database
    reads of the waiting request, waking it)."""
    rows = []
    for phase in PHASES:
        if phase in per_phase:
            inside = phase in _INSIDE_JOB
            rows.append((f"  {'  ' if inside else ''}{phase}", f"{per_phase[phase]:.2f} ms"))
        if phase == "progress" and "transport" in per_phase:
            rows.append(("    frames' and job's trips, runner bookkeeping", f"{per_phase['transport']:.2f} ms"))
    server = sum(per_phase.get(name, 0.0) for name in PHASES if name not in _INSIDE_JOB)
    rows.append(("  HTTP, the waiting request, the rest", f"{max(0.0, end_to_end_ms - server):.2f} ms"))
    return rows
