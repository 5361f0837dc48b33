"""How `grader serve` configures uvicorn: the bounded h11 protocol, the connection limit and the header
buffer, from settings that are checked at start-up. The bounds at work: tests/http/test_slow_requests.py."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pydantic import ValidationError

from grader import cli, logs
from grader.api import server as server_module
from grader.api.deadlines import BoundedH11Protocol
from grader.api.server import MAX_HEADER_BYTES, build_server
from grader.config import Settings


async def app(scope: Any, receive: Any, send: Any) -> None:  # never called
    raise AssertionError


def test_the_server_uses_the_bounded_protocol_and_the_limits_from_settings() -> None:
    settings = Settings(header_timeout_s=2.5, body_timeout_s=7, max_connections=50, max_waiters=10, max_streams=10)
    config = build_server(app, settings, host="127.0.0.1", port=8123).config
    assert isinstance(config.http, type) and issubclass(config.http, BoundedH11Protocol)
    assert (config.http.header_timeout_s, config.http.body_timeout_s) == (2.5, 7)
    assert config.limit_concurrency == 50
    assert config.h11_max_incomplete_event_size == MAX_HEADER_BYTES
    assert (config.host, config.port) == ("127.0.0.1", 8123)


def test_the_defaults() -> None:
    settings = Settings()
    assert (settings.http.header_timeout_s, settings.http.body_timeout_s, settings.http.max_connections) == (
        5,
        30,
        1000,
    )


@pytest.mark.parametrize(
    "field",
    [
        {"header_timeout_s": 0},
        {"header_timeout_s": -1},
        {"header_timeout_s": 301},
        {"body_timeout_s": 0},
        {"max_connections": 0},
    ],
    ids=str,
)
def test_bad_values_stop_start_up(field: dict[str, float]) -> None:
    with pytest.raises(ValidationError):
        Settings(**field)  # type: ignore[arg-type]


def test_grader_serve_runs_the_server_build_server_makes(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[Any] = []
    real = server_module.build_server

    def spy(app: Any, settings: Settings, **kwargs: Any) -> Any:
        server = real(app, settings, **kwargs)
        monkeypatch.setattr(server, "run", lambda: setattr(server, "started", True))
        built.append(server)
        return server

    monkeypatch.setattr(server_module, "build_server", spy)
    monkeypatch.setattr(logs, "configure_logging", lambda *args: None)  # leave this process's logging alone
    monkeypatch.setattr(logging, "basicConfig", lambda **kwargs: None)
    assert cli.main(["serve", "--port", "8124"]) == 0
    [server] = built
    assert server.config.port == 8124
    assert issubclass(server.config.http, BoundedH11Protocol)


def test_under_gvisor_the_pool_holds_twice_as_many_warm_containers_unless_it_is_set(monkeypatch) -> None:
    monkeypatch.delenv("GRADER_POOL_SIZE", raising=False)
    monkeypatch.delenv("GRADER_SANDBOX_RUNTIME", raising=False)
    cores = Settings().sandbox.pool_size
    assert Settings(sandbox_runtime="runsc").sandbox.pool_size == min(64, 2 * cores)
    assert Settings(sandbox_runtime="runsc", pool_size=3).sandbox.pool_size == 3
    monkeypatch.setenv("GRADER_SANDBOX_RUNTIME", "runsc")
    monkeypatch.setenv("GRADER_POOL_SIZE", "1")
    assert Settings().sandbox.pool_size == 1
    monkeypatch.delenv("GRADER_POOL_SIZE")
    assert Settings().sandbox.pool_size == min(64, 2 * cores)
