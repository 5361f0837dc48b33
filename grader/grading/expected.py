"""Expected outputs: the reference run under a submission's seed, in a process no submission touched
(a container of its own, never one that ran a submission: sandboxes given by components.py), once
per problem version, sandbox image and seed. The pitfalls' outputs, needed only to name a wrong
answer's mistake, are computed the first time a hint is looked for. They are kept as the bytes the
sandbox sent, decoded only where they are judged; nothing goes back in."""

from __future__ import annotations

import base64
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from grader.config_grading import SandboxSettings
from grader.containers.protocol import Outcome
from grader.containers.values import MalformedValue, decode_value
from grader.grading.execution import MISSING, ModuleRun, Sticky, bench_job, run_benchmark, run_module
from grader.grading.model import ProblemSpec, Sandboxes
from grader.grading.seeds import seed_key

log = logging.getLogger(__name__)

MEMORY_ENTRIES = 256  # outputs kept in memory (the database keeps them within GRADER_EXPECTED_CACHE_MB)
# A speed-graded problem's reference benchmark: what its calls may return in all (the kept calls of one
# grading: 9 per size, up to 8 MB each on the timed sizes), and how many seeds' are kept (in memory only: each
# grading draws its own calls, so they serve that grading's two asks; the database would grow by megabytes).
MAX_BENCH_BYTES = 256 * 1024 * 1024
BENCH_ENTRIES = 2


class ProblemBroken(Exception):
    """The problem's own reference fails: the author's fault, reported as internal_error."""


Bodies = Sequence[bytes | None]  # per test, the bytes of the value a module returned (None: it returned none)


class Expected:
    """The reference's results per test, and (loaded on first use) each pitfall's, as the sandbox sent them.

    For a submission they are decoded where it is judged, in a judge process (grading/isolated.py): `body`
    and `pitfall_bodies` are what goes there. `value`, `reference` and `pitfalls` decode in this process,
    for the problem check (the author's own modules) and for values given directly (`of_values`)."""

    def __init__(self, reference: Bodies, pitfalls: Sequence[Bodies] | Callable[[], Sequence[Bodies]]) -> None:
        self._bodies: Bodies | None = reference
        self._pitfall_bodies = pitfalls
        self._values: list[Any] | None = None
        self._pitfall_values: list[list[Any]] | None = None

    @classmethod
    def of_values(cls, reference: list[Any], pitfalls: list[list[Any]]) -> Expected:
        """Expected values already decoded (MISSING where none)."""
        expected = cls([], [])
        expected._bodies, expected._values, expected._pitfall_values = None, list(reference), list(pitfalls)
        return expected

    def body(self, index: int) -> bytes | None:
        if self._bodies is None:
            raise TypeError("these expected outputs were given decoded: they have no bytes to send")
        return self._bodies[index] if 0 <= index < len(self._bodies) else None

    @property
    def pitfall_bodies(self) -> list[list[bytes | None]]:
        if self._bodies is None:
            raise TypeError("these expected outputs were given decoded: they have no bytes to send")
        if callable(self._pitfall_bodies):
            self._pitfall_bodies = self._pitfall_bodies()
        return [list(bodies) for bodies in self._pitfall_bodies]

    def value(self, index: int) -> Any:
        """Test `index`'s expected value, decoded in this process."""
        if self._values is not None:
            return self._values[index] if 0 <= index < len(self._values) else MISSING
        return decoded(self.body(index))

    @property
    def reference(self) -> list[Any]:
        """Every test's expected value, decoded in this process."""
        if self._values is None:
            self._values = [decoded(body) for body in self._bodies or []]
        return self._values

    @property
    def pitfalls(self) -> list[list[Any]]:
        """Each pitfall's values, decoded in this process."""
        if self._pitfall_values is None:
            self._pitfall_values = [[decoded(body) for body in bodies] for bodies in self.pitfall_bodies]
        return self._pitfall_values


def decoded(body: bytes | None) -> Any:
    """A value's bytes decoded in this process; MISSING for none, or for bytes that are not a value."""
    if body is None:
        return MISSING
    try:
        return decode_value(body)
    except MalformedValue:
        return MISSING


def serialise(run: ModuleRun) -> dict[str, Any]:
    """A module's run as stored: how it loaded, each test's status and returned bytes."""
    return {
        "load": run.load.status.value if run.load is not None else "crashed",
        "tests": [
            {"status": test.header.status.value, "body": base64.b64encode(test.body).decode()}
            for _, test in sorted(run.tests.items())
        ],
    }


def stored_bodies(raw: dict[str, Any], test_count: int) -> tuple[list[bytes | None], list[str]]:
    """Per test: the bytes of the value (None where none) and the runner's status; nothing decoded."""
    bodies: list[bytes | None] = [None] * test_count
    statuses = ["error"] * test_count
    if raw.get("load") == Outcome.OK:
        for index, test in enumerate(raw["tests"][:test_count]):
            statuses[index] = test["status"]
            if test["status"] == Outcome.OK:
                bodies[index] = base64.b64decode(test["body"])
    return bodies, statuses


