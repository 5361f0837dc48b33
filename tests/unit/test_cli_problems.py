"""`grader problems schema` and `grader problems check --schema-only`: no sandbox needed."""

from __future__ import annotations

import json
from pathlib import Path

from grader.cli import main
from grader.config import REPO_ROOT
from grader.problems.schema import Problem

PROBLEM_FILES = sorted((REPO_ROOT / "problems").glob("*.yaml"))


def test_schema_prints_the_json_schema_of_a_problem_file(capsys) -> None:
    assert main(["problems", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema == Problem.model_json_schema()
    assert set(schema["properties"]) == set(Problem.model_fields)
    assert set(schema["required"]) >= {"id", "title", "difficulty", "statement", "reference", "tests"}
    assert {"TestCase", "Pitfall", "Limits"} <= set(schema["$defs"])
    options = schema["$defs"]["TestCase"]["properties"]["check"]["additionalProperties"]["anyOf"]
    assert any("rtol" in option.get("properties", {}) for option in options), "the tolerance options are documented"
    assert schema["$defs"]["TestCase"]["properties"]["code"]["description"]
    assert schema["additionalProperties"] is False


def test_schema_only_check_of_the_real_problems(capsys) -> None:
    assert len(PROBLEM_FILES) >= 5
    assert main(["problems", "check", "--schema-only", *map(str, PROBLEM_FILES)]) == 0
    out = capsys.readouterr().out
    for path in PROBLEM_FILES:
        assert str(path) in out
    assert out.count("  ok    schema ") == len(PROBLEM_FILES)


def test_a_bad_file_fails_with_file_line_and_field(tmp_path: Path, problem_yaml, mutate, line_of, capsys) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(problem_yaml)
    bad = tmp_path / "bad.yaml"
    text = mutate(problem_yaml, "    weight: 2", "    weight: 0")
    bad.write_text(text)
    assert main(["problems", "check", "--schema-only", str(good), str(bad)]) == 1
    captured = capsys.readouterr()
    assert f"{bad}:{line_of(text, 'weight: 0')}: tests.2.weight: Input should be greater than 0" in captured.out
    assert "  FAIL  schema" in captured.out
    assert f"1 of 2 problem files failed: {bad}" in captured.err


def test_unreadable_files_fail(tmp_path: Path, capsys) -> None:
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes(b"id: caf\xe9\n")
    assert main(["problems", "check", "--schema-only", str(tmp_path / "missing.yaml"), str(latin1)]) == 1
    out = capsys.readouterr().out
    assert "missing.yaml: No such file or directory" in out
    assert "latin1.yaml: the file is not UTF-8 text" in out
