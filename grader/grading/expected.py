"""Expected outputs: the reference (and each pitfall) run in sandboxes of their own, once per problem
version and sandbox image. Only the decoded data reaches the comparison; nothing goes back in."""

from __future__ import annotations

import base64
import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from grader.config import Settings
from grader.grading.judge import Expected
from grader.grading.model import ProblemSpec, Sandboxes
from grader.grading.runs import MISSING, ModuleRun, Sticky, run_module
from grader.sandboxes.protocol import Outcome
from grader.sandboxes.values import MalformedValue, decode_value

log = logging.getLogger(__name__)


class ProblemBroken(Exception):
    """The problem's own reference fails: the author's fault, reported as internal_error."""


def serialise(run: ModuleRun) -> dict[str, Any]:
    """A module's run as stored: how it loaded, each test's status and returned bytes."""
    return {
        "load": run.load.status.value if run.load is not None else "crashed",
        "tests": [
            {"status": test.header.status.value, "body": base64.b64encode(test.body).decode()}
            for _, test in sorted(run.tests.items())
        ],
    }


def stored_values(raw: dict[str, Any], test_count: int) -> tuple[list[Any], list[str]]:
    """Per test: the decoded value (MISSING where none) and the runner's status."""
    values: list[Any] = [MISSING] * test_count
    statuses = ["error"] * test_count
    if raw.get("load") == Outcome.OK:
        for index, test in enumerate(raw["tests"][:test_count]):
            statuses[index] = test["status"]
            if test["status"] == Outcome.OK:
                try:
                    values[index] = decode_value(base64.b64decode(test["body"]))
                except MalformedValue:
                    statuses[index] = "error"
    return values, statuses


class ExpectedCache:
    """Memory first, then the database (through load/save), then a sandbox run of the reference."""

    def __init__(
        self,
        settings: Settings,
        sandboxes: Sandboxes,
        load: Callable[[str], bytes | None],
        save: Callable[[str, bytes], None],
    ) -> None:
        self.settings = settings
        self.sandboxes = sandboxes
        self._load = load
        self._save = save
        self._memory: dict[str, Expected] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def key(self, problem: ProblemSpec, image_id: str) -> str:
        return f"v2:{problem.id}:{problem.version}:{image_id}"

    def get(self, problem: ProblemSpec, image_id: str) -> Expected:
        key = self.key(problem, image_id)
        if key in self._memory:
            return self._memory[key]
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # one computation per key, however many submissions ask at once
            if key in self._memory:
                return self._memory[key]
            stored = self._load(key)
            if stored is None:
                stored = json.dumps(self._compute(problem)).encode()
                self._save(key, stored)
            expected = self._decode(problem, json.loads(stored))
            self._memory[key] = expected
            return expected

    def seed(self, problem: ProblemSpec, image_id: str, reference: ModuleRun, pitfalls: list[ModuleRun]) -> None:
        """Stores outputs computed elsewhere (by a problem check), so the first submission need not rerun them."""
        raw = {"reference": serialise(reference), "pitfalls": [serialise(run) for run in pitfalls]}
        key = self.key(problem, image_id)
        self._save(key, json.dumps(raw).encode())
        self._memory.pop(key, None)

    def _compute(self, problem: ProblemSpec) -> dict[str, Any]:
        # One container for the reference and every pitfall, in turn: they are the problem's own code.
        sandboxes = Sticky(self.sandboxes)
        try:
            reference = run_module(sandboxes, problem, problem.reference, self.settings)
            pitfalls = [run_module(sandboxes, problem, pitfall.code, self.settings) for pitfall in problem.pitfalls]
        finally:
            sandboxes.close()
        return {"reference": serialise(reference), "pitfalls": [serialise(run) for run in pitfalls]}

    def _decode(self, problem: ProblemSpec, raw: dict[str, Any]) -> Expected:
        count = len(problem.tests)
        reference, statuses = stored_values(raw["reference"], count)
        if raw["reference"].get("load") != Outcome.OK:
            raise ProblemBroken(f"the reference of {problem.id} does not load ({raw['reference'].get('load')})")
        broken = [problem.tests[i].name for i, status in enumerate(statuses) if status != Outcome.OK]
        if broken:
            raise ProblemBroken(f"the reference of {problem.id} fails its own tests: {', '.join(broken[:5])}")
        return Expected(reference, [stored_values(p, count)[0] for p in raw["pitfalls"]])
