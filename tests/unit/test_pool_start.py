"""The pool's start-up against an engine that misbehaves (the engine is the true edge faked here): a
leftover whose removal is already under way, an image that appears only later."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import docker
import pytest

from grader.config import Settings
from grader.containers import pool as pool_module
from grader.containers.container import owner_label
from grader.containers.pool import SandboxPool


class Leftover:
    def __init__(self, error: Exception | None) -> None:
        self.error = error
        self.removed = False

    def remove(self, force: bool = False) -> None:
        if self.error is not None:
            raise self.error
        self.removed = True


def conflict() -> docker.errors.APIError:
    response = SimpleNamespace(status_code=409, reason="Conflict", url="http://docker/containers/x")
    return docker.errors.APIError("removal of container x is already in progress", response=response)


class Engine:
    def __init__(self, leftovers: list[Leftover], image_after: int = 0) -> None:
        self.leftovers = leftovers
        self.image_asks = 0
        self.image_after = image_after
        self.containers = SimpleNamespace(list=lambda **_: list(self.leftovers))
        self.images = SimpleNamespace(get=self._image)

    def _image(self, name: str) -> SimpleNamespace:
        self.image_asks += 1
        if self.image_asks <= self.image_after:
            raise docker.errors.ImageNotFound(f"no such image: {name}")
        return SimpleNamespace(id="sha256:feed")


def pool_of(tmp_path: Path, engine: Engine) -> SandboxPool:
    settings = Settings(data_dir=tmp_path)
    return SandboxPool(settings.sandbox, settings.limits, owner=owner_label(tmp_path), client=engine, size=0)  # type: ignore[arg-type]


def test_leftovers_already_being_removed_do_not_stop_the_start(tmp_path: Path) -> None:
    gone = docker.errors.NotFound("no such container")
    leftovers = [Leftover(conflict()), Leftover(gone), Leftover(None)]
    pool = pool_of(tmp_path, Engine(leftovers))
    pool.start()
    assert pool.image_id == "sha256:feed" and pool.last_error is None
    assert leftovers[2].removed
    pool.close()


def test_another_engine_error_on_a_leftover_is_reported(tmp_path: Path) -> None:
    response = SimpleNamespace(status_code=500, reason="Server Error", url="http://docker/containers/x")
    broken = Leftover(docker.errors.APIError("driver failed", response=response))
    pool = pool_of(tmp_path, Engine([broken]))
    pool.start()
    assert pool.image_id is None
    assert "500 Server Error" in (pool.last_error or "")
    pool.close()


def test_an_engine_that_is_not_ready_at_start_is_tried_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool_module, "CONNECT_RETRY_S", 0.05)
    engine = Engine([], image_after=2)
    pool = pool_of(tmp_path, engine)
    pool.start()
    assert pool.image_id is None and "no such image" in (pool.last_error or "")
    deadline = time.monotonic() + 5
    while pool.image_id is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert pool.image_id == "sha256:feed" and pool.last_error is None
    assert engine.image_asks == 3
    pool.close()
