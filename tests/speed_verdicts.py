"""What a test may take for granted of a speed-graded verdict, on any machine.

Whether a correct submission reaches a problem's threshold depends on the machine (gVisor's wall clock on a slow
host put torch.cdist at 4.4x where 5x is needed), and so does whether the benchmark stops a 1x submission early
("too slow to reach the threshold": the subject's calls past 0.8x the baseline's plus a second). A test whose point
is not the threshold asks only what holds everywhere: the submission was correct and timed (`timed`), or correct
and refused as slow, measured or stopped (`refused_as_slow`)."""

from __future__ import annotations

STOPPED_EARLY = "too slow to reach the threshold"


def all_tests_passed(verdict: dict) -> bool:
    hidden = verdict.get("hidden") or {}
    visible = [test for test in verdict["tests"] if test["visible"]]
    hidden_ok = hidden.get("passed") == hidden.get("total") if hidden else True
    return verdict.get("score") == 1.0 and hidden_ok and all(test["status"] == "passed" for test in visible)


def timed(verdict: dict) -> bool:
    """Correct (every test passed) and timed to the end: a score, whichever side of the threshold it fell."""
    speed = verdict.get("speed") or {}
    return (
        verdict["status"] in ("accepted", "time_limit_exceeded")
        and all_tests_passed(verdict)
        and speed.get("speedup") is not None
        and speed.get("passed") is (verdict["status"] == "accepted")
    )


def refused_as_slow(verdict: dict) -> bool:
    """Correct, and refused for its speed alone: timed below the threshold, or stopped early for it."""
    speed = verdict.get("speed") or {}
    stopped = speed.get("speedup") is None and STOPPED_EARLY in (verdict.get("message") or "")
    return (
        verdict["status"] == "time_limit_exceeded"
        and all_tests_passed(verdict)
        and speed.get("passed") is False
        and (stopped or speed.get("speedup") is not None)
    )


def speed_seen(verdict: dict) -> tuple:
    """What a failed assertion shows of a speed-graded verdict."""
    speed = verdict.get("speed") or {}
    sizes = [(size.get("name"), size.get("speedup"), size.get("submission_ms")) for size in speed.get("sizes") or []]
    failing = [
        (t.get("name"), t.get("status"), t.get("message")) for t in verdict["tests"] if t.get("status") != "passed"
    ]
    return verdict["status"], verdict.get("message"), speed.get("speedup"), sizes, failing[:3], verdict.get("hidden")
