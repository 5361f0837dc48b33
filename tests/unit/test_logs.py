"""Log lines: one JSON object per line (GRADER_LOG_FORMAT=json) carrying the id of the submission being
graded, whichever module logs; the text format names it too."""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Iterator

import pytest

from grader import logs
from grader.logs import JsonFormatter, SubmissionFilter, TextFormatter, submission_logging


@pytest.fixture
def capture() -> Iterator[tuple[logging.Logger, io.StringIO, logging.StreamHandler[io.StringIO]]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(SubmissionFilter())
    logger = logging.getLogger("tests.logs")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    yield logger, stream, handler
    logger.removeHandler(handler)


def _lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_json_lines_carry_the_submission_being_graded(capture) -> None:  # type: ignore[no-untyped-def]
    logger, stream, handler = capture
    handler.setFormatter(JsonFormatter())
    logger.info("before")
    with submission_logging("abc123"):
        logger.warning("sandbox %s lost", "x", extra={"attempt": 2})
    logger.info("after")
    before, during, after = _lines(stream)
    assert "submission_id" not in before and "submission_id" not in after
    assert during["submission_id"] == "abc123"
    assert during["message"] == "sandbox x lost"
    assert during["level"] == "WARNING"
    assert during["logger"] == "tests.logs"
    assert during["attempt"] == 2
    assert str(during["time"]).endswith("+00:00")


def test_each_thread_logs_its_own_submission(capture) -> None:  # type: ignore[no-untyped-def]
    logger, stream, handler = capture
    handler.setFormatter(JsonFormatter())

    def grade(submission_id: str) -> None:
        with submission_logging(submission_id):
            logger.info("graded")

    threads = [threading.Thread(target=grade, args=(f"s{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(str(line["submission_id"]) for line in _lines(stream)) == ["s0", "s1", "s2", "s3"]


def test_exceptions_and_odd_values_stay_on_one_json_line(capture) -> None:  # type: ignore[no-untyped-def]
    logger, stream, handler = capture
    handler.setFormatter(JsonFormatter())
    try:
        raise RuntimeError("engine down\nsecond line")
    except RuntimeError:
        logger.exception("grading crashed", extra={"thing": object()})
    (line,) = stream.getvalue().splitlines()
    entry = json.loads(line)
    assert "RuntimeError: engine down" in str(entry["exception"])
    assert str(entry["thing"]).startswith("<object object")


def test_text_lines_name_the_submission(capture) -> None:  # type: ignore[no-untyped-def]
    logger, stream, handler = capture
    handler.setFormatter(TextFormatter())
    with submission_logging("abc123"):
        logger.info("graded")
    assert stream.getvalue().rstrip().endswith("graded [submission abc123]")


@pytest.mark.parametrize("formatter", [JsonFormatter, TextFormatter])
def test_a_record_is_bounded_whatever_went_into_it(capture, formatter) -> None:  # type: ignore[no-untyped-def]
    """What a sandbox or a client sent may reach a log line (a key's name in an error, a value in an
    exception's text): the line stays within its bound, with its start and its end."""
    logger, stream, handler = capture
    handler.setFormatter(formatter())
    huge = "start" + "x" * 4_000_000 + "end"
    try:
        raise KeyError(huge)
    except KeyError:
        logger.exception("sandbox said %s", huge, extra={"said": huge}, stack_info=True)
    text = stream.getvalue()
    bound = logs.MAX_MESSAGE_CHARS + 2 * logs.MAX_EXCEPTION_CHARS + logs.MAX_EXTRA_CHARS + 4096
    assert len(text) < bound, len(text)
    assert "sandbox said start" in text and "end" in text and "characters cut" in text
    assert "KeyError" in text
    if formatter is JsonFormatter:
        (line,) = text.splitlines()
        entry = json.loads(line)
        assert str(entry["exception"]).rstrip().endswith("end'")
        assert len(str(entry["said"])) <= logs.MAX_EXTRA_CHARS + 100


def test_short_records_are_left_whole(capture) -> None:  # type: ignore[no-untyped-def]
    logger, stream, handler = capture
    handler.setFormatter(TextFormatter())
    logger.warning("sandbox %s came back unclean: %r", "x", "y" * 1000)
    assert stream.getvalue().rstrip().endswith("y" * 1000 + "'") and "cut" not in stream.getvalue()
