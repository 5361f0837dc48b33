"""The suite is hermetic: an operator's own settings exported in the shell (as the README tells an admin to) change
no test's outcome. A few tests that build settings and run the CLI are run again in a fresh pytest with such
variables set, and must pass as they do without them (tests/conftest.py drops them before any test runs)."""

from __future__ import annotations

import os
import subprocess
import sys

from grader.config import REPO_ROOT

OPERATOR = {
    "GRADER_ADMIN_TOKEN": "an-operators-admin-token-0123456789",
    "GRADER_WEBHOOK_SECRET": "short",  # invalid on purpose: any Settings() built from it fails at once
    "GRADER_WEBHOOK_ALLOWED_HOSTS": "receiver.example",
    "GRADER_API_KEYS": "k-0123456789abcdef:Ada",
    "GRADER_RATE_LIMIT_PER_MINUTE": "1",
    "GRADER_POOL_SIZE": "0",
    "GRADER_QUEUE": "celery",
    "GRADER_URL": "http://127.0.0.1:9",
}
SELECTION = ["tests/unit/test_cli_problems.py", "tests/unit/test_server_config.py", "tests/unit/test_config_groups.py"]


def test_an_operators_grader_variables_change_no_test() -> None:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:xdist", "-p", "no:cacheprovider"]
    env = {**os.environ, **OPERATOR}
    run = subprocess.run(
        [*command, *SELECTION], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and " failed" not in run.stdout, run.stdout[-2000:]
