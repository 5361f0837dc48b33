"""Logging: plain text for people, or one JSON object per line for a log pipeline (GRADER_LOG_FORMAT=json).

Every record made while a submission is graded carries its id (`submission_id`), whichever module logs
it: Processor.process (submissions/processing.py) sets a context variable for the duration, and a filter
copies it onto records.
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

# Every record is bounded, whatever went into it: a message or an exception may carry what a sandbox or
# a client sent (a key's name, a value in an error's text), and the log is a file on some host's disk.
# Beyond these, the start and the end are kept (the end of a traceback names the exception).
MAX_MESSAGE_CHARS = 8 * 1024
MAX_EXCEPTION_CHARS = 16 * 1024
MAX_EXTRA_CHARS = 1024

# What every LogRecord has; anything else on a record came in through `extra=` and is worth printing.
_STANDARD_ATTRIBUTES = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "submission_id",
    "taskName",
}


def bounded(text: str, limit: int) -> str:
    """text, or its first and last limit/2 characters around a note of how many were cut."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]} [... {len(text) - 2 * half} characters cut ...] {text[-half:]}"


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
            "message": bounded(record.getMessage(), MAX_MESSAGE_CHARS),
        }
        submission_id = getattr(record, "submission_id", None)
        if submission_id is not None:
            entry["submission_id"] = submission_id
        entry["process"] = record.process
        entry["thread"] = record.threadName
        for key, value in record.__dict__.items():
            if key not in _STANDARD_ATTRIBUTES and not key.startswith("_"):
                entry[key] = (
                    value if isinstance(value, int | float | bool | None) else bounded(str(value), MAX_EXTRA_CHARS)
                )
        if record.exc_info:
            entry["exception"] = bounded(self.formatException(record.exc_info), MAX_EXCEPTION_CHARS)
        if record.stack_info:
            entry["stack"] = bounded(self.formatStack(record.stack_info), MAX_EXCEPTION_CHARS)
        # default=str: a stray object in `extra=` must not cost the log line.
        return json.dumps(entry, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        record.message = bounded(record.message, MAX_MESSAGE_CHARS)
        return super().formatMessage(record)

    def formatException(self, ei) -> str:  # type: ignore[no-untyped-def]  # noqa: N802 - logging's name
        return bounded(super().formatException(ei), MAX_EXCEPTION_CHARS)

    def formatStack(self, stack_info: str) -> str:  # noqa: N802 - logging's name
        return bounded(super().formatStack(stack_info), MAX_EXCEPTION_CHARS)

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
