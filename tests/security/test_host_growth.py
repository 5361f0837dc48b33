"""Nothing a submission or a run writes stays on the host's disk.

A sandbox's stdout carries the protocol's frames, and its stderr the runner's and the zygote's last
line; both reach the trusted side over the attach stream only. With the engine's default log driver
(json-file) the engine also wrote every frame to containers/<id>/<id>-json.log under its root, kept
until the container is replaced (up to `sandbox_reuse` jobs): one submission grew it by 192 MiB. Here
a submission writes 64 MiB through every route it has to the container's output (print, sys.stdout,
descriptors 1 and 2, /dev/stdout, every inherited descriptor) and returns results near the frame cap,
and a run does the same in the tests it brings; the engine's files for the service's containers, and
the free space of the filesystem that holds the data directory, are measured before and after.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import docker
import pytest
from fastapi.testclient import TestClient

from tests.security.attacks import FACTORY, PRELUDE
from tests.security.conftest import Submit, full_pool

pytestmark = pytest.mark.docker

MIB = 1024 * 1024
WRITTEN = 64 * MIB
# Each container's directories hold the engine's few small files (its config, hosts, resolv.conf, the
# runtime's bundle): they may be rewritten, never grow with what the container writes.
ENGINE_BOUND = 1 * MIB
# Other processes share the filesystem (the database's writes, other tests): a loose bound, still far
# below what one submission left there before (hundreds of MiB).
FREE_SPACE_BOUND = WRITTEN
ATTEMPTS = 3

FLOOD = (
    PRELUDE
    + FACTORY
    + f"""

WRITTEN = {WRITTEN}
LINE = b"x" * 1023 + b"\\n"
CHUNK = LINE * 64


