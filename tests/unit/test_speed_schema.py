"""A problem's `speed:` section as the loader takes it (grader/problems/speed.py, schema.py): every mistake
refused at load with its line, a device the server lacks among them; what the public may see of it."""

from __future__ import annotations

import pytest

from grader.config import REPO_ROOT
from grader.problems.public import problem_public
from grader.problems.registry import ProblemError, Registry, parse_problem
from sandbox.runner.messages import Limits

TEXT = (REPO_ROOT / "problems" / "pairwise-distances.yaml").read_text()


def refused(text: str, **context: object) -> str:
    with pytest.raises(ProblemError) as caught:
        parse_problem(text, "p.yaml", **context)  # type: ignore[arg-type]
    return "\n".join(caught.value.lines())


def test_the_example_loads_and_its_speed_section_is_public() -> None:
    registry = Registry(Limits(time_s=2, memory_mb=1024, output_kb=64), devices=("cpu",))
    problem = registry.make(registry.parse(TEXT, "pairwise-distances.yaml"))
    public = problem_public(problem)
    assert public.speed_graded and public.speed is not None
    assert public.speed.baseline == "row-loop" and public.speed.threshold == 4
    assert public.speed.baselines[0]["code"] == problem.speed.baseline_code()
    names = ["512 x 512 points of 64", "512 x 512 points of 128", "512 x 1024 points of 128"]
    assert [size["name"] for size in public.speed.sizes] == names
    assert public.speed.time_s == problem.speed_limits.time_s == 4
    shown = public.model_dump_json()
    assert problem.reference.strip().splitlines()[-1].strip() not in shown  # the reference's code is never shown


def test_a_device_the_server_lacks_is_refused_at_load() -> None:
    text = TEXT.replace("  score: geomean\n", "  score: geomean\n  device: cuda\n")
    message = refused(text, devices=("cpu",))
    assert "speed.device" in message and "'cuda'" in message and "GRADER_DEVICES" in message
    assert parse_problem(text, "p.yaml", devices=("cpu", "cuda")).speed.device == "cuda"


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("  baseline: row-loop\n", "  baseline: reference\n", "the reference never runs beside a submission"),
        ("  baseline: row-loop\n", "  baseline: nowhere\n", "'nowhere' is not in baselines"),
        ("  call: pairwise_distances\n", "  call: distances\n", "'distances' is not an entry point"),
        (
            "        def pairwise_distances(x, y):\n            out",
            "        def other(x, y):\n            out",
            "does not define",
        ),
        (
            "    - {name: 512 x 512 points of 128,",
            "    - {name: 512 x 512 points of 64,",
            "two sizes have the same name",
        ),
        ("points of 128, n: 512, m: 1024,", "points of 128, n: [512], m: 1024,", "a parameter is a number"),
        ("points of 128, n: 512, m: 1024,", "points of 128, n: .nan, m: 1024,", "a parameter is a number"),
        ("  repeats: 15\n", "  repeats: 4\n", "speed.repeats"),
        ("  threshold: 4\n", "  threshold: 0\n", "speed.threshold"),
        ("  inputs: |\n    return", "  inputs: |\n    return (", "does not compile"),
        ("  warmup: 2\n", "  warmup: 2\n  unknown: 1\n", "speed.unknown"),
    ],
    ids=[
        "the reference as baseline",
        "an unknown baseline",
        "not an entry point",
        "a baseline without the function",
        "two sizes of one name",
        "a list as a parameter",
        "NaN as a parameter",
        "too few repetitions",
        "no threshold",
        "inputs that do not compile",
        "an unknown field",
    ],
)
def test_a_mistake_in_the_speed_section_is_refused_with_its_line(old: str, new: str, words: str) -> None:
    assert old in TEXT
    message = refused(TEXT.replace(old, new, 1))
    assert words in message, message
    assert "p.yaml:" in message and message.split(":")[1].strip().isdigit(), message


def test_its_memory_must_fit_twice_in_a_sandbox() -> None:
    text = TEXT.replace("limits: {time_s: 4, memory_mb: 1024}", "limits: {time_s: 4, memory_mb: 3072}")
    message = refused(text, max_memory_mb=4096)
    assert "fit twice" in message and "at most 2048 MB" in message


def test_a_slow_pitfall_belongs_to_a_speed_graded_problem_only() -> None:
    """`slow: true` marks a correct solution too slow for the threshold: only a problem with `speed` has one."""
    problem = parse_problem(TEXT, "p.yaml")
    assert [pitfall.name for pitfall in problem.pitfalls if pitfall.slow] == [
        "broadcasting the difference",
        "the vector norm of the broadcast difference",
    ]
    without_speed = TEXT[: TEXT.index("\nspeed:\n") + 1]
    assert "pitfalls.5.slow: only a speed-graded problem" in refused(without_speed)
