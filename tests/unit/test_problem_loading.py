"""grader/problems: problem files are validated on load; a bad one is refused with its name and line."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from grader.config import REPO_ROOT
from grader.problems.registry import MAX_PROBLEM_BYTES, ProblemError, Registry, parse_problem, problem_version
from grader.problems.schema import Problem
from sandbox.runner.messages import Limits

PROBLEMS_DIR = REPO_ROOT / "problems"
DEFAULTS = Limits(time_s=2.0, memory_mb=1024, output_kb=256)
SOURCE = "tiny.yaml"


def refuse(text: str, source: str = SOURCE) -> ProblemError:
    with pytest.raises(ProblemError) as info:
        parse_problem(text, source)
    error = info.value
    assert error.source == source
    assert error.problems, "a ProblemError must say what is wrong"
    return error


def only_line(error: ProblemError) -> str:
    """The single 'name:line: ...' line of an error, checked for that shape."""
    lines = str(error).splitlines()
    assert len(lines) == 1, lines
    assert re.match(rf"^{re.escape(error.source)}:\d+: ", lines[0]), lines[0]
    return lines[0]


# -- the real problem -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def embedding() -> Problem:
    path = PROBLEMS_DIR / "embedding-layer.yaml"
    return parse_problem(path.read_text(encoding="utf-8"), path.name)


def test_embedding_layer_loads(embedding: Problem) -> None:
    assert embedding.id == "embedding-layer"
    assert embedding.difficulty in ("easy", "medium", "hard")
    assert embedding.entry_points == ["create_embedding_layer", "embed_tokens"]
    assert len(embedding.tests) >= 16
    assert sum(test.visible for test in embedding.tests) >= 3
    assert embedding.tests[0].visible
    assert embedding.tests[0].name == "the numerical example from the statement"
    assert len({test.name for test in embedding.tests}) == len(embedding.tests)
    assert all(test.weight > 0 for test in embedding.tests)
    assert embedding.pitfalls, "the seed problem lists known wrong solutions"


def test_embedding_layer_checks_are_parsed(embedding: Problem) -> None:
    check = embedding.tests[0].check["out"]
    assert (check.rtol, check.atol) == (1e-5, 1e-6)


def test_real_problems_dir_loads_without_errors() -> None:
    registry = Registry(DEFAULTS)
    assert registry.load_dir(PROBLEMS_DIR) == []
    loaded = registry.get("embedding-layer")
    assert loaded is not None
    assert dataclasses.asdict(loaded.limits) == {"time_s": 2, "memory_mb": 1024, "output_kb": 256}
    assert loaded.path == PROBLEMS_DIR / "embedding-layer.yaml"
    assert len(loaded.version) == 16


# -- the minimal fixture is valid (so the errors below come from the one change each makes) --------------
def test_fixture_problem_is_valid(problem_yaml: str) -> None:
    problem = parse_problem(problem_yaml, SOURCE)
    assert problem.id == "tiny-problem"
    assert [t.name for t in problem.tests] == ["first", "second"]
    assert problem.tests[1].visible is False and problem.tests[1].weight == 2
    assert problem.tests[1].check == {}
    assert problem.source == ""


# -- errors name the file and the line --------------------------------------------------------------------
def test_yaml_syntax_error_names_its_line(problem_yaml, mutate, line_of) -> None:
    text = mutate(problem_yaml, "difficulty: easy", "difficulty: easy: hard")
    line = only_line(refuse(text))
    assert line.startswith(f"{SOURCE}:{line_of(text, 'difficulty: easy: hard')}: ")
    assert "YAML syntax error" in line


def test_yaml_tab_error_names_its_line(problem_yaml, mutate, line_of) -> None:
    text = mutate(problem_yaml, "title: Tiny Problem", "title: Tiny Problem\n\tauthor: x")
    line = only_line(refuse(text))
    assert line.startswith(f"{SOURCE}:{line_of(text, 'author: x')}: ")


def test_missing_required_field(problem_yaml, mutate) -> None:
    text = mutate(problem_yaml, "difficulty: easy\n", "")
    line = only_line(refuse(text))
    assert line.startswith(f"{SOURCE}:1: difficulty: ")
    assert "required" in line.lower()


def test_missing_required_test_field(problem_yaml, mutate, line_of) -> None:
    text = mutate(problem_yaml, '    code: |\n      return {"out": double(torch.zeros(2))}\n', "")
    line = only_line(refuse(text))
    assert line.startswith(f"{SOURCE}:{line_of(text, 'name: second')}: tests.2.code: ")


def test_wrong_value_on_a_nested_test_field_names_that_line(problem_yaml, mutate, line_of) -> None:
    text = mutate(problem_yaml, "    weight: 2", "    weight: -1")
    line = only_line(refuse(text))
    assert line.startswith(f"{SOURCE}:{line_of(text, 'weight: -1')}: tests.2.weight: ")
    assert "greater than 0" in line


def test_wrong_type_on_a_nested_test_field(problem_yaml, mutate, line_of) -> None:
    text = mutate(problem_yaml, "  - name: second\n", "  - name: second\n    visible: maybe\n")
    line = only_line(refuse(text))
    assert line.startswith(f"{SOURCE}:{line_of(text, 'visible: maybe')}: tests.2.visible: ")


def test_wrong_type_deep_in_a_check(problem_yaml, mutate, line_of) -> None:
    text = mutate(problem_yaml, "rtol: 1.0e-5", "rtol: lots")
    line = only_line(refuse(text))
    assert line.startswith(f"{SOURCE}:{line_of(text, 'rtol: lots')}: tests.1.check.out.rtol: ")


def test_bad_id_pattern(problem_yaml, mutate) -> None:
    for bad in ("Tiny_Problem", "tiny problem", "-tiny", "tiny-", "tiny--problem", "'../etc'"):
        line = only_line(refuse(mutate(problem_yaml, "id: tiny-problem", f"id: {bad}")))
        assert line.startswith(f"{SOURCE}:1: id: "), (bad, line)
        assert "pattern" in line


def test_bad_difficulty_names_its_line(problem_yaml, mutate, line_of) -> None:
    text = mutate(problem_yaml, "difficulty: easy", "difficulty: trivial")
    line = only_line(refuse(text))
    assert line.startswith(f"{SOURCE}:{line_of(text, 'difficulty: trivial')}: difficulty: ")


def test_duplicate_test_names(problem_yaml, mutate) -> None:
    text = mutate(problem_yaml, "name: second", "name: first")
    line = only_line(refuse(text))
    assert "two tests are named 'first'" in line


def test_duplicate_pitfall_names(problem_yaml) -> None:
    again = "  - name: identity\n    hint: Again.\n    code: |\n      def double(x):\n          return 1\n"
    text = problem_yaml + again
    line = only_line(refuse(text))
    assert "two pitfalls are named 'identity'" in line


def test_duplicate_test_name_points_at_the_duplicate(problem_yaml, mutate, line_of) -> None:
    text = mutate(problem_yaml, "name: second", "name: first")
    line = only_line(refuse(text))
    assert line.startswith(f"{SOURCE}:{line_of(text, 'name: first', occurrence=2)}: ")


def test_test_code_that_does_not_compile(problem_yaml, mutate, line_of) -> None:
    text = mutate(problem_yaml, 'return {"out": double(torch.zeros(2))}', 'return {"out": double(torch.zeros(2)}')
    line = only_line(refuse(text))
    code_line = line_of(text, "    code: |", occurrence=2)  # the second test's code key
    assert line.startswith(f"{SOURCE}:{code_line}: tests.2.code: ")
    assert "does not compile" in line and "line 1" in line


def test_test_code_error_names_the_line_inside_the_code(problem_yaml, mutate) -> None:
    text = mutate(
        problem_yaml,
        '      return {"out": double(torch.ones(3))}\n',
        '      x = 1\n      y = 2\n      return {"out": double(torch.ones(3)) +}\n',
    )
    line = only_line(refuse(text))
    assert "tests.1.code" in line and "line 3" in line


def test_reference_that_does_not_compile(problem_yaml, mutate, line_of) -> None:
    text = mutate(problem_yaml, "      return 2 * x\n", "      return 2 *\n")
    line = only_line(refuse(text))
    assert line.startswith(f"{SOURCE}:{line_of(text, 'reference: |')}: reference: ")
    assert "does not compile" in line and "line 2" in line


def test_starter_code_that_does_not_compile(problem_yaml, mutate, line_of) -> None:
    text = mutate(problem_yaml, "starter_code: |\n  def double(x):", "starter_code: |\n  def double(x)")
    line = only_line(refuse(text))
    assert line.startswith(f"{SOURCE}:{line_of(text, 'starter_code: |')}: starter_code: ")


def test_unknown_extra_field(problem_yaml, mutate, line_of) -> None:
    text = mutate(problem_yaml, "tags: [demo]", "tags: [demo]\nauthor: me")
    line = only_line(refuse(text))
    assert line.startswith(f"{SOURCE}:{line_of(text, 'author: me')}: author: ")
    assert "not permitted" in line


def test_unknown_extra_field_in_a_test(problem_yaml, mutate, line_of) -> None:
    text = mutate(problem_yaml, "    weight: 2", "    weight: 2\n    hidden: true")
    line = only_line(refuse(text))
    assert line.startswith(f"{SOURCE}:{line_of(text, 'hidden: true')}: tests.2.hidden: ")


def test_bad_entry_point(problem_yaml, mutate) -> None:
    line = only_line(refuse(mutate(problem_yaml, "entry_points: [double]", "entry_points: [double, class]")))
    assert "entry_points" in line and "'class'" in line


def test_every_error_in_a_file_is_reported(problem_yaml, mutate, line_of) -> None:
    text = mutate(problem_yaml, "difficulty: easy", "difficulty: trivial")
    text = mutate(text, "    weight: 2", "    weight: 0")
    error = refuse(text)
    lines = str(error).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{SOURCE}:{line_of(text, 'difficulty: trivial')}: difficulty: ")
    assert lines[1].startswith(f"{SOURCE}:{line_of(text, 'weight: 0')}: tests.2.weight: ")


@pytest.mark.parametrize(
    "text", ["- a\n- b\n", "just a string\n", "", "42\n", "~\n"], ids=["list", "string", "empty", "number", "null"]
)
def test_non_mapping_document(text: str) -> None:
    line = only_line(refuse(text))
    assert line.startswith(f"{SOURCE}:1: ")
    assert "mapping" in line


def test_empty_tests_list_is_refused(problem_yaml) -> None:
    text = problem_yaml.split("tests:\n")[0] + "tests: []\n"
    assert "tests" in only_line(refuse(text))


def test_oversized_file_is_refused(problem_yaml) -> None:
    text = problem_yaml + "# " + "x" * MAX_PROBLEM_BYTES + "\n"
    assert "larger" in str(refuse(text))


def test_python_tags_are_not_constructed(problem_yaml, mutate) -> None:
    text = mutate(problem_yaml, "title: Tiny Problem", "title: !!python/object/apply:os.getcwd []")
    assert "YAML" in str(refuse(text))


# -- Registry.load_dir -------------------------------------------------------------------------------------
def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def test_load_dir_keeps_the_good_file_and_reports_the_bad_ones(tmp_path, problem_yaml, mutate) -> None:
    write(tmp_path, "good.yaml", problem_yaml)
    write(tmp_path, "broken-yaml.yaml", mutate(problem_yaml, "difficulty: easy", "difficulty: easy: hard"))
    other = mutate(problem_yaml, "id: tiny-problem", "id: other")
    write(tmp_path, "bad-field.yml", mutate(other, "weight: 2", "weight: -1"))
    write(tmp_path, "notes.txt", "not a problem file: ignored")
    registry = Registry(DEFAULTS)
    errors = registry.load_dir(tmp_path)
    assert len(errors) == 2
    assert sorted(error.source for error in errors) == ["bad-field.yml", "broken-yaml.yaml"]
    messages = "\n".join(str(error) for error in errors)
    assert "broken-yaml.yaml:" in messages and "bad-field.yml:" in messages
    assert registry.errors == errors
    assert [p.id for p in registry.all()] == ["tiny-problem"]
    assert registry.get("tiny-problem").path == tmp_path / "good.yaml"
    assert registry.get("other") is None


def test_load_dir_refuses_a_file_that_is_not_utf8(tmp_path, problem_yaml) -> None:
    write(tmp_path, "good.yaml", problem_yaml)
    (tmp_path / "latin1.yaml").write_bytes(b"id: caf\xe9\n")
    registry = Registry(DEFAULTS)
    errors = registry.load_dir(tmp_path)
    assert [error.source for error in errors] == ["latin1.yaml"]
    assert "UTF-8" in str(errors[0])
    assert registry.get("tiny-problem") is not None


def test_two_files_with_the_same_id(tmp_path, problem_yaml, mutate) -> None:
    write(tmp_path, "a.yaml", problem_yaml)
    write(tmp_path, "b.yaml", mutate(problem_yaml, "title: Tiny Problem", "title: Another Title"))
    registry = Registry(DEFAULTS)
    errors = registry.load_dir(tmp_path)
    assert len(errors) == 1
    assert errors[0].source == "b.yaml"
    assert str(errors[0]).startswith("b.yaml:1: id: ")
    assert "already defined" in str(errors[0]) and "a.yaml" in str(errors[0])
    loaded = registry.all()
    assert len(loaded) == 1 and loaded[0].problem.title == "Tiny Problem"


def test_reload_replaces_the_whole_set(tmp_path, problem_yaml, mutate) -> None:
    registry = Registry(DEFAULTS)
    path = write(tmp_path, "p.yaml", problem_yaml)
    assert registry.load_dir(tmp_path) == []
    path.write_text(mutate(problem_yaml, "id: tiny-problem", "id: renamed"), encoding="utf-8")
    assert registry.load_dir(tmp_path) == []
    assert registry.get("tiny-problem") is None
    assert registry.get("renamed") is not None


def test_empty_dir(tmp_path) -> None:
    registry = Registry(DEFAULTS)
    assert registry.load_dir(tmp_path) == []
    assert registry.all() == []


def test_limits_fall_back_to_the_defaults_field_by_field(problem_yaml, mutate) -> None:
    registry = Registry(DEFAULTS)
    assert registry.make(parse_problem(problem_yaml, SOURCE)).limits == DEFAULTS
    text = mutate(problem_yaml, "tags: [demo]", "tags: [demo]\nlimits: {memory_mb: 256}")
    limits = registry.make(parse_problem(text, SOURCE)).limits
    assert limits == Limits(time_s=2.0, memory_mb=256, output_kb=256)


@pytest.mark.parametrize("limits", ["{time_s: 0}", "{time_s: 61}", "{memory_mb: 1}", "{output_kb: 0}", "{cpus: 2}"])
def test_limits_out_of_range_are_refused(problem_yaml, mutate, line_of, limits: str) -> None:
    text = mutate(problem_yaml, "tags: [demo]", f"tags: [demo]\nlimits: {limits}")
    line = only_line(refuse(text))
    assert line.startswith(f"{SOURCE}:{line_of(text, 'limits:')}: limits.")


# -- versions ----------------------------------------------------------------------------------------------
def test_version_is_stable_for_the_same_content(problem_yaml) -> None:
    first = problem_version(parse_problem(problem_yaml, SOURCE))
    second = problem_version(parse_problem(problem_yaml, "other-name.yaml"))
    assert first == second
    assert re.fullmatch(r"[0-9a-f]{16}", first)
    assert Registry(DEFAULTS).make(parse_problem(problem_yaml, SOURCE)).version == first


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("title: Tiny Problem", "title: Tiny Problem 2"),
        ("      return 2 * x", "      return x + x"),
        ("double(torch.ones(3))", "double(torch.ones(4))"),
        ("    weight: 2", "    weight: 3"),
        ("    visible: true", "    visible: false"),
        ("atol: 1.0e-6", "atol: 1.0e-7"),
        ("hint: Multiply by two.", "hint: Times two."),
    ],
    ids=["title", "reference", "test-code", "weight", "visibility", "tolerance", "pitfall-hint"],
)
def test_version_changes_when_content_changes(problem_yaml, mutate, old: str, new: str) -> None:
    before = problem_version(parse_problem(problem_yaml, SOURCE))
    after = problem_version(parse_problem(mutate(problem_yaml, old, new), SOURCE))
    assert before != after


def test_embedding_version_is_stable(embedding: Problem) -> None:
    again = parse_problem((PROBLEMS_DIR / "embedding-layer.yaml").read_text(encoding="utf-8"), "x.yaml")
    assert problem_version(again) == problem_version(embedding)


# -- partial pitfalls ---------------------------------------------------------------------------------
TWO_FUNCTIONS = """\
id: two-functions
title: Two Functions
difficulty: easy
statement: |
  Scale, then shift.
