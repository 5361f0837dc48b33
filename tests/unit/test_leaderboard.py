"""A speed-graded problem's leaderboard, through the API and its page, with a real SQLite database: each entrant's
best accepted speed-up, never lowered; ties to the earlier submission; the admin clears an entry; who is on it
(an API key vouches for a name, an owner token does not, a submission of nobody in particular is not on it); what
anyone sees of it (escaped names, no submission ids but the admin's).

The service is real but not started: no sandbox runs. Each submission is POSTed through the API and graded by
submissions/processing.py with a stand-in for the Grader (tests/speed_results.py), so it is taken, stored and
entered on the board as a worker does it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete

from grader.app import create_app
from grader.components import Components
from grader.grading.speed_stats import TIMING_VERSION
from grader.storage.db import LeaderboardEntry
from tests.speed_results import (
    PLAIN_PROBLEM,
    SPEED_PROBLEM,
    grade,
    graderless_service,
    speed_result,
    submit,
    submit_and_grade,
    verdict_with,
)

ADMIN = "leaderboard-admin-token-0123456789"
ADMIN_HEADERS = {"Authorization": f"Bearer {ADMIN}"}
KEYS = ("course-key-one-0123456789", "course-key-two-0123456789")
BOARD = f"/api/problems/{SPEED_PROBLEM}/leaderboard"
PAGE = f"/problems/{SPEED_PROBLEM}/leaderboard"


@pytest.fixture(scope="module")
def open_service(tmp_path_factory: pytest.TempPathFactory) -> Components:
    """No API keys (submitters are told apart by their owner tokens); an admin token."""
    return graderless_service(tmp_path_factory.mktemp("open"), admin_token=ADMIN)


@pytest.fixture(scope="module")
def keyed_service(tmp_path_factory: pytest.TempPathFactory) -> Components:
    """API keys; no admin token (the admin API is off)."""
    return graderless_service(tmp_path_factory.mktemp("keyed"), api_keys=",".join(KEYS))


@pytest.fixture(scope="module")
def http(open_service: Components) -> Iterator[TestClient]:
    with TestClient(create_app(open_service.settings, components=open_service)) as client:
        yield client


@pytest.fixture(scope="module")
def keyed_http(keyed_service: Components) -> Iterator[TestClient]:
    with TestClient(create_app(keyed_service.settings, components=keyed_service)) as client:
        yield client


@pytest.fixture(autouse=True)
def empty_boards(open_service: Components, keyed_service: Components) -> None:
    for service in (open_service, keyed_service):
        with service.db.session() as session:
            session.execute(delete(LeaderboardEntry))
            session.commit()


def owner(name: str) -> dict[str, str]:
    """The X-Owner-Token of one browser (or CLI) of its own."""
    return {"X-Owner-Token": f"browser-of-{name}-0123456789"}


def key(number: int) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEYS[number]}"}


def enter(service: Components, http: TestClient, speedup: float, who: dict[str, str], name: str | None) -> str:
    return submit_and_grade(service, http, verdict_with(service, speed_result(speedup)), headers=who, name=name)


def board(http: TestClient, headers: dict[str, str] | None = None) -> dict[str, Any]:
    response = http.get(BOARD, headers=headers or {})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def shown(http: TestClient, headers: dict[str, str] | None = None) -> list[tuple[int, str, float]]:
    return [(entry["rank"], entry["name"], entry["speedup"]) for entry in board(http, headers)["entries"]]


# -- the rules ------------------------------------------------------------------------------------------------
def test_each_entrant_keeps_its_best_accepted_speedup_and_a_slower_one_never_lowers_it(
    open_service: Components, http: TestClient
) -> None:
    enter(open_service, http, 8.0, owner("ann"), "Ann")
    best = enter(open_service, http, 12.0, owner("ann"), "Ann")
    enter(open_service, http, 9.0, owner("ann"), "Ann")  # slower: the entry stays at 12x
    enter(open_service, http, 6.0, owner("bob"), "Bob")
    enter(open_service, http, 3.0, owner("carol"), "Carol")  # correct but under the threshold: not accepted
    assert shown(http) == [(1, "Ann", 12.0), (2, "Bob", 6.0)]
    entries = board(http, ADMIN_HEADERS)["entries"]
    assert entries[0]["submission_id"] == best, "the entry is the best submission's, not the latest"
    status = http.get(f"/api/submissions/{entries[0]['submission_id']}").json()["status"]
    assert status == "accepted"


def test_a_submission_that_is_not_accepted_or_not_timed_is_not_entered(
    open_service: Components, http: TestClient
) -> None:
    too_slow = verdict_with(open_service, speed_result(20.0, threshold=50.0))
    assert too_slow.status.value == "time_limit_exceeded"
    submit_and_grade(open_service, http, too_slow, headers=owner("dan"), name="Dan")
    wrong = verdict_with(open_service, speed_result(20.0)).model_copy(update={"status": "wrong_answer"})
    submit_and_grade(open_service, http, wrong, headers=owner("dan"), name="Dan")
    untimed = verdict_with(open_service, None)  # accepted, but no timing
    submit_and_grade(open_service, http, untimed, headers=owner("dan"), name="Dan")
    assert shown(http) == []


def test_equal_speedups_rank_the_earlier_submission_first(open_service: Components, http: TestClient) -> None:
    earlier = submit(http, headers=owner("dave"), name="Dave")
    later = submit(http, headers=owner("erin"), name="Erin")
    # The later submission is graded first: the rank follows when each was submitted, not graded.
    grade(open_service, later, verdict_with(open_service, speed_result(10.0)))
    grade(open_service, earlier, verdict_with(open_service, speed_result(10.0)))
    entries = board(http)["entries"]
    assert [(entry["rank"], entry["name"]) for entry in entries] == [(1, "Dave"), (2, "Erin")]
    assert entries[0]["submitted_at"] < entries[1]["submitted_at"]
    # Erin matching her own speed-up later changes nothing: her entry keeps its earlier time.
    enter(open_service, http, 10.0, owner("erin"), "Erin")
    assert board(http)["entries"][1]["submitted_at"] == entries[1]["submitted_at"]
    # A faster one moves her up.
    enter(open_service, http, 10.5, owner("erin"), "Erin")
    assert shown(http) == [(1, "Erin", 10.5), (2, "Dave", 10.0)]


# -- the admin clears an entry ----------------------------------------------------------------------------------
def test_the_admin_clears_an_entry_and_the_entrant_may_enter_again(open_service: Components, http: TestClient) -> None:
    enter(open_service, http, 30.0, owner("fay"), "Fay")
    enter(open_service, http, 7.0, owner("gus"), "Gus")
    entrant = board(http)["entries"][0]["entrant"]
    path = f"{BOARD}/{entrant}"
    for headers in ({}, {"Authorization": f"Bearer {ADMIN}x"}, {"Authorization": ADMIN}, owner("fay")):
        refused = http.delete(path, headers=headers)
        assert refused.status_code == 401, refused.text
        assert refused.headers["www-authenticate"] == "Bearer"
    assert shown(http) == [(1, "Fay", 30.0), (2, "Gus", 7.0)], "a refused clear changes nothing"
    assert http.delete(path, headers=ADMIN_HEADERS).status_code == 204
    assert shown(http) == [(1, "Gus", 7.0)]
    again = http.delete(path, headers=ADMIN_HEADERS)
    assert again.status_code == 404 and "no entry" in again.json()["detail"]
    # Cleared, the entrant's next accepted submission enters, however slow next to the cleared one.
    enter(open_service, http, 6.0, owner("fay"), "Fay")
    assert shown(http) == [(1, "Gus", 7.0), (2, "Fay", 6.0)]


def test_clearing_is_refused_where_the_admin_api_is_off_and_for_odd_entrants(
    open_service: Components, keyed_service: Components, http: TestClient, keyed_http: TestClient
) -> None:
    enter(keyed_service, keyed_http, 9.0, key(0), "Hal")
    entrant = board(keyed_http)["entries"][0]["entrant"]
    off = keyed_http.delete(f"{BOARD}/{entrant}", headers=key(0))
    assert off.status_code == 403 and "GRADER_ADMIN_TOKEN" in off.json()["detail"]
    assert len(board(keyed_http)["entries"]) == 1
    assert http.delete(f"{BOARD}/{'e' * 65}", headers=ADMIN_HEADERS).status_code == 422
    unknown = http.delete(f"{BOARD}/{'e' * 32}", headers=ADMIN_HEADERS)
    assert unknown.status_code == 404 and "'eeee" in unknown.json()["detail"]


# -- which problems have a board ----------------------------------------------------------------------------------
def test_an_unknown_problem_or_one_that_is_not_speed_graded_has_no_board(http: TestClient) -> None:
    unknown = http.get("/api/problems/no-such-problem/leaderboard")
    assert unknown.status_code == 404 and unknown.json()["detail"] == "no problem 'no-such-problem'"
    plain = http.get(f"/api/problems/{PLAIN_PROBLEM}/leaderboard")
    assert plain.status_code == 404
    assert plain.json()["detail"] == f"problem '{PLAIN_PROBLEM}' is not speed-graded: it has no leaderboard"
    long = http.get(f"/api/problems/{'x' * 5000}/leaderboard")
    assert long.status_code == 404 and len(long.json()["detail"]) < 200, "the id is repeated within a bound"
    page = http.get(f"/problems/{PLAIN_PROBLEM}/leaderboard")
    assert page.status_code == 404 and "is not speed-graded" in page.text
    assert http.get("/problems/no-such-problem/leaderboard").status_code == 404


def test_the_board_says_what_it_measures_and_takes_a_bounded_limit(open_service: Components, http: TestClient) -> None:
    problem = open_service.registry.get(SPEED_PROBLEM)
    assert problem is not None and problem.speed is not None
    enter(open_service, http, 11.0, owner("ida"), "Ida")
    enter(open_service, http, 9.0, owner("jo"), "Jo")
    whole = board(http)
    assert {key: whole[key] for key in ("problem_id", "version", "baseline", "threshold", "score", "device")} == {
        "problem_id": SPEED_PROBLEM,
        "version": problem.version,
        "baseline": problem.speed.baseline,
        "threshold": problem.speed.threshold,
        "score": problem.speed.score,
        "device": problem.speed.device,
    }
    assert whole["entries"][0]["problem_version"] == problem.version
    assert [entry["name"] for entry in http.get(f"{BOARD}?limit=1").json()["entries"]] == ["Ida"]
    for limit in ("0", "1001", "many"):
        assert http.get(f"{BOARD}?limit={limit}").status_code == 422


# -- who is on it, and what anyone sees ----------------------------------------------------------------------------
def test_only_the_admin_sees_which_submission_set_an_entry(open_service: Components, http: TestClient) -> None:
    submission_id = enter(open_service, http, 15.0, owner("kim"), "Kim")
    public = http.get(BOARD)
    assert submission_id not in public.text and "submission_id" not in public.text
    assert "source" not in public.text and "pairwise_distances" not in public.text
    assert set(public.json()["entries"][0]) == {
        "rank",
        "entrant",
        "name",
        "verified",
        "speedup",
        "submitted_at",
        "problem_version",
        "timing_version",
    }
    assert board(http, ADMIN_HEADERS)["entries"][0]["submission_id"] == submission_id
    assert submission_id not in http.get(PAGE).text
    assert f'href="/submissions/{submission_id}"' in http.get(PAGE, headers=ADMIN_HEADERS).text


def test_a_submission_of_nobody_in_particular_is_not_on_the_board(open_service: Components, http: TestClient) -> None:
    submission_id = enter(open_service, http, 40.0, {}, "Ghost")  # neither an API key nor an owner token
    assert http.get(f"/api/submissions/{submission_id}").json()["status"] == "accepted"
    assert shown(http) == []
    page = http.get(PAGE)
    assert page.status_code == 200 and "data-leaderboard-empty" in page.text and "Ghost" not in page.text


def test_an_api_key_vouches_for_the_name_and_an_owner_token_does_not(
    open_service: Components, keyed_service: Components, http: TestClient, keyed_http: TestClient
) -> None:
    enter(keyed_service, keyed_http, 9.0, key(0), "Lee (course A)")
    enter(keyed_service, keyed_http, 8.0, key(1), None)
    keyed = board(keyed_http)["entries"]
    assert [(entry["name"], entry["verified"]) for entry in keyed] == [
        ("Lee (course A)", True),
        (f"key {keyed[1]['name'].split()[1]}", True),
    ]
    assert len(keyed[1]["name"].split()[1]) == 8, "a key without a name is shown by its hash's first digits"
    enter(open_service, http, 9.0, owner("lee"), "Lee (course A)")
    enter(open_service, http, 8.0, owner("nameless"), None)
    unkeyed = board(http)["entries"]
    assert [(entry["name"], entry["verified"]) for entry in unkeyed][0] == ("Lee (course A)", False)
    assert unkeyed[1]["name"].startswith("anonymous ") and unkeyed[1]["verified"] is False
    # The same name from another owner is another entrant: a name alone claims nothing.
    enter(open_service, http, 20.0, owner("impostor"), "Lee (course A)")
    names = [(entry["name"], entry["speedup"]) for entry in board(http)["entries"]]
    assert names.count(("Lee (course A)", 20.0)) == 1 and names.count(("Lee (course A)", 9.0)) == 1
    marks = http.get(PAGE).text
    assert marks.count('"badge-label">Unverified<') == 3 and '"badge-label">Verified<' not in marks
    assert keyed_http.get(PAGE).text.count('"badge-label">Verified<') == 2


def test_names_are_shown_escaped_and_refused_when_not_plain_text(open_service: Components, http: TestClient) -> None:
    name = "<img src=x onerror=alert(1)>&\"'{{7*7}}"
    enter(open_service, http, 12.0, owner("mallory"), name)
    assert board(http)["entries"][0]["name"] == name  # JSON carries it as data
    page = http.get(PAGE)
    assert page.status_code == 200
    assert "&lt;img src=x onerror=alert(1)&gt;&amp;&#34;&#39;{{7*7}}" in page.text
    assert "<img src=x" not in page.text and "&#39;49" not in page.text  # {{7*7}} is text, never evaluated
    for odd in ("a\u202eb", "bell\x07", "", "   ", "n" * 65):
        refused = http.post(
            "/api/submissions",
            json={"problem_id": SPEED_PROBLEM, "source": "x = 1", "submitter": odd},
            headers=owner("o"),
        )
        assert refused.status_code == 422 and "submitter" in refused.json()["detail"], (odd, refused.text)


def test_an_owner_token_is_one_entrant_whatever_names_it_gives(
    open_service: Components, keyed_service: Components, http: TestClient, keyed_http: TestClient
) -> None:
    """One browser cannot fill the board by changing its name; a course's API key holds one entry per student."""
    for speedup, name in ((7.0, "Ann"), (9.0, "Ann B."), (8.0, "Someone else")):
        enter(open_service, http, speedup, owner("ann"), name)
    assert shown(http) == [(1, "Ann B.", 9.0)]  # its best, under the name that submission gave
    for number, name in ((0, "Student 1"), (0, "Student 2")):
        enter(keyed_service, keyed_http, 10.0, key(number), name)
    assert [name for _, name, _ in shown(keyed_http)] == ["Student 1", "Student 2"]


