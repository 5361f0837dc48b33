"""A real uvicorn server in a subprocess (tests/http/serve.py), reached through raw sockets: chunked
bodies, half-sent headers and trickling bodies are things a TestClient cannot send."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader.config import REPO_ROOT

ADMIN_TOKEN = "http-test-admin-token-0123456789"
# Short enough for quick tests, long enough for a loaded machine to send a request in time.
HEADER_TIMEOUT_S = 1.0
BODY_TIMEOUT_S = 3.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    def connect(self, timeout: float = 30.0) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)

    def status(self, field: str) -> int:
        """A `kB` field of /proc/<pid>/status (VmRSS, VmHWM), in bytes."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
        raise AssertionError(f"no {field} in /proc/{self.process.pid}/status")


@contextmanager
def serving(data: Path, **settings: str) -> Iterator[Server]:
    """A server on a free port, with the suite's settings and `settings` (GRADER_* names without the
    prefix, in lower case) on top; stopped on exit."""
    port = free_port()
    env = {
        **os.environ,
        # The worktree's grader, whatever the virtualenv's editable install points at.
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
        "GRADER_DATA_DIR": str(data),
        "GRADER_PROBLEMS_DIR": str(REPO_ROOT / "problems"),
        "GRADER_PROBLEMS_POLL_S": "0",
        "GRADER_LOG_LEVEL": "WARNING",
        "GRADER_ADMIN_TOKEN": ADMIN_TOKEN,
        "GRADER_HEADER_TIMEOUT_S": str(HEADER_TIMEOUT_S),
        "GRADER_BODY_TIMEOUT_S": str(BODY_TIMEOUT_S),
        **{f"GRADER_{name.upper()}": value for name, value in settings.items()},
    }
    log = data / "server.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.http.serve", str(port)], cwd=REPO_ROOT, env=env, stdout=output, stderr=output
        )
    server = Server(port, process, log)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                server.connect(timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the server did not start:\n{log.read_text()}") from None
                time.sleep(0.1)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("http-data")) as running:
        yield running
