"""Serves the API as `grader serve` does (grader.api.server.build_server), around a service that is never
started: no sandbox, no grading, so requests are answered but submissions stay queued. For tests of the
HTTP layer, in a process of its own so that its memory can be measured. Settings come from GRADER_*
variables; the port is the only argument."""

from __future__ import annotations

import sys

from grader.api.server import build_server
from grader.app import create_app
from grader.components import build
from grader.config import Settings
from grader.logs import configure_logging


def main() -> None:
    settings = Settings()
    configure_logging(settings.logs.format, settings.logs.level)
    service = build(settings)
    service.db.create_all()
    service.watcher.poll()
    build_server(create_app(settings, components=service), settings, host="127.0.0.1", port=int(sys.argv[1])).run()


if __name__ == "__main__":
    main()
