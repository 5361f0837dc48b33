"""A pool of warm sandbox containers: grading takes one that already has torch loaded.

Containers are started in the background at start-up and replaced in the background: after a
configured number of jobs, after any anomaly, and when one fails. Nothing on the grading path waits
for a container start while the pool is sized for the load.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import weakref

import docker

from grader.config import Settings
from grader.sandbox.container import LABEL, SandboxContainer, SandboxLost, owner_label
from grader.sandbox.prewarm import ImageKeeper, keep_image_resident

log = logging.getLogger(__name__)


class SandboxPool:
    def __init__(self, settings: Settings, client: docker.DockerClient | None = None, size: int | None = None) -> None:
        self.settings = settings
        self.client = client
        # size=0: no warm containers, only the engine for fresh() (a Celery-mode API checking uploads).
        self.size = settings.pool_size if size is None else size
        self._idle: queue.Queue[SandboxContainer] = queue.Queue()
        self._lock = threading.Lock()
        self._starting = 0
        self._busy = 0
        self._closed = False
        self.last_error: str | None = None
        self.image_id: str | None = None
        # Containers handed out by fresh(): their users remove them, but a process stopping meanwhile
        # (its daemon threads just end) would leave them running; close() removes what is left.
        self._fresh: weakref.WeakSet[SandboxContainer] = weakref.WeakSet()
        self._keeper: ImageKeeper | None = None

    # -- start-up ------------------------------------------------------------------------------
    def start(self) -> None:
        """Connects to the engine, removes containers a previous run left, and starts warming."""
        try:
            if self.client is None:
                from grader.sandbox.container import docker_client

                self.client = docker_client()
            self.image_id = self.client.images.get(self.settings.sandbox_image).id
            for old in self.client.containers.list(
                all=True, filters={"label": f"{LABEL}={owner_label(self.settings)}"}
            ):
                old.remove(force=True)
        except docker.errors.DockerException as exc:
            self.last_error = f"Docker engine or sandbox image unavailable: {exc}"
            log.error(self.last_error)
            return
        if self.size and self.settings.sandbox_prewarm:
            # Every page of the image resident in the host's memory before any sandbox starts (prewarm.py).
            self._keeper = keep_image_resident(self.client, self.settings)
        for _ in range(self.size):
            self._spawn()

    def _spawn(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._starting += 1
        threading.Thread(target=self._warm_one, name="sandbox-warm", daemon=True).start()

    def _warm_one(self) -> None:
        delay = 0.5
        while True:
            container = SandboxContainer(self.client, self.settings)  # type: ignore[arg-type]
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
    def acquire(self, timeout: float | None = None) -> SandboxContainer:
        timeout = self.settings.sandbox_acquire_timeout_s if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            try:
                container = self._idle.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise SandboxLost(f"no warm sandbox within {timeout:.0f}s: {self.last_error or 'pool busy'}") from None
            if container.alive():
                break
            # A container that died while idle fails its health check: replace it, take the next.
            log.warning("sandbox %s died while idle; replacing it", container.name)
            threading.Thread(target=container.remove, daemon=True).start()
            self._spawn()
        with self._lock:
            self._busy += 1
        return container

    def release(self, container: SandboxContainer, reusable: bool) -> None:
        with self._lock:
            self._busy -= 1
            closed = self._closed
        if reusable and not closed and container.uses < self.settings.sandbox_reuse:
            self._idle.put(container)
            return
        threading.Thread(target=container.remove, daemon=True).start()
        self._spawn()

    def fresh(self) -> SandboxContainer:
        """A container outside the pool, for work that must not share one (reference runs)."""
        if self.client is None or self.image_id is None:
            raise SandboxLost(self.last_error or "the sandbox engine is not available")
        container = SandboxContainer(self.client, self.settings)  # type: ignore[arg-type]
        self._fresh.add(container)
        container.start()
        return container

    # -- state ---------------------------------------------------------------------------------
    def status(self) -> dict[str, int]:
        with self._lock:
            return {"size": self.size, "idle": self._idle.qsize(), "busy": self._busy, "starting": self._starting}

    def idle_names(self) -> list[str]:
        """Names of the warm containers waiting for work (for monitoring and tests)."""
        with self._idle.mutex:
            return [container.name for container in self._idle.queue]

    @property
    def ready(self) -> bool:
        state = self.status()
        return self.image_id is not None and state["idle"] + state["busy"] >= self.size

    def close(self) -> None:
        with self._lock:
            self._closed = True
        while True:
            try:
                self._idle.get_nowait().remove()
            except queue.Empty:
                break
        for container in list(self._fresh):
            container.remove()
        if self._keeper is not None:
            self._keeper.close()
