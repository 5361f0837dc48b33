"""The problem file, as pydantic models: validated once, when the file is loaded."""

from __future__ import annotations

import ast
import dataclasses
import keyword
from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from grader.grading import checkers
from grader.problems.custom_test import CustomTest, clashes
from grader.problems.rules import NestedError, compiled_body, forbiddable, known_checker, parsed_check
from grader.problems.speed import Speed
from sandbox.runner import messages as runner

ID_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _file_limits() -> dict[str, Any]:
    """Each per-test limit (sandbox/runner/messages.py, `Limits`) as a file may set it: optional, within the
    range a file may ask, described as there."""
    found: dict[str, Any] = {}
    for limit in dataclasses.fields(runner.Limits):
        low, high = limit.metadata["file"]
        kind = int if limit.type == "int" else float
        found[limit.name] = (kind | None, Field(None, ge=low, le=high, description=limit.metadata["description"]))
    return found


class Limits(pydantic.create_model("FileLimits", __base__=Strict, **_file_limits())):  # type: ignore[misc]
    """A problem's limits for each of its tests, or one test's own: a limit a test leaves out is the
    problem's, and one the problem leaves out the server's default (GRADER_DEFAULT_*)."""

    @field_validator("memory_mb")
    @classmethod
    def _within_the_server(cls, memory_mb: int | None, info: ValidationInfo) -> int | None:
        """A limit the server cannot give is refused at load (its sandboxes are sized for its maximum)."""
        ceiling = (info.context or {}).get("max_memory_mb")
        if memory_mb is not None and ceiling is not None and memory_mb > ceiling:
            raise ValueError(
                f"{memory_mb} MB is more than this server gives a test: at most {ceiling} MB (GRADER_MAX_MEMORY_MB)"
            )
        return memory_mb