def test_a_regrade_that_no_longer_accepts_the_entrys_submission_takes_it_off_the_board(
    open_service: Components, http: TestClient
) -> None:
    """An entry points at a submission; once a regrade (the admin's, after a fix to speed grading, say) finds that
    submission no longer accepted, the board must not go on showing the speed-up it once measured. Today the entry
    stays at its old speed-up, above every honest entrant, until the admin finds and clears it by hand: the board
    shows 40x for a submission whose stored verdict is time_limit_exceeded at 1.7x."""
    from grader.storage import crud

    inflated = enter(open_service, http, 40.0, owner("mallory"), "Mallory")  # a score an attack once earned
    enter(open_service, http, 12.0, owner("erin"), "Erin")
    with open_service.db.session() as session:  # the admin's regrade (grader/submissions/regrade.py)
        crud.requeue_problem_submissions(session, problem_id=SPEED_PROBLEM, problem_version="v-regrade")
    caught = verdict_with(open_service, speed_result(1.7))  # graded again, the attack no longer pays
    assert caught.status.value == "time_limit_exceeded"
    grade(open_service, inflated, caught)
    assert http.get(f"/api/submissions/{inflated}").json()["status"] == "time_limit_exceeded"
    entries = board(http, ADMIN_HEADERS)["entries"]
    stale = [entry for entry in entries if entry["submission_id"] == inflated]
    assert stale == [], stale


def test_an_entry_timed_under_an_earlier_timing_version_gives_way_to_a_later_one(
    open_service: Components, http: TestClient
) -> None:
    """Speed-ups of two timing versions do not compare: an entrant's entry made under version 1 is replaced by its
    next accepted one under the current version, however it compares; the board lists the current version's
    entries first and says which version each was timed under (an admin's regrade times them all again)."""
    old = speed_result(40.0, timing_version=1)
    submit_and_grade(open_service, http, verdict_with(open_service, old), headers=owner("old"), name="Old")
    enter(open_service, http, 6.0, owner("new"), "New")
    body = board(http)
    assert body["timing_version"] == TIMING_VERSION == 2
    assert [(e["name"], e["speedup"], e["timing_version"]) for e in body["entries"]] == [
        ("New", 6.0, 2),
        ("Old", 40.0, 1),
    ]
    enter(open_service, http, 9.0, owner("old"), "Old")  # timed under version 2: slower in figures, replaces it
    assert shown(http) == [(1, "Old", 9.0), (2, "New", 6.0)]
    assert {e["timing_version"] for e in board(http)["entries"]} == {2}
