"""Where the machine's CPU time goes per submission: the service's own processes, the sandbox
containers (their cgroups, as the engine counts them), and the container engine that carries every
job and frame (dockerd, containerd and the containers' shims).

With one client submitting as soon as its last answer came, the machine does all of a submission's
work in the time between two answers; so no submission can take less than its CPU time divided by the
cores, however short its critical path is. The bench prints that bound beside the p50.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from grader.containers.container import docker_client

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# /proc/<pid>/comm is cut to 15 characters: "containerd-shim-runc-v2" reads "containerd-shim".
ENGINE = frozenset({"dockerd", "containerd", "containerd-shim", "docker-proxy", "runc"})


@dataclass(frozen=True)
class Reading:
    service_s: float
    engine_s: float
    containers_s: dict[str, float]  # container id -> CPU seconds


def _processes() -> list[tuple[str, int, float]]:
    """(command name, session id, CPU seconds) of every process on the host."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue  # ended meanwhile
        command = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()  # fields[0] is the 3rd field of stat(5), the state
        found.append((command, int(fields[3]), (int(fields[11]) + int(fields[12])) / CLOCK_TICKS))
    return found


def _containers(label: str) -> dict[str, float]:
    containers = {}
    for container in docker_client().containers.list(filters={"label": f"torchjudge.sandbox={label}"}):
        stats = container.stats(stream=False, one_shot=True)
        containers[container.id] = stats["cpu_stats"]["cpu_usage"]["total_usage"] / 1e9
    return containers


def read(session: int, label: str, before: bool) -> Reading:
    """CPU seconds so far: the service's (every process of its session), the engine's, and each of the
    service's sandbox containers'. The engine's work of asking it (docker stats) is kept out of the
    measured span: before it, the containers are read first; after it, last."""
    containers = _containers(label) if before else {}
    processes = _processes()
    if not before:
        containers = _containers(label)
    return Reading(
        service_s=sum(seconds for _, sid, seconds in processes if sid == session),
        engine_s=sum(seconds for command, _, seconds in processes if command in ENGINE),
        containers_s=containers,
    )


def per_submission(before: Reading, after: Reading, count: int) -> dict[str, float]:
    """Milliseconds of CPU per submission between two readings, by whom (containers present in both)."""
    both = before.containers_s.keys() & after.containers_s.keys()
    spent = {
        "service": after.service_s - before.service_s,
        "sandbox containers": sum(after.containers_s[key] - before.containers_s[key] for key in both),
        "container engine": after.engine_s - before.engine_s,
    }
    return {name: seconds * 1000 / max(count, 1) for name, seconds in spent.items()}


def rows(spent: dict[str, float], cores: int) -> list[tuple[str, str]]:
    total = sum(spent.values())
    lines = [(f"  CPU per submission: {name}", f"{ms:.1f} ms") for name, ms in spent.items()]
    lines.append((f"  CPU per submission, all of it / {cores} cores", f"{total / cores:.1f} ms"))
    return lines
