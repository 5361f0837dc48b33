"""The command line and speed-graded problems: `grader submit` prints the timing (a row per size, then the score
line) and sends `--name`; `--json` carries the timing as the API has it; `grader problems show` tells how the
problem is timed; `grader leaderboard` prints the board (or its JSON), and exits 2 for a problem without one.

`grader leaderboard` and `grader problems show` run against the real app served by uvicorn on a port (the
service not started: no sandbox); `grader submit` against a client whose event stream hands back a verdict the
API served, since following a live grading needs sandboxes (tests/integration/test_cli_submit.py does that).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete, update

from grader import client as cli
from grader.app import create_app
from grader.cli import main
from grader.components import Components
from grader.grading.verdict import Status
from grader.storage.db import LeaderboardEntry
from tests.served import serving
from tests.speed_results import (
    PLAIN_PROBLEM,
    SPEED_PROBLEM,
    graderless_service,
    speed_result,
    submit_and_grade,
    verdict_with,
)

OWNER = {"X-Owner-Token": "cli-speed-terminal-0123456789"}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Components:
    return graderless_service(tmp_path_factory.mktemp("cli-speed"))


@pytest.fixture(scope="module")
def http(service: Components) -> Iterator[TestClient]:
    with TestClient(create_app(service.settings, components=service)) as client:
        yield client


@pytest.fixture(scope="module")
def url(service: Components) -> Iterator[str]:
    with serving(create_app(service.settings, components=service)) as served_url:
        yield served_url


class Replay(cli.Client):
    """A client whose submission's event stream is a verdict the API served; what it POSTs is kept."""

    def __init__(self, verdict: dict[str, Any]) -> None:
        super().__init__("http://judge.example")
        self.verdict = verdict
        self.posted: list[Any] = []

    def post(self, path: str, body: Any) -> Any:
        self.posted.append(body)
        return {"id": self.verdict["id"]}

    def events(self, submission_id: str) -> Iterator[tuple[str, Any]]:
        yield from [("status", {"status": "running"}), ("verdict", self.verdict)]


def served(service: Components, http: TestClient, speed: Any, **verdict_fields: Any) -> dict[str, Any]:
    """The verdict of a graded submission, as GET /api/submissions/{id} serves it."""
    verdict = verdict_with(service, speed).model_copy(update=verdict_fields)
    submission_id = submit_and_grade(service, http, verdict, headers=OWNER)
    return http.get(f"/api/submissions/{submission_id}").json()  # type: ignore[no-any-return]


def printed_submit(verdict: dict[str, Any], **options: Any) -> tuple[int, str, Replay]:
    client, out = Replay(verdict), io.StringIO()
    code = cli.submit(client, SPEED_PROBLEM, "x = 1", run=False, as_json=False, out=out, **options)
    return code, out.getvalue(), client


def test_submit_prints_a_row_per_size_and_the_score_line(service: Components, http: TestClient) -> None:
    code, printed, client = printed_submit(served(service, http, speed_result(12.0)), name="Ann")
    assert code == 0
    assert client.posted[0]["submitter"] == "Ann"
    timing = printed[printed.index("speed against") :].splitlines()
    assert timing == [
        "speed against the baseline pair-loop (cpu):",
        "  size      yours ms  baseline ms  speed-up [95% interval]",
        "  16 x 16       0.05          0.3  6x [5.4x, 6.6x]",
        "  32 x 32        0.1          1.2  12x [10.8x, 13.2x]",
        "  48 x 48       0.15          3.6  24x [21.6x, 26.4x]",
        "  score 12x [10.8x, 13.2x] (geometric mean of the sizes); threshold 5x: passed",
        "  import: yours 2.5 ms, the baseline's 2 ms; setup charge 0.0012 ms per timed call",
        "  12x the baseline 'pair-loop'",
    ]
    assert printed.index("accepted  score 1.000") < printed.index("speed against"), "after the verdict"
    _, unnamed, anonymous = printed_submit(served(service, http, speed_result(12.0)))
    assert "submitter" not in anonymous.posted[0]


def test_submit_of_a_too_slow_or_wrong_module_exits_1_and_says_why(service: Components, http: TestClient) -> None:
    message = "correct, but 2x the baseline, where at least 5x is needed"
    code, printed, _ = printed_submit(served(service, http, speed_result(2.0, message=message)))
    assert code == 1
    assert "  score 2x [1.8x, 2.2x] (geometric mean of the sizes); threshold 5x: not passed" in printed
    assert printed.count(message) == 1, "the verdict's message, once"
    details = {"reason": "values differ\x1b[2J", "expected": {"type": "float", "value": 1.0}, "got": {"value": 2.0}}
    wrong = speed_result(8.0, sizes=[], message="a wrong result\x07", details=details).model_copy(
        update={"speedup": None, "interval": None, "passed": False}
    )
    code, printed, _ = printed_submit(served(service, http, wrong, status=Status.WRONG_ANSWER))
    assert code == 1
    assert "  score - (geometric mean of the sizes); threshold 5x: not passed" in printed
    assert "size " not in printed and "import:" not in printed, "no table for a benchmark that measured nothing"
    assert "  a wrong result\\x07\n" in printed and "  a timed call's wrong value:\n" in printed
    assert "  reason:   values differ\\x1b[2J\n" in printed and '  got:      {"value": 2.0}' in printed
    assert "\x1b" not in printed and "\x07" not in printed


