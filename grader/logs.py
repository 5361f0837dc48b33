"""Logging: plain text for people, or one JSON object per line for a log pipeline (GRADER_LOG_FORMAT=json).

Every record made while a submission is graded carries its id (`submission_id`), whichever module logs
it: Service.process sets a context variable for the duration, and a filter copies it onto records.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

current_submission: ContextVar[str | None] = ContextVar("current_submission", default=None)

# What every LogRecord has; anything else on a record came in through `extra=` and is worth printing.
_STANDARD_ATTRIBUTES = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "submission_id",
    "taskName",
}


@contextmanager
def submission_logging(submission_id: str) -> Iterator[None]:
    token = current_submission.set(submission_id)
    try:
        yield
    finally:
        current_submission.reset(token)


class SubmissionFilter(logging.Filter):
    """Puts the id of the submission being graded (if any) on each record, unless `extra=` set one."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "submission_id", None) is None:
            record.submission_id = current_submission.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC, ISO 8601), level, logger, message, submission_id when known,
    the exception when there is one, and whatever `extra=` added."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        submission_id = getattr(record, "submission_id", None)
        if submission_id is not None:
            entry["submission_id"] = submission_id
        entry["process"] = record.process
        entry["thread"] = record.threadName
        for key, value in record.__dict__.items():
            if key not in _STANDARD_ATTRIBUTES and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        # default=str: a stray object in `extra=` must not cost the log line.
        return json.dumps(entry, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        submission_id = getattr(record, "submission_id", None)
        if submission_id is None:
            return text
        first, newline, rest = text.partition("\n")
        return f"{first} [submission {submission_id}]{newline}{rest}"


def configure_logging(log_format: str = "text", level: str = "INFO") -> None:
    """Replaces the root logger's handlers with one on stderr in the chosen format; uvicorn's and
    Celery's loggers propagate to it, so everything comes out in one format."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    handler.addFilter(SubmissionFilter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "celery"):
        named = logging.getLogger(name)
        named.handlers.clear()
        named.propagate = True
