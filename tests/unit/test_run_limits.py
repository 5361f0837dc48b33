"""What one client and everyone together may ask of runs (grader/submissions/run_limits.py), without
Docker: the client's own limits answer 429, the service's 503, each with Retry-After; a run holds its
places until its work ends; a refused request takes nothing."""

from __future__ import annotations

import pytest

from grader.submissions import run_limits
from grader.submissions.run_limits import RunLimits
from grader.submissions.submitters import Refused


def refusal(limits: RunLimits, who: str) -> Refused:
    with pytest.raises(Refused) as caught:
        limits.admit(who)
    return caught.value


def test_one_run_at_a_time_per_client_then_429() -> None:
    limits = RunLimits(per_minute=0, per_client=1, overall=4)
    first = limits.admit("a")
    refused = refusal(limits, "a")
    assert refused.status == 429 and "at most 1 per client" in refused.detail and refused.headers["Retry-After"]
    other = limits.admit("b")  # someone else is not held back by it
    first.release()
    first.release()  # once is enough; twice gives nothing back twice
    limits.admit("a").release()
    other.release()
    assert limits.running == 0


def test_every_place_taken_is_503_and_refuses_nothing_of_the_clients_own() -> None:
    limits = RunLimits(per_minute=1, per_client=2, overall=2)
    held = [limits.admit("a"), limits.admit("b")]
    refused = refusal(limits, "c")
    assert refused.status == 503 and refused.headers["Retry-After"] == "5"
    held[0].release()
    limits.admit("c")  # its one run of the minute was not spent by the refusal
    assert refusal(limits, "c").status == 429


def test_the_rate_is_per_minute_and_says_when_to_come_back(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(run_limits.time, "monotonic", lambda: now[0])
    limits = RunLimits(per_minute=3, per_client=10, overall=10)
    for _ in range(3):
        limits.admit("a").release()
        now[0] += 10
    refused = refusal(limits, "a")
    assert refused.status == 429 and refused.detail == "rate limit: at most 3 runs per minute"
    assert refused.headers["Retry-After"] == "30"  # the first of the three leaves the window in 30 s
    now[0] += 30
    limits.admit("a").release()


def test_clients_gone_quiet_are_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    monkeypatch.setattr(run_limits.time, "monotonic", lambda: now[0])
    limits = RunLimits(per_minute=5, per_client=1, overall=1)
    for number in range(run_limits.SWEEP_AT):
        limits.admit(f"client-{number}").release()
    now[0] += run_limits.WINDOW_S + 1
    limits.admit("a late one").release()
    assert len(limits._started) == 1