def test_submit_json_carries_the_timing_as_the_api_serves_it(service: Components, http: TestClient) -> None:
    verdict = served(service, http, speed_result(12.0))
    out = io.StringIO()
    assert cli.submit(Replay(verdict), SPEED_PROBLEM, "x = 1", run=False, as_json=True, out=out) == 0
    printed = json.loads(out.getvalue())
    assert printed["speed"] == verdict["speed"] and printed["speed"]["speedup"] == 12.0


def test_problems_show_tells_how_the_problem_is_timed(service: Components, url: str, capsys: Any) -> None:
    problem = service.registry.get(SPEED_PROBLEM)
    assert problem is not None and problem.speed is not None
    speed = problem.speed
    assert main(["problems", "show", SPEED_PROBLEM, "--url", url]) == 0
    out = capsys.readouterr().out
    how = "geometric mean of the sizes" if speed.score == "geomean" else "smallest of the sizes"
    assert f"speed-graded: at least {speed.threshold:g}x the baseline {speed.baseline} ({how}), on cpu\n" in out
    sizes = ", ".join(size.name for size in speed.sizes)
    calls = f"{speed.warmup} warm-up and {speed.repeats} timed calls each"
    assert f"  sizes: {sizes} ({calls}); the board: grader leaderboard {SPEED_PROBLEM}\n" in out
    assert main(["problems", "show", PLAIN_PROBLEM, "--url", url]) == 0
    assert "speed-graded" not in capsys.readouterr().out


def test_leaderboard_prints_the_board_best_first(service: Components, http: TestClient, url: str, capsys: Any) -> None:
    with service.db.session() as session:  # the submissions of the tests above entered it
        session.execute(delete(LeaderboardEntry))
        session.commit()
    assert main(["leaderboard", SPEED_PROBLEM, "--url", url]) == 0
    assert capsys.readouterr().out.endswith("no entries yet\n")
    for speedup, token, name in [(9.0, "a", "Ann"), (14.0, "b", "Bo"), (9.0, "c", "Cy")]:
        verdict = verdict_with(service, speed_result(speedup))
        submit_and_grade(service, http, verdict, headers={"X-Owner-Token": f"cli-board-{token}-0123456789"}, name=name)
    with service.db.session() as session:  # a name as no submission can give it now (a row from elsewhere)
        session.execute(update(LeaderboardEntry).where(LeaderboardEntry.name == "Bo").values(name="Bo\x1b]0;owned\x07"))
        session.commit()
    assert main(["leaderboard", SPEED_PROBLEM, "--url", url]) == 0
    lines = capsys.readouterr().out.splitlines()
    problem = service.registry.get(SPEED_PROBLEM)
    assert problem is not None and problem.speed is not None
    assert lines[0] == (
        f"{SPEED_PROBLEM}: speed-up over the baseline {problem.speed.baseline} (geometric mean of the sizes);"
        f" accepted from {problem.speed.threshold:g}x"
    )
    assert lines[1] == "rank   speed-up  verified  submitted         name"
    rows = [(line[:4].strip(), line[6:15].strip(), line[17:25].strip(), line[45:]) for line in lines[2:]]
    assert rows == [("1", "14x", "no", "Bo\\x1b]0;owned\\x07"), ("2", "9x", "no", "Ann"), ("3", "9x", "no", "Cy")]
    assert all(len(line[27:43].strip()) == 16 for line in lines[2:]), "the date and time of each submission"
    assert main(["leaderboard", SPEED_PROBLEM, "--json", "--limit", "2", "--url", url]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == http.get(f"/api/problems/{SPEED_PROBLEM}/leaderboard?limit=2").json()
    assert [entry["rank"] for entry in printed["entries"]] == [1, 2]


def test_leaderboard_exits_2_for_a_problem_without_one(url: str, capsys: Any) -> None:
    assert main(["leaderboard", PLAIN_PROBLEM, "--url", url]) == 2
    assert f"problem '{PLAIN_PROBLEM}' is not speed-graded: it has no leaderboard" in capsys.readouterr().err
    assert main(["leaderboard", "no/such problem", "--url", url]) == 2
    assert "404" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:
        main(["leaderboard", SPEED_PROBLEM, "--limit", "0", "--url", url])
    assert refused.value.code == 2 and "0 is not between 1 and 1000" in capsys.readouterr().err
    assert main(["submit", "--batch", "folder", "--problem", SPEED_PROBLEM, "--name", "Ann"]) == 2
    assert "--batch takes no FILE, --run, --json or --name" in capsys.readouterr().err
