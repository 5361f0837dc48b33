"""A pool of warm sandbox containers: grading takes one that already has torch loaded.

Containers are started in the background at start-up and replaced in the background: after a
configured number of jobs, after any anomaly, and when one fails. Nothing on the grading path waits
for a container start while the pool is sized for the load.

The pool never shrinks for good: a container handed out is due back by a deadline (its job's own
bound plus slack); a watchdog removes one that is not back in time, whatever holds it, and starts
its replacement. Until then the pool counts it as overdue, and the pool is not ready (short).
"""

from __future__ import annotations

import logging
import queue
import threading
import time

import docker

from grader.config_grading import LimitsSettings, SandboxSettings
from grader.containers.container import LABEL, SandboxContainer
from grader.containers.losses import NoSandboxFree, SandboxLost
from grader.containers.prewarm import ImageKeeper, keep_image_resident

log = logging.getLogger(__name__)

# A container handed out is due back this long after its job's own bound.
RETURN_SLACK_S = 30.0
WATCHDOG_INTERVAL_S = 1.0
CONNECT_RETRY_S = 2.0


def _remove_leftover(container: docker.models.containers.Container) -> None:
    """A previous run's container, removed; one already gone or being removed (auto-removal after its
    grader died) is no error."""
    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as exc:
        if exc.status_code != 409:  # 409: its removal is already in progress
            raise


