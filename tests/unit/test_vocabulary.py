"""Every table keyed by a status covers every status: adding a verdict cannot leave a page, a mapping or
the runner's protocol without words for it (docs/architecture.md, "A new verdict")."""

from __future__ import annotations

from pathlib import Path

from grader.containers.protocol import LOAD_OUTCOMES, TEST_OUTCOMES, Outcome
from grader.grading import verdict
from grader.grading.verdict import FINAL, LOAD_TO_STATUS, RUNNER_TO_TEST, TEST_TO_STATUS, Status
from grader.web.report import SUBMISSION_EXPLANATION, SUBMISSION_STATUS, TEST_STATUS


def test_every_submission_status_has_its_words_and_its_explanation() -> None:
    assert set(SUBMISSION_STATUS) == set(Status)
    assert set(SUBMISSION_EXPLANATION) == set(Status)


def test_every_test_status_has_its_words_and_what_it_makes_of_the_submission() -> None:
    assert set(TEST_STATUS) >= set(verdict.TestStatus)  # and "pending", for a test not run yet
    assert set(TEST_TO_STATUS) == set(verdict.TestStatus) - {verdict.TestStatus.PASSED}
    assert set(TEST_TO_STATUS.values()) <= FINAL


def test_every_runner_outcome_has_a_meaning() -> None:
    assert set(RUNNER_TO_TEST) == set(TEST_OUTCOMES) - {Outcome.OK}
    assert set(LOAD_TO_STATUS) == set(LOAD_OUTCOMES) - {Outcome.OK}


def test_final_is_every_status_but_queued_and_running() -> None:
    assert FINAL == set(Status) - {Status.QUEUED, Status.RUNNING}


def test_one_table_holds_every_status_and_every_reader_takes_its_words_from_it() -> None:
    from grader import client, vocabulary
    from grader.problems.check import steps as check_steps

    assert set(vocabulary.SUBMISSION) == set(Status) and set(vocabulary.TEST) == set(verdict.TestStatus)
    for status, words in vocabulary.TEST.items():
        assert SUBMISSION_STATUS.get(status) is None and TEST_STATUS[status] is words  # the page's own row
        assert client.MARKS[status.value] == words.mark and len(words.mark) == 4
        assert check_steps.KIND[status] == words.short
    for status, words in vocabulary.SUBMISSION.items():
        assert SUBMISSION_STATUS[status] is words and SUBMISSION_EXPLANATION[status] == words.explanation
    tones = {"ok", "fail", "limit", "error", "judge", "active", "neutral"}
    rows = [*vocabulary.SUBMISSION.values(), *vocabulary.TEST.values(), *vocabulary.PAGE_ROWS.values()]
    assert {words.tone for words in rows} <= tones
    icons = (Path(__file__).resolve().parents[2] / "grader" / "web" / "templates" / "_macros.html").read_text()
    assert all(f'name == "{words.icon}"' in icons for words in rows), "a status whose icon is not drawn"
