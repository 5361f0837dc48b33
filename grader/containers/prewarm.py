"""Every page of the sandbox image resident in the host's memory, from before the first sandbox starts.

Why (SECURITY.md, "The page-cache channel"): sandboxes share the image's files, so the same pages of
the host's page cache; a submission that makes chosen pages resident by reading them can signal to a
submission in another container that times its reads. Once every page is resident, and stays so,
reading changes nothing.

Each runc sandbox reads the whole image itself at start (sandbox/runner/prewarm.py), but that is not
enough on its own: the pages a container brings in are charged to its own memory cgroup, where memory
pressure (a submission allocating up to its limit) evicts them again; the host evicts pages nobody
touched for a while (memory pressure, or proactive reclaim: docs/BENCHMARKS.md, "Costs behind the
code"); and a gVisor sandbox must not read the image itself
(its sentry would keep a copy in the sandbox's memory).

So the pool starts, before any sandbox, a KEEPER: a container of the image that maps every file of the
image and locks the mappings in memory (mlock), then waits for its stdin to close. Locked pages are
resident, unevictable by any reclaim, and charged to no sandbox. It costs the image's size of the
host's memory once per host: pages are shared, so a second pool's keeper costs only
its page tables. The keeper runs the image's own code only (no submission ever enters it), under runc
(the host's page cache is what matters, also for gVisor sandboxes), with the sandbox's hardening
(no network, read-only, no-new-privileges) but a memory limit above the image's size, and as root with
one capability, CAP_IPC_LOCK (mlock beyond RLIMIT_MEMLOCK). Its stdin is held by the pool: when the
service stops or dies, the keeper sees EOF, exits, and the engine removes it.

With `sandbox_pin_image` off, a one-off container reads the image once instead (prewarm_image): the
pages are charged to no sandbox, but the host may evict them later.
"""

from __future__ import annotations

import json
import logging
import select
import socket
import time
import uuid

import docker
from docker.errors import DockerException, NotFound
from docker.types import Ulimit

from grader.config_grading import SandboxSettings
from grader.containers.container import DOCKER_STREAM_HEADER, LABEL
from grader.containers.hardening import no_host_logs

log = logging.getLogger(__name__)

PREWARM = ["python3", "-I", "-B", "/opt/runner/prewarm.py"]
TIMEOUT_S = 90.0
MEMORY_HEADROOM_MB = 512
# What is kept of a prewarm container's stdout: its one line of counts (a few hundred bytes).
MAX_OUTPUT = 64 * 1024


def _create(client: docker.DockerClient, image: str, owner: str, name: str, keep: bool) -> str:
    api = client.api
    image_bytes = int(client.images.get(image).attrs.get("Size") or 0)
    memory = image_bytes + MEMORY_HEADROOM_MB * 1024 * 1024
    host_config = api.create_host_config(
        network_mode="none",
        read_only=True,
        tmpfs={"/tmp": "rw,noexec,nosuid,nodev,size=1m,mode=1777"},
        cap_drop=["ALL"],
        # Locking more than RLIMIT_MEMLOCK (8 MiB, and the engine may not raise it) takes CAP_IPC_LOCK,
        # which only uid 0 gets in its effective set: root in the container, with that capability alone.
        cap_add=["IPC_LOCK"] if keep else None,
        security_opt=["no-new-privileges"],
        pids_limit=16,
        mem_limit=memory,
        memswap_limit=memory,
        nano_cpus=int(1e9),
        ulimits=[Ulimit(name="nofile", soft=256, hard=256), Ulimit(name="core", soft=0, hard=0)],
        runtime="runc",
        auto_remove=keep,
        # Its one line of counts is read from the attach stream (_stdout), not from a log on the host.
        log_config=no_host_logs(),
    )
    created = api.create_container(
        image,
        entrypoint=PREWARM + (["--keep"] if keep else []),
        name=name,
        user="0:0" if keep else "10001:10001",
        environment={},
        network_disabled=True,
        stdin_open=keep,
        tty=False,
        labels={LABEL: owner},
        host_config=host_config,
    )
    return str(created["Id"])


def _attach(client: docker.DockerClient, container_id: str, stdin: bool) -> tuple[object, socket.socket]:
    """The container's stdout (and its stdin) over the engine's attach stream: attached before it starts,
    so that nothing it writes is missed. The response object must be kept with the socket."""
    params = {"stdout": 1, "stream": 1} | ({"stdin": 1} if stdin else {})
    response = client.api.attach_socket(container_id, params=params)
    return response, response._sock  # type: ignore[union-attr]


def _stdout(sock: socket.socket, deadline: float, *, line: bool) -> bytes:
    """What the container writes on its stdout until it ends (EOF), or, with line, until its first
    newline; at most MAX_OUTPUT bytes. Raises DockerException when the deadline passes first."""
    raw = bytearray()
    out = bytearray()
    while len(out) < MAX_OUTPUT and not (line and b"\n" in out):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DockerException("no answer in time")
        readable, _, _ = select.select([sock], [], [], remaining)
        if not readable:
            continue
        data = sock.recv(1 << 16)
        if not data:
            break
        raw += data
        while len(raw) >= DOCKER_STREAM_HEADER.size:
            stream, size = DOCKER_STREAM_HEADER.unpack_from(raw)
            if len(raw) < DOCKER_STREAM_HEADER.size + size:
                break
            if stream == 1:
                out += raw[DOCKER_STREAM_HEADER.size : DOCKER_STREAM_HEADER.size + size]
            del raw[: DOCKER_STREAM_HEADER.size + size]
    return bytes(out[:MAX_OUTPUT])