starter_code: |
  def scale(x):
      pass


  def shift(x):
      pass
entry_points: [scale, shift]
reference: |
  import math

  FACTOR = 2


  def _twice(x):
      return FACTOR * x


  def scale(x):
      return _twice(x)


  def shift(x):
      return scale(x) + 1
tests:
  - name: first
    visible: true
    code: |
      return {"out": shift(torch.ones(3))}
pitfalls:
  - name: a whole module
    hint: Whole.
    code: |
      def scale(x):
          return x


      def shift(x):
          return x + 1
  - name: only the helper
    hint: Twice.
    code: |
      def _twice(x):
          return x
  - name: only a constant
    hint: Factor.
    code: |
      FACTOR = 3
"""


def test_a_pitfall_defining_every_entry_point_is_run_as_it_is() -> None:
    problem = parse_problem(TWO_FUNCTIONS, SOURCE)
    whole = problem.pitfalls[0]
    assert whole.module == whole.code and whole.line_offset == 0


@pytest.mark.parametrize("index", [1, 2])
def test_a_partial_pitfall_is_the_reference_with_its_definitions_replaced(index: int) -> None:
    problem = parse_problem(TWO_FUNCTIONS, SOURCE)
    pitfall = problem.pitfalls[index]
    assert pitfall.module.startswith(problem.reference.rstrip("\n")) and pitfall.module.endswith(pitfall.code)
    assert pitfall.module.splitlines()[pitfall.line_offset :] == pitfall.code.splitlines()
    namespace: dict[str, object] = {}
    exec(compile(pitfall.module, "<pitfall>", "exec"), namespace)  # noqa: S102 - the fixture's own code
    shift = namespace["shift"]
    assert shift(1) == (2 if index == 1 else 4), "the reference's functions call the pitfall's definitions"


def test_a_pitfall_that_replaces_nothing_of_the_reference_is_refused(mutate) -> None:
    text = mutate(
        TWO_FUNCTIONS, "      FACTOR = 3\n", "      import math\n\n\n      def unrelated(x):\n          return x\n"
    )
    line = only_line(refuse(text))
    assert "pitfalls.3.code" in line
    assert "neither every entry point" in line and "missing: scale, shift" in line


def test_a_pitfall_that_does_not_compile_is_refused_at_load(mutate) -> None:
    line = only_line(refuse(mutate(TWO_FUNCTIONS, "      FACTOR = 3\n", "      FACTOR = = 3\n")))
    assert "pitfalls.3.code" in line and "does not compile" in line


@pytest.mark.parametrize(("field", "value"), [("track", "The Transformer"), ("order", 3)])
def test_track_and_order_are_optional_fields(mutate, field: str, value: object) -> None:
    problem = parse_problem(
        mutate(TWO_FUNCTIONS, "difficulty: easy\n", f"difficulty: easy\n{field}: {value}\n"), SOURCE
    )
    assert getattr(problem, field) == value


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "'x'"])
def test_an_order_that_is_not_a_positive_whole_number_is_refused(mutate, value: str) -> None:
    line = only_line(refuse(mutate(TWO_FUNCTIONS, "difficulty: easy\n", f"difficulty: easy\norder: {value}\n")))
    assert "order" in line


def test_a_memory_limit_above_what_the_server_gives_is_refused_at_load(mutate) -> None:
    text = mutate(TWO_FUNCTIONS, "difficulty: easy\n", "difficulty: easy\nlimits: {memory_mb: 8192}\n")
    with pytest.raises(ProblemError) as info:
        parse_problem(text, SOURCE, max_memory_mb=4096)
    line = only_line(info.value)
    assert line.startswith(f"{SOURCE}:4: limits.memory_mb: 8192 MB is more than this server gives a test")
    assert "at most 4096 MB (GRADER_MAX_MEMORY_MB)" in line
    assert parse_problem(text, SOURCE).limits.memory_mb == 8192, "no ceiling given: the schema's own maximum"
    registry = Registry(DEFAULTS, max_memory_mb=8192)
    assert registry.make(registry.parse(text, SOURCE)).limits.memory_mb == 8192


@pytest.mark.parametrize(
    "helpers",
    ["def shift(x):\n      return x + 1\n", "shift = lambda x: x + 1\n", "from math import floor as shift\n"],
    ids=["def", "assignment", "import"],
)
def test_a_helper_named_like_an_entry_point_is_refused(mutate, helpers: str) -> None:
    """It would replace the submission's function in every test: the starter code would be accepted."""
    text = mutate(TWO_FUNCTIONS, "tests:\n", f"helpers: |\n  {helpers}tests:\n")
    line = only_line(refuse(text))
    assert "helpers: defines `shift`, which is an entry point" in line and "another name" in line
    assert line.startswith(f"{SOURCE}:{text.splitlines().index('helpers: |') + 1}:")