def _print():
    text = LINE.decode()[:-1]
    for _ in range(WRITTEN // len(LINE)):
        print(text)


def _sys_stdout():
    for _ in range(WRITTEN // len(CHUNK)):
        sys.stdout.write(CHUNK.decode())


def _fd(fd):
    def write():
        for _ in range(WRITTEN // len(CHUNK)):
            os.write(fd, CHUNK)
    return write


def _dev_stdout():
    with open("/dev/stdout", "wb", buffering=0) as out:
        for _ in range(WRITTEN // len(CHUNK)):
            out.write(CHUNK)


def _inherited():
    # Whatever else the child holds open (its result pipe to the runner among them): /proc/self/fd is
    # not its to list, so every descriptor number is tried.
    for _ in range(WRITTEN // len(CHUNK) // 64):
        for fd in range(3, 256):
            try:
                os.write(fd, CHUNK)
            except OSError:
                pass


ROUTES = [_print, _sys_stdout, _fd(1), _fd(2), _dev_stdout, _inherited, None]


def next_route():
    # Each call in a job takes the next route, across the fresh children that follow killed ones
    # (scratch space is wiped between jobs only).
    try:
        with open("/tmp/.route") as handle:
            calls = int(handle.read())
    except (OSError, ValueError):
        calls = 0
    with open("/tmp/.route", "w") as handle:
        handle.write(str(calls + 1))
    return ROUTES[calls % len(ROUTES)]


def embed_tokens(embedding, tokens, d_model):
    route = next_route()
    if route is None:
        # A result near the frame cap (14 MiB): the runner relays it on its stdout, in one frame.
        return torch.ones(3_500_000)
    try:
        route()
    except OSError:
        pass
    return embedding(tokens) * math.sqrt(d_model)
"""
)

# A run's own tests run beside the reference too: each prints up to its output limit (or 64 MiB,
# past it) and returns a result near the frame cap.
RUN_TESTS = [
    {"code": 'print(("y" * 1023 + "\\n") * 200)\nreturn {"out": torch.ones(3_500_000)}'},
    {"code": 'import os\nos.write(1, b"z\\n" * (32 << 20))\nreturn {"out": torch.zeros(3_500_000)}'},
    {"code": 'import sys\nsys.stderr.write("e" * 200_000)\nreturn {"out": torch.full((3_500_000,), 2.0)}'},
]


@functools.cache
def _engine() -> docker.DockerClient:
    # More patient than the service's client: a loaded machine's engine can take a minute to list.
    return docker.from_env(version="auto", timeout=300)


def _engine_root() -> Path:
    root = Path(_engine().info()["DockerRootDir"])
    if not (root / "containers").is_dir():
        pytest.fail(f"the Docker engine's root ({root}) is not on this machine")
    return root


def _service_containers(service: object) -> dict[str, dict]:
    """Every container of this service (its pools, their reference pools, the page-cache keeper), by id:
    their labels start with the pool's owner."""
    from grader.containers.container import LABEL

    owner = service.pool.owner  # type: ignore[attr-defined]
    found = {}
    for container in _engine().containers.list(all=True, filters={"label": LABEL}):
        if container.labels.get(LABEL, "").startswith(owner):
            found[container.id] = container.attrs
    return found


def _directory_bytes(path: Path) -> int:
    """Apparent bytes of the regular files under path (a fifo counts nothing; links are not followed)."""
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except FileNotFoundError:
                pass
    return total


# Where the engine's containerd keeps each running container's bundle (the runtime's own log among it):
# under the engine's root, and under its exec root (/run/docker by default; not in `docker info`).
TASKS = "containerd/daemon/io.containerd.runtime.v2.task/moby"
EXEC_ROOT = Path("/run/docker")


def _engine_bytes(root: Path, cid: str) -> int:
    """The engine's files for one container: containers/<id>/ (its *-json.log with json-file) and the
    runtime's bundle (runc's or runsc's log.json); its writable layer is counted apart (_writable_layers)."""
    return sum(_directory_bytes(base / cid) for base in (root / "containers", root / TASKS, EXEC_ROOT / TASKS))


@dataclass(frozen=True)
class Host:
    """What the host holds for the service: the engine's bytes per container, the data directory's
    bytes (the database), and the free bytes of the filesystem under the data directory."""

    engine: dict[str, int]
    data: int
    free: int


def _writable_layers(service: object) -> dict[str, int]:
    """Bytes in each of the service's containers' own layers (read-only root filesystems: none)."""
    from grader.containers.container import LABEL

    owner = service.pool.owner  # type: ignore[attr-defined]
    listed = _engine().api.containers(all=True, size=True, filters={"label": LABEL})
    # SizeRw is left out when it is 0.
    return {item["Id"]: int(item.get("SizeRw") or 0) for item in listed if item["Labels"][LABEL].startswith(owner)}


def _measure(service: object, root: Path) -> Host:
    data_dir = service.settings.storage.data_dir  # type: ignore[attr-defined]
    layers = _writable_layers(service)
    engine = {cid: _engine_bytes(root, cid) + layers.get(cid, 0) for cid in _service_containers(service)}
    stat = os.statvfs(data_dir)
    return Host(engine, _directory_bytes(data_dir), stat.f_bavail * stat.f_frsize)


@dataclass(frozen=True)
class Growth:
    engine: int  # containers present before count their growth, new ones their whole size
    data: int
    free_drop: int
    biggest: str

    def __str__(self) -> str:
        return (
            f"engine's files {self.engine / MIB:+.2f} MiB (largest: {self.biggest}),"
            f" data directory {self.data / MIB:+.2f} MiB, free space {-self.free_drop / MIB:+.1f} MiB"
        )


def _growth(service: object, root: Path, before: Host) -> Growth:
    time.sleep(0.5)  # the engine's copy of the last frames
    after = _measure(service, root)
    engine = sum(size - before.engine.get(cid, 0) for cid, size in after.engine.items())
    biggest = sorted(after.engine.items(), key=lambda item: -item[1])[:3]
    detail = ", ".join(f"{cid[:12]} {size / 1024:.1f} KiB" for cid, size in biggest)
    return Growth(engine, after.data - before.data, before.free - after.free, detail)


def test_every_container_of_the_service_logs_nothing_to_the_host(service: object) -> None:
    containers = _service_containers(service)
    owner = service.pool.owner  # type: ignore[attr-defined]
    from grader.containers.container import LABEL

    labels = {attrs["Config"]["Labels"][LABEL] for attrs in containers.values()}
    assert owner in labels and len(containers) >= service.pool.size, labels  # type: ignore[attr-defined]
    drivers = {attrs["Name"]: attrs["HostConfig"]["LogConfig"]["Type"] for attrs in containers.values()}
    assert set(drivers.values()) == {"none"}, drivers
    # The page-cache keeper still reports (over its attach stream now, not `docker logs`).
    keeper = service.pool._keeper  # type: ignore[attr-defined]
    if service.settings.sandbox.pin_image:  # type: ignore[attr-defined]
        assert keeper is not None and keeper.alive() and keeper.counts["files"] > 1000, keeper


def test_the_one_off_read_of_the_image_reports_over_its_attach_stream(tmp_path: Path) -> None:
    """With the keeper off (sandbox_pin_image=false) the pool reads the image once in a container that
    logs nothing either: its line of counts comes over the attach stream."""
    from grader.containers.container import docker_client, owner_label
    from grader.containers.prewarm import prewarm_image
    from tests.conftest import make_settings

    sandbox = make_settings(tmp_path, sandbox_pin_image=False).sandbox
    counts = prewarm_image(docker_client(), sandbox, owner_label(tmp_path))
    assert counts is not None and counts["files"] > 1000 and counts["bytes"] > 100 * MIB, counts


def _flooded(service: object, flood: Callable[[], str], label: str) -> None:
    """Runs flood() (which returns how it ended) and checks what the host kept. The engine's files are
    the service's alone: checked every time. The filesystem's free space is everyone's (other processes
    write there too): the check is repeated, up to ATTEMPTS times, until one attempt stays in bound."""
    root = _engine_root()
    drops = []
    for _ in range(ATTEMPTS):
        pool = full_pool(service)
        before = _measure(service, root)
        ended = flood()
        growth = _growth(service, root, before)
        print(f"{label} ({ended}): {growth}")
        assert full_pool(service) == pool, "a container was lost: its files went with it, unmeasured"
        assert growth.engine < ENGINE_BOUND, f"the engine kept the output of a {label}: {growth}"
        drops.append(growth.free_drop)
        if growth.free_drop < FREE_SPACE_BOUND:
            return
    raise AssertionError(f"the host's disk lost {[f'{drop / MIB:.1f} MiB' for drop in drops]} to a {label}")


def test_a_submission_that_floods_its_output_leaves_nothing_on_the_host(
    service: object, submit: Submit, sandbox_runtime: str
) -> None:
    def flood() -> str:
        verdict = submit(FLOOD)
        assert verdict["status"] not in ("accepted", "internal_error"), verdict.get("message")
        return str(verdict["status"])

    _flooded(service, flood, f"{sandbox_runtime} flooding submission")


def test_a_run_that_floods_its_output_leaves_nothing_on_the_host(
    service: object, client: TestClient, sandbox_runtime: str
) -> None:
    def flood() -> str:
        body: dict[str, object] = {"problem_id": "embedding-layer", "source": FLOOD, "tests": RUN_TESTS}
        response = client.post("/api/runs", json=body)
        if response.status_code == 422 and "tests" in response.text:
            # Runs that take no test code of their own: the visible tests, with the flooding submission.
            del body["tests"]
            response = client.post("/api/runs", json=body)
        assert response.status_code == 200, response.text
        return str(response.json()["status"])

    _flooded(service, flood, f"{sandbox_runtime} flooding run")