class ExpectedCache:
    """Memory first (the most recent entries), then the database (through load/save), then a run."""

    def __init__(
        self,
        sandbox: SandboxSettings,
        sandboxes: Sandboxes,
        load: Callable[[str], bytes | None],
        save: Callable[[str, bytes], None],
    ) -> None:
        self.sandbox = sandbox
        self.sandboxes = sandboxes
        self._load = load
        self._save = save
        self._memory: OrderedDict[str, Any] = OrderedDict()
        self._benches: OrderedDict[str, dict[tuple[int, int], bytes]] = OrderedDict()
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def key(self, problem: ProblemSpec, image_id: str, seed: int | None, part: str) -> str:
        return f"v4:{problem.id}:{problem.version}:{image_id}:{seed_key(problem, seed)}:{part}"

    def get(self, problem: ProblemSpec, image_id: str, seed: int | None = None) -> Expected:
        """The reference's outputs under `seed`; ProblemBroken when the reference fails its own tests."""
        count = len(problem.tests)
        loaded, bodies, statuses = self._entry(
            self.key(problem, image_id, seed, "reference"),
            lambda: serialise(self._run(problem, [problem.reference], seed)[0]),
            lambda raw: (raw.get("load") == Outcome.OK, *stored_bodies(raw, count)),
        )
        if not loaded:
            raise ProblemBroken(f"the reference of {problem.id} does not load")
        broken = [problem.tests[i].name for i, status in enumerate(statuses) if status != Outcome.OK]
        if broken:
            raise ProblemBroken(f"the reference of {problem.id} fails its own tests: {', '.join(broken[:5])}")
        return Expected(bodies, lambda: self.pitfalls(problem, image_id, seed))

    def pitfalls(self, problem: ProblemSpec, image_id: str, seed: int | None) -> list[list[bytes | None]]:
        count = len(problem.tests)
        return self._entry(  # type: ignore[no-any-return]
            self.key(problem, image_id, seed, "pitfalls"),
            lambda: [serialise(run) for run in self._run(problem, [p.module for p in problem.pitfalls], seed)],
            lambda raw: [stored_bodies(run, count)[0] for run in raw],
        )

    def seed(
        self, problem: ProblemSpec, image_id: str, seed: int | None, reference: ModuleRun, pitfalls: list[ModuleRun]
    ) -> None:
        """Stores outputs computed elsewhere (by a problem check), so the first submission need not rerun them."""
        self._save(self.key(problem, image_id, seed, "reference"), json.dumps(serialise(reference)).encode())
        self._save(
            self.key(problem, image_id, seed, "pitfalls"), json.dumps([serialise(run) for run in pitfalls]).encode()
        )

    def bench(
        self, problem: ProblemSpec, image_id: str, seed: int, calls: Sequence[tuple[int, int]]
    ) -> dict[tuple[int, int], bytes]:
        """What the reference returns on the given calls, (size, call), of the problem's benchmark under `seed`,
        each on the inputs that call gets (a submission's kept calls: a benchmark draws them as it goes); made
        once per seed and call. ProblemBroken when the reference fails on its own benchmark."""
        key = f"v5:{problem.id}:{problem.version}:{image_id}:bench-{seed}"
        wanted = sorted(set(calls))
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            with self._guard:
                known = self._benches.get(key, {})
                if key in self._benches:
                    self._benches.move_to_end(key)
            missing = [call for call in wanted if call not in known]
            try:
                made = self._reference_bench(problem, seed, missing) if missing else {}
            finally:
                with self._guard:
                    if key not in self._benches:
                        self._locks.pop(key, None)
            with self._guard:
                entry = {**self._benches.get(key, {}), **made}
                if sum(len(body) for body in entry.values()) > MAX_BENCH_BYTES:
                    entry = dict(made)  # what was kept of earlier calls gives way to this one's
                self._benches[key] = entry
                self._benches.move_to_end(key)
                while len(self._benches) > BENCH_ENTRIES:
                    dropped, _ = self._benches.popitem(last=False)
                    if dropped != key:
                        self._locks.pop(dropped, None)
            return {call: entry[call] if call in entry else known[call] for call in wanted}

    def _reference_bench(
        self, problem: ProblemSpec, seed: int, calls: list[tuple[int, int]]
    ) -> dict[tuple[int, int], bytes]:
        sandboxes = Sticky(self.sandboxes)  # the references' own containers: no submission ever ran there
        try:
            job = bench_job(
                problem, problem.reference, "", self.sandbox, seed, max_total_bytes=MAX_BENCH_BYTES + 1, only=calls
            )
            run = run_benchmark(sandboxes, job)
        finally:
            sandboxes.close()
        outcome, name = run.outcome, problem.id
        if outcome is None:
            raise ProblemBroken(f"the reference of {name} took its sandboxes down during its benchmark")
        if outcome.load.status != Outcome.OK:
            raise ProblemBroken(f"the reference of {name} does not load for its benchmark: {outcome.load.message}")
        end = outcome.end
        if end is not None and end.status == Outcome.OUTPUT:
            raise ProblemBroken(f"the benchmark of {name} returns more than {MAX_BENCH_BYTES >> 20} MB in all")
        if end is None or end.status != Outcome.OK:
            where = f" at call {end.call} of size {end.size}" if end is not None and end.call is not None else ""
            why = f"{end.error_type or end.status}: {end.message}" if end is not None else "no end"
            raise ProblemBroken(f"the reference of {name} fails its own benchmark{where}: {why}")
        if sum(len(body) for body in outcome.calls.values()) > MAX_BENCH_BYTES:
            raise ProblemBroken(f"the benchmark of {name} returns more than {MAX_BENCH_BYTES >> 20} MB in all")
        return outcome.calls

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
            return [run_module(sandboxes, problem, source, self.sandbox, seed=seed, rules=False) for source in sources]
        finally:
            sandboxes.close()