def test_helpers_with_other_names_load() -> None:
    text = TWO_FUNCTIONS.replace("tests:\n", "helpers: |\n  def make_input():\n      return 1\ntests:\n", 1)
    assert parse_problem(text, SOURCE).helpers.startswith("def make_input")


# -- limits, resolved once: the test's own, else the problem's, else the server's ---------------------------
LIMITED = """\
id: limited
title: Limited
difficulty: easy
statement: s
starter_code: "def f(): pass"
entry_points: [f]
reference: "def f(): return 1"
limits: {time_s: 1.5}
tests:
  - name: plain
    visible: true
    code: "return f()"
  - name: its own memory
    visible: true
    limits: {memory_mb: 2048}
    code: "return f()"
  - name: its own time and output
    limits: {time_s: 5, output_kb: 8}
    code: "return f()"
"""


def test_each_tests_limits_are_resolved_once_at_load() -> None:
    from grader.problems.public import problem_public

    registry = Registry(DEFAULTS, max_memory_mb=4096)
    problem = registry.make(registry.parse(LIMITED, "limited.yaml"))
    assert problem.limits == Limits(time_s=1.5, memory_mb=1024, output_kb=256)
    assert [(limits.time_s, limits.memory_mb, limits.output_kb) for limits in problem.test_limits] == [
        (1.5, 1024, 256),
        (1.5, 2048, 256),
        (5.0, 1024, 8),
    ]
    shown = problem_public(problem).visible_tests
    assert shown[0].limits is None and shown[1].limits == problem.test_limits[1]  # only where it is the test's own


