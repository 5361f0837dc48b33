"""Fresh containers, one per use: for work that must not share a container with anything else (the
reference's runs), and for the command line, where no pool runs. Every container handed out is
removed when it comes back, and by close() at the latest."""

from __future__ import annotations

import threading
import weakref

import docker

from grader.config import Settings
from grader.sandboxes.container import SandboxContainer, SandboxLost, docker_client


class FreshSandboxes:
    def __init__(self, settings: Settings, client: docker.DockerClient | None = None) -> None:
        self.settings = settings
        self._client = client
        self._image_id: str | None = None
        self._lock = threading.Lock()
        self._out: weakref.WeakSet[SandboxContainer] = weakref.WeakSet()

    def _engine(self) -> docker.DockerClient:
        with self._lock:
            if self._client is None or self._image_id is None:
                try:
                    self._client = self._client or docker_client()
                    self._image_id = self._client.images.get(self.settings.sandbox_image).id
                except docker.errors.DockerException as exc:
                    raise SandboxLost(
                        f"Docker engine or sandbox image {self.settings.sandbox_image!r} unavailable: {exc}"
                    ) from exc
            return self._client

    @property
    def image_id(self) -> str | None:
        try:
            self._engine()
        except SandboxLost:
            return None
        return self._image_id

    def acquire(self, timeout: float | None = None, due_in_s: float = 3600.0) -> SandboxContainer:
        container = SandboxContainer(self._engine(), self.settings)
        self._out.add(container)
        container.start()
        return container

    def release(self, container: SandboxContainer, reusable: bool) -> None:
        container.remove()

    def engine_ok(self) -> bool:
        try:
            return bool(self._engine().ping())
        except Exception:  # noqa: BLE001 - any failure to answer is an engine that is not there
            return False

    def close(self) -> None:
        for container in list(self._out):
            container.remove()
