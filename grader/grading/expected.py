"""Expected outputs: the reference run under a submission's seed, in a process no submission touched
(a container of its own, never one that ran a submission: sandboxes given by components.py), once
per problem version, sandbox image and seed. The pitfalls' outputs, needed only to name a wrong
answer's mistake, are computed the first time a hint is looked for. Only decoded data reaches the
comparison; nothing goes back in."""

from __future__ import annotations

import base64
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from grader.config import Settings
from grader.grading.execution import MISSING, ModuleRun, Sticky, run_module
from grader.grading.model import ProblemSpec, Sandboxes
from grader.grading.seeds import seed_key
from grader.sandboxes.protocol import Outcome
from grader.sandboxes.values import MalformedValue, decode_value

log = logging.getLogger(__name__)

MEMORY_ENTRIES = 256  # decoded outputs kept in memory (the database keeps every one)


class ProblemBroken(Exception):
    """The problem's own reference fails: the author's fault, reported as internal_error."""


class Expected:
    """The reference's values per test, and (loaded on first use) each pitfall's; MISSING where a module
    returned nothing."""

    def __init__(self, reference: list[Any], pitfalls: list[list[Any]] | Callable[[], list[list[Any]]]) -> None:
        self.reference = reference
        self._pitfalls = pitfalls

    @property
    def pitfalls(self) -> list[list[Any]]:
        if callable(self._pitfalls):
            self._pitfalls = self._pitfalls()
        return self._pitfalls


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
    """Memory first (the most recent entries), then the database (through load/save), then a run."""

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
        self._memory: OrderedDict[str, Any] = OrderedDict()
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def key(self, problem: ProblemSpec, image_id: str, seed: int | None, part: str) -> str:
        return f"v3:{problem.id}:{problem.version}:{image_id}:{seed_key(problem, seed)}:{part}"

    def get(self, problem: ProblemSpec, image_id: str, seed: int | None = None) -> Expected:
        """The reference's outputs under `seed`; ProblemBroken when the reference fails its own tests."""
        count = len(problem.tests)
        loaded, values, statuses = self._entry(
            self.key(problem, image_id, seed, "reference"),
            lambda: serialise(self._run(problem, [problem.reference], seed)[0]),
            lambda raw: (raw.get("load") == Outcome.OK, *stored_values(raw, count)),
        )
        if not loaded:
            raise ProblemBroken(f"the reference of {problem.id} does not load")
        broken = [problem.tests[i].name for i, status in enumerate(statuses) if status != Outcome.OK]
        if broken:
            raise ProblemBroken(f"the reference of {problem.id} fails its own tests: {', '.join(broken[:5])}")
        return Expected(values, lambda: self.pitfalls(problem, image_id, seed))

    def pitfalls(self, problem: ProblemSpec, image_id: str, seed: int | None) -> list[list[Any]]:
        count = len(problem.tests)
        return self._entry(  # type: ignore[no-any-return]
            self.key(problem, image_id, seed, "pitfalls"),
            lambda: [serialise(run) for run in self._run(problem, [p.code for p in problem.pitfalls], seed)],
            lambda raw: [stored_values(run, count)[0] for run in raw],
        )

    def seed(
        self, problem: ProblemSpec, image_id: str, seed: int | None, reference: ModuleRun, pitfalls: list[ModuleRun]
    ) -> None:
        """Stores outputs computed elsewhere (by a problem check), so the first submission need not rerun them."""
        self._save(self.key(problem, image_id, seed, "reference"), json.dumps(serialise(reference)).encode())
        self._save(
            self.key(problem, image_id, seed, "pitfalls"), json.dumps([serialise(run) for run in pitfalls]).encode()
        )

    # -- one entry: memory, database, or computed once however many ask at once ----------------------
    def _entry(self, key: str, compute: Callable[[], Any], decode: Callable[[Any], Any]) -> Any:
        """`compute` gives what is stored (JSON), `decode` what is used."""
        with self._guard:
            if key in self._memory:
                self._memory.move_to_end(key)
                return self._memory[key]
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            with self._guard:
                if key in self._memory:
                    return self._memory[key]
            stored = self._load(key)
            if stored is None:
                stored = json.dumps(compute()).encode()
                self._save(key, stored)
            value = decode(json.loads(stored))
            with self._guard:
                self._memory[key] = value
                while len(self._memory) > MEMORY_ENTRIES:
                    self._memory.popitem(last=False)
                self._locks.pop(key, None)
            return value

    def _run(self, problem: ProblemSpec, sources: list[str], seed: int | None) -> list[ModuleRun]:
        # One container for every module in turn: they are the problem's own code.
        sandboxes = Sticky(self.sandboxes)
        try:
            return [run_module(sandboxes, problem, source, self.settings, seed=seed) for source in sources]
        finally:
            sandboxes.close()
