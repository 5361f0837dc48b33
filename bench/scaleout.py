"""Celery mode for bench.py: a PostgreSQL database of its own, a Redis queue of its own, and `grader worker`
processes (each with its own warm pool) beside the API that bench.py starts (scripts/ensure-services.sh starts
both servers; `make bench` runs it)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

from common import free_port

ROOT = Path(__file__).resolve().parent.parent
GRADER = str(ROOT / ".venv" / "bin" / "grader")
REDIS_URL = "redis://127.0.0.1:6379/0"
PG = "postgresql://torchjudge:torchjudge@127.0.0.1:5432"


@contextlib.contextmanager
def celery_settings() -> Iterator[dict[str, str]]:
    """The settings that make a service and its workers Celery mode, on a database and a queue made for the
    run (dropped after it)."""
    import psycopg

    run = uuid.uuid4().hex[:10]
    database = f"torchjudge_bench_{run}"
    with psycopg.connect(f"{PG}/torchjudge", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
    try:
        yield {
            "GRADER_QUEUE": "celery",
            "GRADER_DATABASE_URL": f"{PG}/{database}",
            "GRADER_BROKER_URL": REDIS_URL,
            "GRADER_CELERY_QUEUE": f"tjbench-{run}",
            "GRADER_LOG_LEVEL": "WARNING",
        }
    finally:
        with psycopg.connect(f"{PG}/torchjudge", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


@contextlib.contextmanager
def workers(env: dict[str, str], count: int) -> Iterator[None]:
    """`count` workers (`grader worker`), each with one warm sandbox, ready when this yields."""
    started: list[tuple[subprocess.Popen[bytes], int]] = []
    try:
        for number in range(count):
            port = free_port()
            worker_env = {**env, "GRADER_POOL_SIZE": "1", "GRADER_WORKER_HTTP_PORT": str(port)}
            process = subprocess.Popen(
                [GRADER, "worker", "--name", f"bench-{number + 1}"],
                env=worker_env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            started.append((process, port))
        for process, port in started:
            _wait_ready(process, f"http://127.0.0.1:{port}/healthz")
        yield
    finally:
        for process, _ in started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process, _ in started:
            try:
                process.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)


def _wait_ready(process: subprocess.Popen[bytes], url: str, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"a worker exited before it was ready ({process.args})")
        with contextlib.suppress(urllib.error.URLError, OSError):
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        time.sleep(0.2)
    raise SystemExit(f"a worker was not ready within {timeout_s:.0f} s")