class SandboxPool:
    def __init__(
        self,
        sandbox: SandboxSettings,
        limits: LimitsSettings,
        *,
        owner: str,
        client: docker.DockerClient | None = None,
        size: int | None = None,
        keep_image: bool = True,
    ) -> None:
        self.sandbox = sandbox
        self.limits = limits  # the largest memory a test may ask, which each container is sized for
        self.client = client
        # Whose containers these are (a label: the service's owner_label, or a pool's own): a pool removes its
        # owner's leftovers at start, so a pool beside another (a problem check's) needs an owner of its own.
        self.owner = owner
        # Whether this pool keeps the image's pages resident (prewarm.py): for pools that run submissions.
        self.keep_image = keep_image
        # size=0: no warm containers, only the engine (a Celery-mode API).
        self.size = sandbox.pool_size if size is None else size
        self._idle: queue.Queue[SandboxContainer] = queue.Queue()
        self._lock = threading.Lock()
        self._starting = 0
        self._busy = 0
        self._cold = 0  # containers taken back clean without a warm child for their next job
        self._closed = False
        self.last_error: str | None = None
        self.image_id: str | None = None
        # Containers handed out, with the time each is due back.
        self._out: dict[SandboxContainer, float] = {}
        self._watchdog: threading.Thread | None = None
        self._keeper: ImageKeeper | None = None
        # Containers settling after a job are waited for by threads kept for it (a thread started per job
        # delayed each verdict: docs/BENCHMARKS.md, "Costs behind the code"): one more starts only when none is free.
        self._to_settle: queue.SimpleQueue[SandboxContainer | None] = queue.SimpleQueue()
        self._settlers_free = 0

    # -- start-up ------------------------------------------------------------------------------
    def start(self) -> None:
        """Connects to the engine, removes containers a previous run left, and starts warming. If the engine
        or the image cannot be had yet, tries again in the background until it can (or the pool closes)."""
        if not self._connect():
            threading.Thread(target=self._connect_later, name="sandbox-connect", daemon=True).start()
            return
        self._begin()

    def _connect(self) -> bool:
        try:
            if self.client is None:
                from grader.containers.container import docker_client

                self.client = docker_client()
            self.image_id = self.client.images.get(self.sandbox.image).id
            for old in self.client.containers.list(all=True, filters={"label": f"{LABEL}={self.owner}"}):
                _remove_leftover(old)
        except docker.errors.DockerException as exc:
            self.image_id = None
            self.last_error = f"Docker engine or sandbox image unavailable: {exc}"
            log.error(self.last_error)
            return False
        self.last_error = None
        return True

    def _connect_later(self) -> None:
        while True:
            time.sleep(CONNECT_RETRY_S)
            with self._lock:
                if self._closed:
                    return
            if self._connect():
                self._begin()
                return

    def _begin(self) -> None:
        if self.size and self.keep_image and self.sandbox.prewarm:
            # Every page of the image resident in the host's memory before any sandbox starts (prewarm.py).
            self._keeper = keep_image_resident(self.client, self.sandbox, self.owner)
        for _ in range(self.size):
            self._spawn()
        if self.size:
            self._watchdog = threading.Thread(target=self._watch, name="sandbox-watchdog", daemon=True)
            self._watchdog.start()

    def _spawn(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._starting += 1
        threading.Thread(target=self._warm_one, name="sandbox-warm", daemon=True).start()

    def _warm_one(self) -> None:
        delay = 0.5
        while True:
            container = SandboxContainer(self.client, self.sandbox, self.limits, self.owner)  # type: ignore[arg-type]
            try:
                container.start()
            except SandboxLost as exc:
                self.last_error = str(exc)
                log.warning("sandbox start failed, retrying in %.1fs: %s", delay, exc)
                with self._lock:
                    if self._closed:
                        self._starting -= 1
                        return
                time.sleep(delay)
                delay = min(delay * 2, 30)
                continue
            with self._lock:
                self._starting -= 1
                if self._closed:
                    container.remove()
                    return
            self.last_error = None
            self._idle.put(container)
            return

    # -- use -----------------------------------------------------------------------------------
    def acquire(self, timeout: float | None = None, due_in_s: float = 3600.0) -> SandboxContainer:
        """A warm container, due back within due_in_s (after which the watchdog takes it away)."""
        timeout = self.sandbox.acquire_timeout_s if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            try:
                container = self._idle.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                busy = self.last_error or "pool busy"
                raise NoSandboxFree(f"no warm sandbox within {timeout:.0f}s: {busy}") from None
            if container.alive():
                break
            # A container that died while idle fails its health check: replace it, take the next.
            log.warning("sandbox %s died while idle (%r); replacing it", container.name, container.last_words())
            threading.Thread(target=container.remove, daemon=True).start()
            self._spawn()
        with self._lock:
            self._busy += 1
            self._out[container] = time.monotonic() + due_in_s + RETURN_SLACK_S
        return container

    def release(self, container: SandboxContainer, reusable: bool) -> None:
        """Takes a container back: to the idle ones once its runner says it is clean again (waited for
        in the background, so the submission's verdict does not wait for it), or replaced."""
        with self._lock:
            if container not in self._out:
                return  # released twice, or reclaimed by the watchdog, which replaced it already
            closed = self._closed
        if reusable and not closed and container.uses < self.sandbox.reuse and container.settling:
            self._settle_later(container)
            return
        self._take_back(container, reusable)

    def _settle_later(self, container: SandboxContainer) -> None:
        with self._lock:
            free = self._settlers_free > 0
            if free:
                self._settlers_free -= 1  # this one is that settler's
        if free:
            self._to_settle.put(container)
        else:
            threading.Thread(target=self._settler, args=(container,), name="sandbox-settle", daemon=True).start()

    def _settler(self, first: SandboxContainer) -> None:
        container: SandboxContainer | None = first
        while container is not None:
            self._settle(container)
            with self._lock:
                if self._closed:
                    return
                self._settlers_free += 1
            container = self._to_settle.get()  # None: the pool is closing

    def _settle(self, container: SandboxContainer) -> None:
        try:
            clean = container.settle()
        except Exception:  # whatever it sent: not reused
            log.exception("sandbox %s could not settle", container.name)
            clean = False
        if clean and not container.warm_child:
            with self._lock:
                self._cold += 1
        self._take_back(container, clean)

    def _take_back(self, container: SandboxContainer, reusable: bool) -> None:
        with self._lock:
            if self._out.pop(container, None) is None:
                return  # reclaimed by the watchdog meanwhile, which replaced it already
            self._busy -= 1
            closed = self._closed
        if reusable and not closed and container.uses < self.sandbox.reuse:
            self._idle.put(container)
            return
        threading.Thread(target=container.remove, daemon=True).start()
        self._spawn()

    def _watch(self) -> None:
        while True:
            time.sleep(WATCHDOG_INTERVAL_S)
            with self._lock:
                if self._closed:
                    return
            self.reclaim_overdue()

    def reclaim_overdue(self) -> int:
        """Removes every container not back by its deadline and starts a replacement; how many."""
        now = time.monotonic()
        with self._lock:
            overdue = [container for container, due in self._out.items() if due < now]
            for container in overdue:
                del self._out[container]
                self._busy -= 1
        for container in overdue:
            log.error("sandbox %s was not returned in time; removing it and starting another", container.name)
            # Its holder is blocked reading the container: removing it ends that read (SandboxLost).
            threading.Thread(target=container.remove, daemon=True).start()
            self._spawn()
        return len(overdue)

    def engine_ok(self) -> bool:
        """Whether the Docker engine answers: when it does not, a lost sandbox is the judge's fault."""
        if self.client is None:
            return False
        try:
            return bool(self.client.ping())
        except Exception:  # noqa: BLE001 - any failure to answer is an engine that is not there
            return False

    # -- state ---------------------------------------------------------------------------------
    def status(self) -> dict[str, int]:
        now = time.monotonic()
        with self._lock:
            overdue = sum(1 for due in self._out.values() if due < now)
            return {
                "size": self.size,
                "idle": self._idle.qsize(),
                "busy": self._busy,
                "starting": self._starting,
                "overdue": overdue,
                "cold_handbacks": self._cold,
            }

    def idle_names(self) -> list[str]:
        """Names of the warm containers waiting for work (for monitoring and tests)."""
        with self._idle.mutex:
            return [container.name for container in self._idle.queue]

    @property
    def ready(self) -> bool:
        state = self.status()
        return self.image_id is not None and state["idle"] + state["busy"] - state["overdue"] >= self.size

    def close(self) -> None:
        with self._lock:
            self._closed = True
            free, self._settlers_free = self._settlers_free, 0
        for _ in range(free):
            self._to_settle.put(None)
        while True:
            try:
                self._idle.get_nowait().remove()
            except queue.Empty:
                break
        if self._keeper is not None:
            self._keeper.close()
