"""Helpers for the scale-out tests: real Redis and PostgreSQL (scripts/ensure-services.sh starts them),
and the service and its Celery workers as real subprocesses that a test can kill -9.

Each test gets a PostgreSQL database of its own and a Celery queue (and Redis key prefix) of its own,
so test runs on one machine never see each other's submissions or messages.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis

from grader.config import REPO_ROOT
from grader.grading.verdict import FINAL, Status
from grader.problems.registry import parse_problem
from grader.storage import crud
from grader.storage.db import Database
from tests.conftest import CASES_DIR, PROBLEMS_DIR

REDIS_URL = "redis://127.0.0.1:6379/0"
PG_ADMIN = "postgresql://torchjudge:torchjudge@127.0.0.1:5432/torchjudge"
GRADER = str(REPO_ROOT / ".venv" / "bin" / "grader")

REFERENCE = parse_problem((PROBLEMS_DIR / "embedding-layer.yaml").read_text(), "embedding-layer.yaml").reference
# Hangs on one test until its time limit: grading lasts a few seconds, long enough to kill a process mid-way.
SLOW = (CASES_DIR / "embedding-layer" / "one-test-hangs" / "solution.py").read_text()
WRONG = (CASES_DIR / "embedding-layer" / "forgot-scaling" / "solution.py").read_text()


def require_servers() -> None:
    """Fails (not skips) with the fix when Redis or PostgreSQL does not answer."""
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
        psycopg.connect(PG_ADMIN, connect_timeout=2).close()
    except (redis.RedisError, psycopg.Error) as exc:
        pytest.fail(f"Redis or PostgreSQL is not running ({exc}); run scripts/ensure-services.sh (make test does)")


@contextmanager
def postgres_database() -> Iterator[str]:
    """A new, empty PostgreSQL database for one test; dropped afterwards. Yields its SQLAlchemy URL."""
    require_servers()
    name = f"torchjudge_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql+psycopg://torchjudge:torchjudge@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def worker_env(database_url: str, queue: str, data_dir: Path, problems_dir: Path, port: int) -> dict[str, str]:
    """The environment of a `grader worker` beside a Celery-mode API in the tests: one warm sandbox."""
    return {
        "GRADER_QUEUE": "celery",
        "GRADER_DATABASE_URL": database_url,
        "GRADER_BROKER_URL": REDIS_URL,
        "GRADER_CELERY_QUEUE": queue,
        "GRADER_DATA_DIR": str(data_dir),
        "GRADER_PROBLEMS_DIR": str(problems_dir),
        "GRADER_POOL_SIZE": "1",
        "GRADER_WORKER_HTTP_PORT": str(port),
    }


def unique_queue() -> str:
    return f"tjtest-{uuid.uuid4().hex[:12]}"


def drop_redis_keys(prefix: str) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class GraderProcess:
    """`grader serve` or `grader worker` in a subprocess of its own (own process group), logging JSON to a file."""

    def __init__(self, args: list[str], env: dict[str, str], log_path: Path) -> None:
        self.args = args
        self.env = {**os.environ, **env, "GRADER_LOG_FORMAT": "json"}
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> GraderProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [GRADER, *self.args], env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        return self

    def kill9(self) -> None:
        """What a crash does: SIGKILL, no clean-up of any kind."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.kill(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def log_entries(self) -> list[dict[str, Any]]:
        entries = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                try:
                    entries.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
        return entries

    def wait_http_ready(self, url: str, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"{self.args} exited early:\n{self.log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise AssertionError(f"{url} not ready within {timeout:.0f} s:\n{self.log_path.read_text()[-3000:]}")


def statuses(database: Database, ids: list[str]) -> dict[str, str]:
    with database.session() as session:
        return {sid: crud.get_submission(session, submission_id=sid).status for sid in ids}  # type: ignore[union-attr]


def wait_all_final(database: Database, ids: list[str], timeout: float = 180) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = statuses(database, ids)
        if all(Status(status) in FINAL for status in seen.values()):
            return seen
        time.sleep(0.2)
    raise AssertionError(f"not all final within {timeout:.0f} s: {statuses(database, ids)}")


def wait_running(database: Database, ids: list[str], timeout: float = 120) -> str:
    """The first of `ids` seen running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for sid, status in statuses(database, ids).items():
            if status == Status.RUNNING:
                return sid
        time.sleep(0.05)
    raise AssertionError(f"none started running within {timeout:.0f} s: {statuses(database, ids)}")


def http_json(method: str, url: str, body: dict[str, Any] | None = None, timeout: float = 90) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")