def _counts(output: bytes) -> dict:
    for line in reversed(output.decode("utf-8", "replace").splitlines()):
        try:
            counts = json.loads(line)
        except ValueError:
            continue
        if isinstance(counts, dict):
            return counts
    raise ValueError(f"no counts in {output[-300:]!r}")


def prewarm_image(
    client: docker.DockerClient, sandbox: SandboxSettings, owner: str, timeout_s: float = TIMEOUT_S
) -> dict | None:
    """Reads every file of the image once, in a one-off container; waits for it. Returns its counts
    (files, bytes, seconds), or None when it could not run (logged: not fatal)."""
    started = time.monotonic()
    name = f"torchjudge-prewarm-{uuid.uuid4().hex[:12]}"
    container_id = None
    sock = None
    try:
        container_id = _create(client, sandbox.image, owner, name, keep=False)
        response, sock = _attach(client, container_id, stdin=False)
        client.api.start(container_id)
        output = _stdout(sock, started + timeout_s, line=False)
        result = client.api.wait(container_id, timeout=max(1.0, started + timeout_s - time.monotonic()))
        if result.get("StatusCode") != 0:
            raise DockerException(f"exit status {result.get('StatusCode')}: {output[-300:]!r}")
        counts = _counts(output)
        counts["total_seconds"] = round(time.monotonic() - started, 3)
        log.info("sandbox image read into the page cache: %s", counts)
        return counts
    except Exception as exc:  # noqa: BLE001 - an engine error, a timeout, odd output: never fatal
        log.warning("could not prewarm the sandbox image (%s); the sandboxes will do it themselves", exc)
        return None
    finally:
        if sock is not None:
            sock.close()
        if container_id is not None:
            _remove(client, container_id, name)


def _remove(client: docker.DockerClient, container_id: str, name: str) -> None:
    try:
        client.api.remove_container(container_id, force=True)
    except NotFound:
        pass
    except DockerException as exc:
        log.warning("could not remove %s: %s", name, exc)


class ImageKeeper:
    """The keeper container (module docstring): started by start(), gone after close()."""

    def __init__(self, client: docker.DockerClient, sandbox: SandboxSettings, owner: str) -> None:
        self.client = client
        self.sandbox = sandbox
        self.owner = owner  # its label: the pool's owner, whose leftovers a restart removes
        self.name = f"torchjudge-pagecache-{uuid.uuid4().hex[:12]}"
        self.container_id: str | None = None
        self.counts: dict | None = None
        self._response = None
        self._sock: socket.socket | None = None

    def start(self, timeout_s: float = TIMEOUT_S) -> dict:
        """Starts the keeper and waits until every page is locked; returns its counts. Raises on failure."""
        started = time.monotonic()
        api = self.client.api
        try:
            self.container_id = _create(self.client, self.sandbox.image, self.owner, self.name, keep=True)
            # Its stdin is held open for the keeper's lifetime, closed by close() or by this process's end;
            # its stdout says once, in one line, that every page is locked.
            self._response, self._sock = _attach(self.client, self.container_id, stdin=True)
            api.start(self.container_id)
            try:
                output = _stdout(self._sock, started + timeout_s, line=True)
            except DockerException:
                raise DockerException(f"the keeper was not ready within {timeout_s:g}s") from None
            if b"\n" not in output:
                raise DockerException(f"the keeper stopped before it was ready: {output[-300:]!r}")
            self.counts = _counts(output)
        except Exception:
            self.close()
            raise
        self.counts["total_seconds"] = round(time.monotonic() - started, 3)
        return self.counts

    def alive(self) -> bool:
        if self.container_id is None:
            return False
        try:
            return bool(self.client.api.inspect_container(self.container_id)["State"]["Running"])
        except DockerException:
            return False

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
            self._sock = None
        if self.container_id is not None:
            _remove(self.client, self.container_id, self.name)
            self.container_id = None


def keep_image_resident(client: docker.DockerClient, sandbox: SandboxSettings, owner: str) -> ImageKeeper | None:
    """What the pool calls at start, before any sandbox: the keeper when `sandbox_pin_image` is on
    (or, if it cannot start, a one-off read of the image); never raises."""
    if sandbox.pin_image:
        keeper = ImageKeeper(client, sandbox, owner)
        try:
            counts = keeper.start()
        except Exception as exc:  # noqa: BLE001 - an engine error, a timeout: fall back, never fatal
            log.warning("could not start the page-cache keeper (%s); reading the image once instead", exc)
        else:
            log.info("sandbox image held resident by %s: %s", keeper.name, counts)
            if counts.get("locked_bytes", 0) < counts.get("bytes", 0):
                log.warning("the page-cache keeper could not lock every page (RLIMIT_MEMLOCK): %s", counts)
            return keeper
    prewarm_image(client, sandbox, owner)
    return None
