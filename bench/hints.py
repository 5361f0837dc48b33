"""How many pitfalls written a second way (tests/mistakes/<problem>/*.py) get their pitfall's hint, under the
matching rule of grader/grading/hints.py and under the old one (a pitfall's hint only where its outputs pass
each failing test's own rule against the submission's). One seed, every module run once in a real sandbox.

    GRADER_SANDBOX_IMAGE=... python bench/hints.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from grader.config import REPO_ROOT, Settings
from grader.grading.execution import MISSING, ModuleRun, run_module
from grader.grading.hints import matching_pitfall
from grader.grading.judge import Expected, compare, judge_module
from grader.grading.verdict import Status, TestStatus
from grader.problems.check import ProblemChecker
from grader.problems.registry import Registry, parse_problem
from sandbox.runner.messages import Limits

MISTAKES = REPO_ROOT / "tests" / "mistakes"


def old_rule(pitfalls: list[list[Any]], run: ModuleRun, tests: list, rule: Any) -> int | None:
    """The rule before: the first pitfall whose answer passes every failing test's own rule against the
    module's, and that returned nothing wherever the module returned nothing."""
    failing = [t for t in tests if t.status != TestStatus.PASSED]
    for number, values in enumerate(pitfalls):
        if failing and all(
            (values[t.index] is not MISSING and run.value(t.index) is not MISSING)
            and rule(t.index, values[t.index], run.value(t.index)).passed
            if t.status == TestStatus.FAILED
            else values[t.index] is MISSING
            for t in failing
        ):
            return number
    return None


def main() -> int:
    registry = Registry(Limits(time_s=10, memory_mb=1024, output_kb=256))
    counts = {"old": 0, "new": 0, "total": 0}
    with tempfile.TemporaryDirectory() as data:
        settings = Settings(data_dir=Path(data))
        with ProblemChecker(settings.sandbox, settings.limits) as checker:
            sandboxes = checker.sandboxes()
            for folder in sorted(path for path in MISTAKES.iterdir() if path.is_dir()):
                problem = registry.make(
                    parse_problem((REPO_ROOT / "problems" / f"{folder.name}.yaml").read_text(), "p")
                )
                count = len(problem.tests)
                reference = run_module(sandboxes, problem, problem.reference, checker.sandbox, rules=False)
                pitfalls = [
                    run_module(sandboxes, problem, p.code, checker.sandbox, rules=True) for p in problem.pitfalls
                ]
                values = [[r.value(i) for i in range(count)] for r in pitfalls]
                expected = Expected.of_values([reference.value(i) for i in range(count)], values)
                names = [p.name for p in problem.pitfalls]

                def rule(i: int, a: Any, b: Any, problem: Any = problem) -> Any:
                    return compare(problem, i, a, b)

                for path in sorted(folder.glob("*.py")):
                    wanted = path.read_text().splitlines()[0].removeprefix("# pitfall: ")
                    run = run_module(sandboxes, problem, path.read_text(), checker.sandbox, rules=True)
                    verdict = judge_module(problem, expected, run)
                    old = old_rule(values, run, verdict.tests, rule) if verdict.status == Status.WRONG_ANSWER else None
                    new = matching_pitfall(problem, expected.reference, values, run, verdict.tests, rule)
                    new = new if verdict.status == Status.WRONG_ANSWER else None
                    failed = [t.index + 1 for t in verdict.tests if t.status != TestStatus.PASSED]
                    shown = {
                        "old": names[old] if old is not None else None,
                        "new": names[new] if new is not None else None,
                    }
                    for key in ("old", "new"):
                        counts[key] += shown[key] == wanted
                    counts["total"] += 1
                    print(
                        f"{folder.name}/{path.stem}: {verdict.status.value}, fails {failed}; "
                        f"old {'ok' if shown['old'] == wanted else shown['old']}, "
                        f"new {'ok' if shown['new'] == wanted else shown['new']}",
                        flush=True,
                    )
    print(f"hinted: old rule {counts['old']}/{counts['total']}, new rule {counts['new']}/{counts['total']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