class TestCase(Strict):
    """One test: code run once with the reference and once with the submission, outputs compared."""

    name: str = Field(min_length=1, max_length=200, description="unique within the problem; shown if visible")
    visible: bool = Field(False, description="visible tests show their code, name, message and details")
    weight: float = Field(1.0, gt=0, description="share of the score")
    code: str = Field(
        min_length=1,
        description="the body of a function with torch, nn, F, math, np and the entry points in scope, run after "
        "torch, random and numpy are seeded with the test's seed (see `seed`); returns a dict (or any value) of "
        "tensors, numbers, bools, strings, None, and lists, tuples or dicts of these",
    )
    seed: Literal["fixed", "fresh"] | None = Field(
        None,
        description="fresh: the test's randomness is drawn anew for each submission (from a seed the judge "
        "picks and records); fixed: always the same (the test's position). Left out: fixed for a visible test, "
        "else the problem's `seed`",
    )
    limits: Limits | None = Field(
        None, description="this test's own limits (time_s, memory_mb, output_kb); what it leaves out is the problem's"
    )
    checker: str = Field(
        checkers.DEFAULT,
        description="the comparison rule (grader/grading/checkers/): "
        + "; ".join(f"{name}: {checkers.get(name).description}" for name in checkers.names()),
    )
    check: dict[str, Any] = Field(
        default_factory=dict,
        json_schema_extra={
            "additionalProperties": {
                "anyOf": [checkers.get(name).options.model_json_schema() for name in checkers.names()]
            }
        },
        description="the checker's options per top-level key of the returned dict; for `tolerance`: rtol and atol "
        "(floats elsewhere get rtol 1e-5, atol 1e-6, widened for low-precision dtypes; everything that is not a float "
        "is compared exactly), or round (decimals), or expect (an expression computing the expected value from the "
        "submission's returned keys), or holds (expressions that must be true)",
    )
    trivial: str | None = Field(
        None,
        min_length=1,
        max_length=300,
        description="why an answer that ignores the question (all zeros or ones, one constant, random values, the "
        "input unchanged, the answer on other inputs) passing this test is intended; without it the check refuses "
        "such a test",
    )

    @field_validator("checker")
    @classmethod
    def _known_checker(cls, name: str) -> str:
        return known_checker(name)

    @field_validator("check")
    @classmethod
    def _checker_options(cls, check: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        name = info.data.get("checker")
        if name is None:  # the checker itself is refused; that error is enough
            return check
        return parsed_check(name, check)

    @field_validator("code")
    @classmethod
    def _compiles(cls, code: str) -> str:
        return compiled_body(code)


class Pitfall(Strict):
    """A known wrong solution: it must fail a test, and a submission giving its outputs gets its hint. Or, with
    `slow`, a correct one too slow for a speed-graded problem: it must pass every test and be refused as slow."""

    name: str = Field(min_length=1, max_length=200, description="unique within the problem; never shown")
    hint: str = Field(min_length=1, max_length=2000, description="shown to a submission that makes this mistake")
    code: str = Field(
        min_length=1,
        description="a whole module defining every entry point, or only the functions and classes of the reference "
        "that make the mistake: then the module run is the reference followed by this code, whose definitions "
        "replace the reference's of the same names; never shown",
    )
    slow: bool = Field(
        False,
        description="a correct solution too slow for the speed threshold (a speed-graded problem only): "
        "`grader problems check` requires it to pass every test and to be refused as slow",
    )
    # The module that is run: `code`, or the reference followed by it (a partial pitfall); set by Problem.
    _module: str | None = PrivateAttr(None)
    _offset: int = PrivateAttr(0)

    @field_validator("code")
    @classmethod
    def _code_compiles(cls, source: str) -> str:
        return _compiled_module(source)

    @property
    def module(self) -> str:
        """The module run for this pitfall (in the reference's sandbox and in the check's)."""
        return self._module if self._module is not None else self.code

    @property
    def line_offset(self) -> int:
        """Lines of the module before the pitfall's own code (the reference's, for a partial pitfall)."""
        return self._offset


class Alternative(Strict):
    """Another correct solution, written differently: `grader problems check` requires it to be accepted."""

    name: str = Field(min_length=1, max_length=200, description="unique within the problem; never shown")
    code: str = Field(min_length=1, description="a whole module defining every entry point; never shown")


class Problem(Strict):
    """A problem file (problems/<id>.yaml). See docs/problems.md."""

    id: str = Field(pattern=ID_PATTERN, max_length=64, description="lower-case words joined by '-'; unique")
    title: str = Field(min_length=1, max_length=200)
    source: str = Field("", description="where the problem comes from (paper, section)")
    difficulty: Literal["easy", "medium", "hard"]
    tags: list[str] = Field(default_factory=list)
    track: str | None = Field(
        None, min_length=1, max_length=100, description="the track (a series of problems done in order) it belongs to"
    )
    order: int | None = Field(None, ge=1, le=100_000, description="its place in its track (or in the list): 1 first")
    statement: str = Field(min_length=1, description="Markdown; $...$ and $$...$$ are TeX math")
    starter_code: str = Field(min_length=1, description="what a student starts from: every entry point, unfinished")
    entry_points: list[str] = Field(
        min_length=1, max_length=runner.MAX_ENTRY_POINTS, description="the functions a submission must define"
    )
    reference: str = Field(min_length=1, description="the trusted solution; runs only in the sandbox; never shown")
    limits: Limits = Field(default_factory=Limits)
    seed: Literal["fixed", "fresh"] = Field(
        "fresh",
        description="the default `seed` of the hidden tests: fresh (each submission gets new inputs, so hidden "
        "tests cannot be memorised) or fixed; visible tests are fixed unless they say otherwise",
    )
    hidden_results: Literal["summary", "per-test"] = Field(
        "summary",
        description="what a submitter sees of the hidden tests: summary (how many passed and the number of the "
        "first that did not) or per-test (also each one's status, once the verdict is in; never a name, message, "
        "details, time or output)",
    )
    after_timeout: Literal["skip", "run"] = Field(
        "skip",
        description="skip: once a test runs out of time, the submission's later tests are not run (each `skipped`, "
        "counted as failed), so a solution that loops costs one time limit, not one per test; run: every test runs",
    )
    forbid: list[str] = Field(
        default_factory=list,
        max_length=32,
        description="dotted names a submission may not use (torch.nn.functional.scaled_dot_product_attention): "
        "refused in its source under any alias (compile_error, with the line), and replaced in its process by a "
        "function that fails the test that calls it, however it was reached",
    )
    require: list[str] = Field(
        default_factory=list,
        max_length=32,
        description="dotted names a submission must use (under any alias); a source that never does is refused",
    )

    @field_validator("forbid", "require")
    @classmethod
    def _dotted_names(cls, names: list[str]) -> list[str]:
        return forbiddable(names)

    helpers: str = Field(
        "",
        description="Python run in each test's namespace (reference, submission, pitfalls, alternatives) before the "
        "test's code: its names are in scope in every test; shown on the problem page",
    )
    tests: list[TestCase] = Field(min_length=1, max_length=runner.MAX_TESTS)  # as many as a job carries
    custom_test: CustomTest | None = Field(
        None,
        description="the test a learner runs on values of their own (POST /api/runs with `inputs`): its arguments "
        "declared (types, shapes, ranges, defaults), its body written for them; without it, Run takes the visible "
        "tests only",
    )
    pitfalls: list[Pitfall] = Field(
        default_factory=list,
        description="known wrong solutions, each with its hint; a pitfall may define only the reference's functions "
        "or classes it gets wrong (the rest are the reference's)",
    )
    alternatives: list[Alternative] = Field(
        default_factory=list,
        description="other correct solutions (whole modules), never shown: the check requires each to be accepted "
        "under every seed it tries",
    )
    speed: Speed | None = Field(
        None,
        description="speed grading: correct on every test, then timed against a baseline on inputs the problem "
        "builds, and accepted when at least `threshold` times as fast (docs/problems.md, Speed-graded problems)",
    )

    @model_validator(mode="before")
    @classmethod
    def _runs_gone(cls, data: Any) -> Any:
        """`runs:` (all | visible-only) said whether Run took test bodies a learner wrote; it takes values for
        `custom_test` now, and only those. Files stored with it still load; it means nothing any more."""
        if isinstance(data, dict) and data.get("runs") in ("all", "visible-only"):
            data = {key: value for key, value in data.items() if key != "runs"}
        return data

    @model_validator(mode="after")
    def _custom_test_names(self) -> Problem:
        clash = clashes(self.custom_test, self.entry_points) if self.custom_test is not None else None
        if clash is not None:
            raise NestedError(("custom_test", "arguments"), clash)
        return self

    @model_validator(mode="after")
    def _helpers_leave_entry_points_alone(self) -> Problem:
        """Helpers run in each test's namespace after the entry points are put there: one of the same name
        would replace the submission's in every test (and any starter code would pass)."""
        try:
            bound = top_level_names(self.helpers) if self.helpers else set()
        except SyntaxError:
            return self
        shadowed = [name for name in self.entry_points if name in bound]
        if shadowed:
            names = ", ".join(f"`{name}`" for name in shadowed)
            raise NestedError(
                ("helpers",),
                f"defines {names}, which {'is an entry point' if len(shadowed) == 1 else 'are entry points'}: in "
                "the tests it would replace the submission's own; give the helper another name",
            )
        return self

    @model_validator(mode="after")
    def _speed_fits(self, info: ValidationInfo) -> Problem:
        """The function timed is an entry point each baseline defines; two processes of the problem's memory fit
        in a sandbox (the submission's and the baseline's run side by side)."""
        if self.speed is None:
            return self
        call = self.speed.call or self.entry_points[0]
        if call not in self.entry_points:
            raise NestedError(("speed", "call"), f"{call!r} is not an entry point ({', '.join(self.entry_points)})")
        for index, baseline in enumerate(self.speed.baselines):
            try:
                defined = top_level_names(baseline.code, imports=False)
            except SyntaxError:
                continue
            if call not in defined:
                raise NestedError(("speed", "baselines", index, "code"), f"does not define {call}, the function timed")
        ceiling, default = ((info.context or {}).get(key) for key in ("max_memory_mb", "default_memory_mb"))
        memory = self.limits.memory_mb or default  # left out: the server's GRADER_DEFAULT_MEMORY_MB
        if ceiling is not None and memory is not None and 2 * memory > ceiling:
            raise NestedError(
                ("limits", "memory_mb"),
                f"a speed-graded problem's {memory} MB must fit twice in a sandbox (the submission and the baseline "
                f"run side by side): at most {ceiling // 2} MB here (half of GRADER_MAX_MEMORY_MB)",
            )
        return self

    @model_validator(mode="after")
    def _slow_pitfalls(self) -> Problem:
        """A slow pitfall is refused for its speed: only a speed-graded problem has one."""
        for index, pitfall in enumerate(self.pitfalls):
            if pitfall.slow and self.speed is None:
                raise NestedError(("pitfalls", index, "slow"), "only a speed-graded problem (with `speed`) has one")
        return self

    @model_validator(mode="after")
    def _partial_pitfalls(self) -> Problem:
        """A pitfall that does not define every entry point is completed by the reference: the module run is
        the reference, then the pitfall's code. It must replace something the reference defines."""
        try:
            reference_names = top_level_names(self.reference, imports=False)
        except SyntaxError:
            return self  # the reference's own error says enough
        prefix = self.reference.rstrip("\n") + "\n\n\n"
        for index, pitfall in enumerate(self.pitfalls):
            names = top_level_names(pitfall.code)
            if set(self.entry_points) <= names:
                continue
            if not top_level_names(pitfall.code, imports=False) & reference_names:
                missing = ", ".join(sorted(set(self.entry_points) - names))
                raise NestedError(
                    ("pitfalls", index, "code"),
                    "defines neither every entry point (a whole module) nor any function or class of the reference "
                    f"(a partial pitfall, completed by the reference); missing: {missing}",
                )
            pitfall._module = prefix + pitfall.code
            pitfall._offset = prefix.count("\n")
        return self

    @model_validator(mode="after")
    def _resolve_seeds(self) -> Problem:
        """Every test's `seed` made explicit, so that what a test draws never depends on a default."""
        resolved = [
            test if test.seed is not None else test.model_copy(update={"seed": "fixed" if test.visible else self.seed})
            for test in self.tests
        ]
        object.__setattr__(self, "tests", resolved)  # frozen: set once, while the model is being built
        return self

    @field_validator("entry_points")
    @classmethod
    def _identifiers(cls, names: list[str]) -> list[str]:
        for name in names:
            if not name.isidentifier() or keyword.iskeyword(name):
                raise ValueError(f"{name!r} is not a Python function name")
        if len(set(names)) != len(names):
            raise ValueError("entry points must be unique")
        return names

    @field_validator("reference", "starter_code", "helpers")
    @classmethod
    def _module_compiles(cls, source: str) -> str:
        return _compiled_module(source)


def _compiled_module(source: str) -> str:
    try:
        compile(source, "<module>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise ValueError(f"does not compile: line {exc.lineno}: {exc.msg}") from exc
    except ValueError as exc:  # a null byte
        raise ValueError(f"does not compile: {exc}") from exc
    return source


def top_level_names(source: str, *, imports: bool = True) -> set[str]:
    """The names a module binds at its top level: functions, classes, assignments, and imports (unless
    `imports` is False)."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name))
        elif imports and isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def duplicate_names(problem: Problem) -> list[tuple[tuple[str | int, ...], str]]:
    """Each repeated test or pitfall name, with the location of the repeat."""
    found: list[tuple[tuple[str | int, ...], str]] = []
    for field, kind, names in (
        ("tests", "test", [t.name for t in problem.tests]),
        ("pitfalls", "pitfall", [p.name for p in problem.pitfalls]),
        ("alternatives", "alternative", [a.name for a in problem.alternatives]),
    ):
        seen: set[str] = set()
        for index, name in enumerate(names):
            if name in seen:
                found.append(((field, index, "name"), f"two {kind}s are named {name!r}"))
            seen.add(name)
    return found
