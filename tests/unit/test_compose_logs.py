"""docker-compose.yml: no container of the stack keeps an unbounded log on the host's disk.

The engine's default log driver (json-file, no rotation) keeps every line a container writes until the
container is removed: the service's log lines and the proxy's access log grow with every request.
"""

from __future__ import annotations

from typing import Any

import yaml

from grader.config import REPO_ROOT


def _services() -> dict[str, dict[str, Any]]:
    compose = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
    return compose["services"]  # type: ignore[no-any-return]


def _megabytes(size: str) -> float:
    units = {"k": 1 / 1024, "m": 1.0, "g": 1024.0}
    return float(size[:-1]) * units[size[-1].lower()] if size[-1].lower() in units else float(size) / 1024**2


def test_every_service_logs_to_a_rotated_bounded_file() -> None:
    services = _services()
    assert {"api", "worker", "proxy", "redis", "postgres"} <= set(services)
    for name, service in services.items():
        logging = service.get("logging")
        assert logging is not None, f"{name}: no log configuration (json-file without rotation)"
        driver = logging.get("driver", "json-file")
        if driver == "none":
            continue
        assert driver in ("json-file", "local"), f"{name}: log driver {driver}"
        options = logging.get("options") or {}
        total = _megabytes(str(options["max-size"])) * int(options.get("max-file", 1))
        assert total <= 100, f"{name}: up to {total:.0f} MB of logs per container"
