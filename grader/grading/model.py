"""What grading needs to know of a problem and of its sandboxes, as protocols.

grading/ sits below problems/ (which loads problem files, checks them through the Grader, and keeps
the registry): it never imports it. A problem as loaded (problems/registry.py LoadedProblem) has
these attributes; so does anything a test builds by hand.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from grader.containers.container import SandboxContainer
from sandbox.runner.messages import Limits


class TestSpec(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def visible(self) -> bool: ...
    @property
    def weight(self) -> float: ...
    @property
    def code(self) -> str: ...
    @property
    def seed(self) -> str | None: ...  # "fixed" or "fresh" (grading/seeds.py)
    @property
    def checker(self) -> str: ...
    @property
    def check(self) -> Mapping[str, Any]: ...


class PitfallSpec(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def hint(self) -> str: ...
    @property
    def code(self) -> str: ...
    @property
    def module(self) -> str: ...  # what is run: `code`, or the reference followed by it (a partial pitfall)


class ProblemSpec(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def entry_points(self) -> Sequence[str]: ...
    @property
    def reference(self) -> str: ...
    @property
    def helpers(self) -> str: ...  # run before every test's code
    @property
    def after_timeout(self) -> str: ...  # "skip": the tests after one that timed out are not run; or "run"
    @property
    def forbid(self) -> Sequence[str]: ...  # dotted names the submission may not use
    @property
    def require(self) -> Sequence[str]: ...  # names it must use
    @property
    def speed(self) -> Any: ...  # its speed grading (problems/speed.py Speed), None where it has none
    @property
    def limits(self) -> Limits: ...  # the problem's (a test of no file's own, the custom test, gets these)
    @property
    def test_limits(self) -> Sequence[Limits]: ...  # each test's, resolved once: one per test in `tests`
    @property
    def tests(self) -> Sequence[TestSpec]: ...
    @property
    def pitfalls(self) -> Sequence[PitfallSpec]: ...


class Sandboxes(Protocol):
    """Where containers come from: a warm pool (containers/pool.py), or a wrapper of one (grading/execution.py)."""

    @property
    def image_id(self) -> str | None: ...

    def acquire(self, timeout: float | None = None, due_in_s: float = 3600.0) -> SandboxContainer: ...

    def release(self, container: SandboxContainer, reusable: bool) -> None: ...

    def engine_ok(self) -> bool: ...