@pytest.mark.parametrize(
    ("limits", "words"),
    [
        ("{memory_mb: 8192}", "more than this server gives a test"),
        ("{time_s: 0}", "greater than or equal to 0.001"),
        ("{memory_mb: 32}", "greater than or equal to 64"),
        ("{cpu_s: 1}", "Extra inputs are not permitted"),
    ],
)
def test_a_tests_limits_out_of_bounds_are_refused_with_their_line(limits: str, words: str) -> None:
    text = LIMITED.replace("{memory_mb: 2048}", limits)
    with pytest.raises(ProblemError) as info:
        Registry(DEFAULTS, max_memory_mb=4096).parse(text, "limited.yaml")
    assert words in str(info.value) and "limited.yaml:15" in str(info.value), str(info.value)


def test_the_trusted_sides_bound_on_a_job_counts_a_load_for_each_change_of_memory() -> None:
    from grader.config import Settings
    from grader.grading.execution import job_bound_s

    registry = Registry(DEFAULTS, max_memory_mb=4096)
    plain = registry.make(registry.parse(LIMITED.replace("    limits: {memory_mb: 2048}\n", ""), "limited.yaml"))
    switching = registry.make(registry.parse(LIMITED, "limited.yaml"))  # 1024, 2048, 1024: two reloads
    sandbox = Settings(load_time_s=7.0).sandbox
    assert job_bound_s(switching, sandbox) == pytest.approx(job_bound_s(plain, sandbox) + 2 * 7.0)
