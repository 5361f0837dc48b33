"""Some tests of a problem, as a problem of their own: what Run runs (the visible tests, or the
custom-input test on a learner's values), built and judged by the very code that grades a submission
(execution.py build_job, judge.py), so that Run cannot drift from Submit.

Each selected test keeps its place in the problem (`positions`): its seed is derived from that place
(seeds.py), as when the whole problem is graded, so a visible test draws the same inputs on Run as on
Submit. A selection has no pitfalls (Run gives no hints) and a version of its own, so that what is cached
for it (expected outputs) never mixes with what is cached for the problem."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from grader.grading.model import PitfallSpec, ProblemSpec, TestSpec
from sandbox.runner.messages import Limits


@dataclass(frozen=True)
class Selection:
    problem: ProblemSpec
    tests: Sequence[TestSpec]
    positions: Sequence[int]  # where each test stands in `problem` (a test not in it: its own number)
    part: str  # what the selection is, in its version: "visible", "custom"
    of_problem: bool = True  # its tests are the problem's own (not the custom test on a learner's values)

    @property
    def id(self) -> str:
        return self.problem.id

    @property
    def version(self) -> str:
        return f"{self.problem.version}:{self.part}"

    @property
    def entry_points(self) -> Sequence[str]:
        return self.problem.entry_points

    @property
    def reference(self) -> str:
        return self.problem.reference

    @property
    def helpers(self) -> str:
        return self.problem.helpers

    @property
    def forbid(self) -> Sequence[str]:
        return self.problem.forbid

    @property
    def require(self) -> Sequence[str]:
        return self.problem.require

    @property
    def speed(self) -> None:
        """None: a selection's tests are run and judged, never timed (a run, not a grading)."""
        return None

    @property
    def limits(self) -> Limits:
        return self.problem.limits

    @property
    def test_limits(self) -> Sequence[Limits]:
        """Each selected test's limits: a test of the problem keeps its own, one of no file's (the custom test)
        gets the problem's."""
        if not self.of_problem:
            return [self.problem.limits] * len(self.tests)
        return [self.problem.test_limits[position] for position in self.positions]

    @property
    def after_timeout(self) -> str:
        return self.problem.after_timeout

    @property
    def pitfalls(self) -> Sequence[PitfallSpec]:
        return ()


def visible_tests(problem: ProblemSpec) -> Selection:
    """The problem's visible tests, in file order, each where it stands in the problem."""
    chosen = [(index, test) for index, test in enumerate(problem.tests) if test.visible]
    return Selection(problem, [test for _, test in chosen], [index for index, _ in chosen], "visible")


def one_test(problem: ProblemSpec, test: TestSpec, part: str) -> Selection:
    """A test that is not one of the problem's (the custom-input test on some values), run with the
    problem's helpers and limits; it stands first (seed 0 when it is fixed)."""
    return Selection(problem, [test], [0], part, of_problem=False)


def positions_of(problem: ProblemSpec) -> Sequence[int]:
    """Where each of a problem's tests stands in the problem it was selected from (itself, for a problem)."""
    return problem.positions if isinstance(problem, Selection) else range(len(problem.tests))
