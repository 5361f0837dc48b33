"""The verdict vocabulary, one table per vocabulary: every status with its words, tone, icon and meaning, read
by the report page (web/report.py), the command line (client.py), the problem check (problems/check/steps.py)
and the verdict's arithmetic (grading/verdict.py). A new status is one member and one row here; the tests in
tests/unit/test_vocabulary.py refuse a member without its row. Stdlib only (the CLI imports it too).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sandbox.runner.protocol import Outcome


class Status(StrEnum):
    """A submission's status (DESIGN.md, "Verdicts")."""

    QUEUED = "queued"
    RUNNING = "running"
    ACCEPTED = "accepted"
    WRONG_ANSWER = "wrong_answer"
    RUNTIME_ERROR = "runtime_error"
    TIME_LIMIT_EXCEEDED = "time_limit_exceeded"
    MEMORY_LIMIT_EXCEEDED = "memory_limit_exceeded"
    OUTPUT_LIMIT_EXCEEDED = "output_limit_exceeded"
    COMPILE_ERROR = "compile_error"
    INTERNAL_ERROR = "internal_error"


class TestStatus(StrEnum):
    """One test's status."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    TIMEOUT = "timeout"
    MEMORY = "memory"
    OUTPUT = "output"
    SKIPPED = "skipped"


# Rows of the report page that are not a test's status: not finished yet, a hidden test whose status the
# viewer may not see, the hidden tests' one row when not all of them passed.
PENDING = "pending"
NOT_SHOWN = "not-shown"
SOME_FAILED = "some-failed"


@dataclass(frozen=True)
class Words:
    label: str  # the status in words, as the page shows it
    tone: str  # ok | fail | limit | error | judge | active | neutral: a CSS class, never the only signal
    icon: str  # a name in web/templates/_macros.html (icon)


@dataclass(frozen=True)
class SubmissionWords(Words):
    explanation: str  # one sentence under the banner: what the status means for the person who submitted
    load: Outcome | None = None  # the runner's word for a load that ends the submission with this status


@dataclass(frozen=True)
class TestWords(Words):
    mark: str  # four characters on the command line
    short: str  # the problem check's word, in a sentence ("first fails test 3 with time limit")
    makes: Status  # what it makes of the submission when it is the first test that did not pass
    runner: Outcome | None = None  # the runner's word for a test that ends with this status (None: judged here)


SUBMISSION: dict[Status, SubmissionWords] = {
    Status.QUEUED: SubmissionWords(
        "Queued", "neutral", "clock", "Waiting for a free sandbox. This page updates by itself."
    ),
    Status.RUNNING: SubmissionWords(
        "Running", "active", "spinner", "Your code is being tested. Results appear here as each test finishes."
    ),
    Status.ACCEPTED: SubmissionWords("Accepted", "ok", "check", "Every test passed."),
    Status.WRONG_ANSWER: SubmissionWords(
        "Wrong answer", "fail", "cross", "Your code ran, but at least one output differs from the reference."
    ),
    Status.RUNTIME_ERROR: SubmissionWords(
        "Runtime error", "error", "bolt", "Your code raised an exception or crashed.", load=Outcome.ERROR
    ),
    Status.TIME_LIMIT_EXCEEDED: SubmissionWords(
        "Time limit exceeded",
        "limit",
        "clock",
        "At least one test ran past its time limit, or (a speed-graded problem) the code, correct, was not fast "
        "enough against its baseline.",
        load=Outcome.TIMEOUT,
    ),
    Status.MEMORY_LIMIT_EXCEEDED: SubmissionWords(
        "Memory limit exceeded",
        "limit",
        "gauge",
        "At least one test used more memory than allowed.",
        load=Outcome.MEMORY,
    ),
    Status.OUTPUT_LIMIT_EXCEEDED: SubmissionWords(
        "Output limit exceeded",
        "limit",
        "gauge",
        "At least one test returned or printed more than allowed.",
        load=Outcome.OUTPUT,
    ),
    Status.COMPILE_ERROR: SubmissionWords(
        "Compile error", "error", "code", "Your code did not load, so no test ran.", load=Outcome.COMPILE_ERROR
    ),
    Status.INTERNAL_ERROR: SubmissionWords(
        "Internal error", "judge", "warning", "The judge failed, not your code. Please submit again in a moment."
    ),
}

TEST: dict[TestStatus, TestWords] = {
    TestStatus.PASSED: TestWords("Passed", "ok", "check", "ok  ", "passed", Status.ACCEPTED),
    TestStatus.FAILED: TestWords("Wrong answer", "fail", "cross", "FAIL", "wrong answer", Status.WRONG_ANSWER),
    TestStatus.ERROR: TestWords("Error", "error", "bolt", "ERR ", "error", Status.RUNTIME_ERROR, Outcome.ERROR),
    TestStatus.TIMEOUT: TestWords(
        "Timed out", "limit", "clock", "TIME", "time limit", Status.TIME_LIMIT_EXCEEDED, Outcome.TIMEOUT
    ),
    TestStatus.MEMORY: TestWords(
        "Out of memory", "limit", "gauge", "MEM ", "memory limit", Status.MEMORY_LIMIT_EXCEEDED, Outcome.MEMORY
    ),
    TestStatus.OUTPUT: TestWords(
        "Too much output", "limit", "gauge", "OUT ", "output limit", Status.OUTPUT_LIMIT_EXCEEDED, Outcome.OUTPUT
    ),
    # A test is skipped only after one timed out: the submission's status is that test's, so a skipped test is
    # never the first that did not pass unless the judge went wrong.
    TestStatus.SKIPPED: TestWords(
        "Skipped", "neutral", "dash", "skip", "skipped", Status.INTERNAL_ERROR, Outcome.SKIPPED
    ),
}

PAGE_ROWS: dict[str, Words] = {
    PENDING: Words("Waiting", "neutral", "dots"),
    NOT_SHOWN: Words("Not shown", "neutral", "eye-off"),
    SOME_FAILED: Words("Not all passed", "fail", "cross"),
}

FINAL = frozenset(Status) - {Status.QUEUED, Status.RUNNING}
# Derived from the tables above, for the verdict's arithmetic (grading/verdict.py).
TEST_TO_STATUS = {status: words.makes for status, words in TEST.items() if status is not TestStatus.PASSED}
RUNNER_TO_TEST = {words.runner: status for status, words in TEST.items() if words.runner is not None}
LOAD_TO_STATUS = {words.load: status for status, words in SUBMISSION.items() if words.load is not None}
