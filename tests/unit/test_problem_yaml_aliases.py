"""grader/problems: YAML anchors and aliases are refused, so that a small file cannot expand into a large
problem (a string aliased a thousand times, or the "billion laughs" of nested aliases), and nesting is
bounded, so that a deep file cannot exhaust the parser's stack."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from grader.config import REPO_ROOT
from grader.problems.registry import MAX_PROBLEM_BYTES, ProblemError, Registry, parse_problem
from sandbox.runner.messages import Limits

SOURCE = "upload:x"


def refuse(text: str) -> str:
    """The single line of the ProblemError that parse_problem raises for `text`."""
    with pytest.raises(ProblemError) as info:
        parse_problem(text, SOURCE)
    lines = str(info.value).splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def refuse_within(text: str, seconds: float, megabytes: float | None = None) -> str:
    """refuse(text), failing unless it takes under `seconds` and allocates under `megabytes` at its peak.

    Timed and traced in separate runs: tracemalloc slows the pure-Python parser several times over."""
    started = time.perf_counter()
    line = refuse(text)
    took = time.perf_counter() - started
    assert took < seconds, f"took {took:.2f} s"
    if megabytes is None:
        return line
    tracemalloc.start()
    try:
        refuse(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < megabytes * 1024 * 1024, f"allocated {peak / 1024 / 1024:.0f} MiB at the peak"
    return line


def test_an_anchor_and_its_alias_are_refused_at_the_anchor(problem_yaml: str, mutate, line_of) -> None:
    text = mutate(problem_yaml, "title: Tiny Problem", "title: &name Tiny Problem")
    text = mutate(text, "difficulty: easy", "source: *name\ndifficulty: easy")
    line = line_of(text, "&name")
    assert refuse(text) == f"{SOURCE}:{line}: YAML anchors and aliases are not allowed (&name)"


def test_an_anchor_alone_is_refused(problem_yaml: str, mutate, line_of) -> None:
    text = mutate(problem_yaml, "tags: [demo]", "tags: &labels [demo]")
    assert refuse(text) == f"{SOURCE}:{line_of(text, '&labels')}: YAML anchors and aliases are not allowed (&labels)"


def test_an_alias_is_refused_naming_its_line(problem_yaml: str, mutate, line_of) -> None:
    # No anchor before it: the alias itself is what is named (not "undefined alias").
    text = mutate(problem_yaml, "tags: [demo]", "tags:\n  - demo\n  - *elsewhere")
    line = line_of(text, "*elsewhere")
    assert refuse(text) == f"{SOURCE}:{line}: YAML anchors and aliases are not allowed (*elsewhere)"


def test_a_64_kib_string_aliased_a_thousand_times_is_refused_quickly(problem_yaml: str, mutate) -> None:
    """Once expanded, this 70 KB file is a 64 MB problem (the version hash dumps all of it)."""
    big = "x" * 65536
    text = mutate(problem_yaml, "tags: [demo]", "tags: [" + ", ".join(["*big"] * 1000) + "]")
    text = mutate(text, "difficulty: easy", f"source: &big {big}\ndifficulty: easy")
    assert len(text) < 100_000
    line = refuse_within(text, seconds=0.5, megabytes=16)
    assert line.endswith("YAML anchors and aliases are not allowed (&big)"), line


def billion_laughs(levels: int = 9) -> str:
    lines = ['lol0: &lol0 "lol"']
    lines += [f"lol{i}: &lol{i} [{', '.join([f'*lol{i - 1}'] * 10)}]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def test_billion_laughs_is_refused_quickly_and_in_little_memory(problem_yaml: str) -> None:
    # The bomb as the file's tags: 10**9 strings once expanded.
    text = billion_laughs() + problem_yaml.replace("tags: [demo]", "tags: *lol9")
    line = refuse_within(text, seconds=0.5, megabytes=16)
    assert "YAML anchors and aliases are not allowed (&lol0)" in line, line


def test_deep_nesting_is_refused_with_its_line(problem_yaml: str, mutate, line_of) -> None:
    """Thousands of brackets would overflow the composer's recursion (a RecursionError, not a refusal)."""
    depth = 5_000
    text = mutate(problem_yaml, "tags: [demo]", "tags: " + "[" * depth + "]" * depth)
    assert len(text) < MAX_PROBLEM_BYTES
    line = refuse_within(text, seconds=2.0)
    assert line.startswith(f"{SOURCE}:{line_of(text, 'tags: [[')}: YAML nested deeper than "), line


def test_load_dir_reports_such_files_and_loads_the_others(tmp_path: Path, problem_yaml: str, mutate) -> None:
    (tmp_path / "good.yaml").write_text(problem_yaml)
    other = mutate(problem_yaml, "id: tiny-problem", "id: other")
    (tmp_path / "aliased.yaml").write_text(mutate(other, "tags: [demo]", "tags: &t [demo]"))
    deep = mutate(problem_yaml, "id: tiny-problem", "id: deep")
    (tmp_path / "deep.yaml").write_text(mutate(deep, "tags: [demo]", "tags: " + "[" * 5000 + "]" * 5000))
    registry = Registry(Limits(time_s=2.0, memory_mb=1024, output_kb=256))
    errors = registry.load_dir(tmp_path)
    assert [problem.id for problem in registry.all()] == ["tiny-problem"]
    assert sorted(str(error) for error in errors) == [
        "aliased.yaml:4: YAML anchors and aliases are not allowed (&t)",
        "deep.yaml:4: YAML nested deeper than 32 levels",
    ]


def test_ampersands_and_asterisks_inside_strings_are_fine(problem_yaml: str, mutate) -> None:
    text = mutate(problem_yaml, "title: Tiny Problem", 'title: "Tiny & *Problem* &x *y"')
    text = mutate(text, "Return twice the input.", "Return `a & b` and `*args`, &amp; *emphasis*.")
    assert parse_problem(text, SOURCE).title == "Tiny & *Problem* &x *y"


@pytest.mark.parametrize("path", sorted((REPO_ROOT / "problems").glob("*.yaml")), ids=lambda path: path.name)
def test_every_shipped_problem_parses_without_anchors(path: Path) -> None:
    assert parse_problem(path.read_text(encoding="utf-8"), path.name).id == path.stem


def test_a_key_written_twice_is_refused_naming_both_lines(problem_yaml: str) -> None:
    """YAML keeps the last of two equal keys: a second `pitfalls:` once dropped the five of the first."""
    lines = problem_yaml.splitlines()
    first = next(number for number, line in enumerate(lines, 1) if line.startswith("pitfalls:"))
    text = problem_yaml + "\npitfalls: []\n"
    second = len(text.splitlines())
    assert refuse(text) == (
        f"{SOURCE}:{second}: the key 'pitfalls' is written twice in one mapping (lines {first} and {second})"
    )


def test_a_key_written_twice_inside_a_test_is_refused(problem_yaml: str, mutate) -> None:
    text = mutate(problem_yaml, "    visible: true\n", "    visible: true\n    visible: false\n")
    assert "the key 'visible' is written twice in one mapping" in refuse(text)


@pytest.mark.parametrize("path", sorted((REPO_ROOT / "problems").glob("*.yaml")), ids=lambda p: p.name)
def test_no_shipped_problem_writes_a_key_twice(path: Path) -> None:
    parse_problem(path.read_text(), path.name)
