"""Loads problems/*.yaml into memory, each validated on load; a bad file is refused with its name,
line and what is wrong, and the others still load.

Problems come from two places: files in the problems directory and problems uploaded through the
admin API (stored in the database). On an id clash the file wins: the directory is what the
operators keep under version control, so an upload can add problems but never silently replace a
curated one; the shadowed upload is reported in `errors` until one of the two goes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from grader.problems import strict_yaml
from grader.problems.schema import Alternative, NestedError, Pitfall, Problem, TestCase, duplicate_names
from grader.problems.speed import Speed
from sandbox.runner.messages import Limits

log = logging.getLogger(__name__)

MAX_PROBLEM_BYTES = 2 * 1024 * 1024


class ProblemError(Exception):
    """A problem file that cannot be used; the message names the file and the line."""

    def __init__(self, source: str, problems: list[tuple[int | None, str]]) -> None:
        self.source = source
        self.problems = problems
        super().__init__("\n".join(self.lines()))

    def lines(self) -> list[str]:
        return [f"{self.source}:{line}: {text}" if line else f"{self.source}: {text}" for line, text in self.problems]


@dataclass(frozen=True)
class LoadedProblem:
    """A problem as served: its file's content, its version (a hash of it), its limits in effect. It has
    what grading needs (grader/grading/model.py ProblemSpec) as attributes of its own."""

    problem: Problem
    version: str
    limits: Limits  # the problem's: what a test that sets none of its own gets
    test_limits: tuple[Limits, ...]  # each test's, in file order
    path: Path | None = None
    uploaded: bool = False

    @property
    def id(self) -> str:
        return self.problem.id

    @property
    def tests(self) -> list[TestCase]:
        return self.problem.tests

    @property
    def pitfalls(self) -> list[Pitfall]:
        return self.problem.pitfalls

    @property
    def entry_points(self) -> list[str]:
        return self.problem.entry_points

    @property
    def helpers(self) -> str:
        return self.problem.helpers

    @property
    def forbid(self) -> list[str]:
        return self.problem.forbid

    @property
    def require(self) -> list[str]:
        return self.problem.require

    @property
    def after_timeout(self) -> str:
        return self.problem.after_timeout

    @property
    def alternatives(self) -> list[Alternative]:
        return self.problem.alternatives

    @property
    def reference(self) -> str:
        return self.problem.reference

    @property
    def starter_code(self) -> str:
        return self.problem.starter_code

    @property
    def speed(self) -> Speed | None:
        return self.problem.speed

    @property
    def speed_limits(self) -> Limits:
        """Each timed call's limits: the speed section's time, else the problem's; the problem's memory and output."""
        speed = self.problem.speed
        if speed is None or speed.time_s is None:
            return self.limits
        return dataclasses.replace(self.limits, time_s=speed.time_s)


def yaml_line(root: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """The 1-based line of the YAML node at a pydantic error location (the nearest one that exists)."""
    node = root
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                    node = value
                    line = key.start_mark.line + 1
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def field_path(loc: tuple[Any, ...]) -> str:
    """A field's path as its messages print it: list positions 1-based, as test numbers are (`tests.6` is
    test 6)."""
    return ".".join(str(part + 1) if isinstance(part, int) else str(part) for part in loc) or "(top level)"


def problem_version(problem: Problem) -> str:
    return hashlib.sha256(problem.model_dump_json().encode()).hexdigest()[:16]


def parse_problem(
    text: str,
    source: str,
    *,
    max_memory_mb: int | None = None,
    devices: tuple[str, ...] | None = None,
    default_memory_mb: int | None = None,
) -> Problem:
    """Parses and validates one problem file's text; raises ProblemError naming lines. `max_memory_mb`: the
    most memory the server gives a test (a file asking for more is refused); `devices`: where this server
    can time a speed-graded problem (one asking for another is refused); `default_memory_mb`: what a test gets
    when its file says nothing (a speed-graded problem's must fit twice under max_memory_mb)."""
    if len(text.encode("utf-8", "replace")) > MAX_PROBLEM_BYTES:
        raise ProblemError(source, [(None, f"the file is larger than {MAX_PROBLEM_BYTES} bytes")])
    try:
        root, data = strict_yaml.load(text)
    except strict_yaml.YamlRefused as exc:
        raise ProblemError(source, [(exc.line, exc.message)]) from None
    except yaml.MarkedYAMLError as exc:
        # A scanner error is noticed after the token it is about (a key without its ':' is seen on the next
        # line); its context mark is where that token starts: the offending line.
        scanner = isinstance(exc, yaml.scanner.ScannerError) and exc.context_mark is not None
        mark = exc.context_mark if scanner else exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise ProblemError(source, [(line, f"YAML syntax error: {exc.problem or exc}")]) from None
    except yaml.YAMLError as exc:
        raise ProblemError(source, [(None, f"YAML error: {exc}")]) from None
    if not isinstance(data, dict):
        raise ProblemError(source, [(1, "a problem file must be a mapping of fields (id, title, tests, ...)")])
    try:
        context = {"max_memory_mb": max_memory_mb, "devices": devices, "default_memory_mb": default_memory_mb}
        problem = Problem.model_validate(data, context=context)
    except ValidationError as exc:
        found = []
        for error in exc.errors():
            loc = tuple(error["loc"])
            message = error["msg"].removeprefix("Value error, ")
            nested = (error.get("ctx") or {}).get("error")
            if isinstance(nested, NestedError):
                loc, message = loc + nested.loc, nested.message
            found.append((yaml_line(root, loc), f"{field_path(loc)}: {message}"))
        raise ProblemError(source, found) from None
    duplicates = duplicate_names(problem)
    if duplicates:
        raise ProblemError(
            source, [(yaml_line(root, loc), f"{field_path(loc)}: {message}") for loc, message in duplicates]
        )
    return problem


class Registry:
    """The problems the service knows, by id; replaced whole on reload so readers never see half."""

    def __init__(
        self, defaults: Limits, *, max_memory_mb: int | None = None, devices: tuple[str, ...] | None = None
    ) -> None:
        self.defaults = defaults
        self.max_memory_mb = max_memory_mb
        self.devices = devices
        self._problems: dict[str, LoadedProblem] = {}
        self._files: dict[str, LoadedProblem] = {}
        self._file_errors: list[ProblemError] = []
        self._uploads: dict[str, LoadedProblem] = {}
        self._upload_errors: list[ProblemError] = []
        self._lock = threading.Lock()
        self.errors: list[ProblemError] = []

    def parse(self, text: str, source: str) -> Problem:
        """parse_problem, with this server's ceilings."""
        return parse_problem(
            text,
            source,
            max_memory_mb=self.max_memory_mb,
            devices=self.devices,
            default_memory_mb=self.defaults.memory_mb,
        )

    def make(self, problem: Problem, path: Path | None = None, *, uploaded: bool = False) -> LoadedProblem:
        limits = self.defaults.under(problem.limits)
        return LoadedProblem(
            problem=problem,
            version=problem_version(problem),
            limits=limits,
            test_limits=tuple(limits.under(test.limits) for test in problem.tests),
            path=path,
            uploaded=uploaded,
        )

    def load_dir(self, directory: Path) -> list[ProblemError]:
        """Re-reads the directory; the uploads already known stay in the published set.

        A file that no longer validates keeps its last valid version served (and is reported): a file
        being edited is often saved half-way, and its problem should not vanish in the meantime."""
        loaded: dict[str, LoadedProblem] = {}
        errors: list[ProblemError] = []
        previous = {problem.path: problem for problem in self._files.values()}
        for path in problem_files(directory):
            try:
                text = path.read_text(encoding="utf-8")
                problem = self.parse(text, path.name)
            except OSError:  # removed between the listing and the read: gone
                continue
            except (UnicodeDecodeError, ProblemError) as exc:
                error = (
                    exc
                    if isinstance(exc, ProblemError)
                    else ProblemError(path.name, [(None, "the file is not UTF-8 text")])
                )
                last_valid = previous.get(path)
                if last_valid is not None and last_valid.id not in loaded:
                    loaded[last_valid.id] = last_valid
                    kept = (None, f"the last valid version of {last_valid.id!r} is still served")
                    error = ProblemError(error.source, [*error.problems, kept])
                errors.append(error)
                continue
            if problem.id in loaded:
                errors.append(
                    ProblemError(
                        path.name, [(1, f"id: {problem.id!r} is already defined by {loaded[problem.id].path}")]
                    )
                )
                continue
            loaded[problem.id] = self.make(problem, path)
        for error in errors:
            log.error("problem file refused: %s", error)
        with self._lock:
            self._files, self._file_errors = loaded, errors
            self._publish()
            return list(self.errors)

    # -- uploads -----------------------------------------------------------------------------------
    def set_uploads(self, texts: dict[str, str]) -> list[ProblemError]:
        """Replaces every upload with these stored texts (id -> YAML); one that no longer validates is
        reported and left out, the others still load."""
        uploads: dict[str, LoadedProblem] = {}
        errors: list[ProblemError] = []
        for problem_id, text in sorted(texts.items()):
            source = upload_source(problem_id)
            try:
                problem = self.parse(text, source)
            except ProblemError as exc:
                errors.append(exc)
                continue
            if problem.id != problem_id:
                errors.append(ProblemError(source, [(1, f"id: {problem.id!r} is stored under {problem_id!r}")]))
                continue
            uploads[problem_id] = self.make(problem, uploaded=True)
        for error in errors:
            log.error("stored upload refused: %s", error)
        with self._lock:
            self._uploads, self._upload_errors = uploads, errors
            self._publish()
            return list(self.errors)

    def put_upload(self, problem: LoadedProblem) -> None:
        with self._lock:
            self._uploads = {**self._uploads, problem.id: problem}
            self._upload_errors = [e for e in self._upload_errors if e.source != upload_source(problem.id)]
            self._publish()

    def remove_upload(self, problem_id: str) -> None:
        with self._lock:
            self._uploads = {key: value for key, value in self._uploads.items() if key != problem_id}
            self._upload_errors = [e for e in self._upload_errors if e.source != upload_source(problem_id)]
            self._publish()

    def file_problem(self, problem_id: str) -> LoadedProblem | None:
        """The problem a file defines under this id, served or not."""
        return self._files.get(problem_id)

    def upload(self, problem_id: str) -> LoadedProblem | None:
        """The upload stored under this id, served or shadowed by a file."""
        return self._uploads.get(problem_id)

    def _publish(self) -> None:
        """Swaps in the merged set in one assignment, so readers see the old set or the new one (lock held)."""
        shadowed = [
            ProblemError(
                upload_source(problem_id),
                [(None, f"shadowed by the file {self._files[problem_id].path}, which is served instead")],
            )
            for problem_id in sorted(self._uploads)
            if problem_id in self._files
        ]
        self._problems = {**self._uploads, **self._files}
        self.errors = [*self._file_errors, *self._upload_errors, *shadowed]

    def get(self, problem_id: str) -> LoadedProblem | None:
        return self._problems.get(problem_id)

    def all(self) -> list[LoadedProblem]:
        return sorted(self._problems.values(), key=lambda p: p.id)


def upload_source(problem_id: str) -> str:
    """How messages name an uploaded problem."""
    return f"upload:{problem_id}"


def problem_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.yaml")) + sorted(directory.glob("*.yml"))


def directory_fingerprint(directory: Path) -> frozenset[tuple[str, int, int]]:
    """Name, mtime and size of every problem file: what changes when a file is added, edited or removed."""
    found = set()
    for path in problem_files(directory):
        try:
            stat = path.stat()
        except OSError:  # removed between the listing and the stat: the next poll sees it gone
            continue
        found.add((path.name, stat.st_mtime_ns, stat.st_size))
    return frozenset(found)
