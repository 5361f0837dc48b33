"""Seeds: what a test's randomness is drawn from. A test on fixed inputs is seeded with its position, as
an author wrote it; a test on fresh inputs (every hidden test, by default) with a number derived from
the submission's own seed, which the judge picks, records on the verdict and never shows. Hidden inputs
thus differ from one submission to the next while each test's structure (shapes, edge cases) stays
what its author wrote, and a solution that recognises the inputs it once saw gains nothing.

Expected outputs are computed per seed (expected.py). Computing them costs a reference run, so by
default the judge keeps a small pool of seeds per problem version whose outputs are ready, each used a
few times and replaced in the background (SeedPool); GRADER_SEEDS=fresh draws a new seed for every
submission (its reference run on the grading path), and =fixed one seed for all (as if every test
were fixed: the baseline of `make bench`).
"""

from __future__ import annotations

import hashlib
import logging
import random
import secrets
import threading
from collections.abc import Callable, Sequence

from grader.background import BackgroundLoop
from grader.config_grading import SeedSettings
from grader.grading.model import ProblemSpec
from grader.grading.selection import positions_of

log = logging.getLogger(__name__)

MAX_SEED = 2**63 - 1
FIXED_SEED = 0  # the seed of every submission under GRADER_SEEDS=fixed


def new_seed() -> int:
    return secrets.randbits(63)


def derive(seed: int, index: int) -> int:
    """Test `index`'s seed under submission seed `seed`: unrelated to its neighbours', in [0, 2**63)."""
    digest = hashlib.sha256(f"torchjudge:{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & MAX_SEED


def draws_fresh(problem: ProblemSpec) -> bool:
    """Whether a submission's seed matters: a test draws fresh inputs, or the problem is speed-graded (its
    benchmark's inputs are drawn from the submission's seed: grading/speed.py)."""
    return any(test.seed == "fresh" for test in problem.tests) or problem.speed is not None


def per_test_seeds(problem: ProblemSpec, seed: int | None) -> list[int]:
    """Each test's seed: its position when fixed, derived from the submission's seed when fresh. The
    position is the test's place in its problem, also when only some tests run (selection.py: Run)."""
    return [
        derive(seed, index) if test.seed == "fresh" and seed is not None else index
        for index, test in zip(positions_of(problem), problem.tests, strict=True)
    ]


def seed_key(problem: ProblemSpec, seed: int | None) -> str:
    """What expected outputs depend on: the seed, unless no test draws fresh inputs."""
    return f"seed-{seed}" if draws_fresh(problem) and seed is not None else "fixed"


class SeedPool(BackgroundLoop):
    """Seeds whose expected outputs are ready, per problem version. draw() takes one (a use of it);
    a seed used `seed_uses` times is retired; a background thread keeps `seed_pool_size` ready, one
    reference run at a time. With nothing ready, draw() gives a new seed, whose outputs the caller's
    grading then computes."""

    thread_name = "seed-pool"
    interval_s = 5.0

    def __init__(
        self,
        seeding: SeedSettings,
        prepare: Callable[[ProblemSpec, int], None],
        problems: Callable[[], Sequence[ProblemSpec]],
    ) -> None:
        self.seeding = seeding
        self.prepare = prepare  # computes (and caches) the expected outputs of a problem under a seed
        self.problems = problems
        self._ready: dict[str, list[list[int]]] = {}  # "id:version" -> [[seed, uses left], ...]
        self._lock = threading.Lock()
        super().__init__()

    def draw(self, problem: ProblemSpec) -> int | None:
        """The seed for a new submission of `problem` (None when no test draws fresh inputs)."""
        if not draws_fresh(problem):
            return None
        mode = self.seeding.mode
        if mode == "fixed":
            return FIXED_SEED
        if mode == "fresh":
            return new_seed()
        with self._lock:
            ready = self._ready.get(_key(problem), [])
            entry = random.choice(ready) if ready else None
            retired = entry is None
            if entry is not None:
                entry[1] -= 1
                if entry[1] <= 0:
                    ready.remove(entry)
                    retired = True
        if retired:  # one seed fewer ready: the refill starts now (not at every draw: it runs on a submission's path)
            self.kick()
        return entry[0] if entry is not None else new_seed()

    def offer(self, problem: ProblemSpec, seeds: Sequence[int | None]) -> None:
        """Seeds whose expected outputs were computed elsewhere (an upload's check): ready to be drawn."""
        if not draws_fresh(problem) or self.seeding.mode != "pool":
            return
        with self._lock:
            ready = self._ready.setdefault(_key(problem), [])
            known = {entry[0] for entry in ready}
            room = self.seeding.pool_size - len(ready)
            for seed in [seed for seed in seeds if seed is not None and seed not in known][: max(0, room)]:
                ready.append([seed, self.seeding.uses])

    def ready_count(self, problem: ProblemSpec) -> int:
        with self._lock:
            return len(self._ready.get(_key(problem), []))

    def start(self) -> None:
        if self.seeding.mode == "pool":
            super().start()

    def run_once(self) -> bool:
        """One seed more for each problem short of ready ones; whether any was added."""
        worked = False
        for problem in self.problems():
            if self.stopping:
                return False
            if draws_fresh(problem) and self.ready_count(problem) < self.seeding.pool_size:
                worked |= self._add_one(problem)
        return worked

    def _add_one(self, problem: ProblemSpec) -> bool:
        seed = new_seed()
        try:
            self.prepare(problem, seed)
        except Exception as exc:  # reported to whoever grades with it; the pool tries a new seed later
            log.warning("expected outputs of %s under a new seed unavailable: %s", problem.id, exc)
            return False
        with self._lock:
            self._ready.setdefault(_key(problem), []).append([seed, self.seeding.uses])
        return True


def _key(problem: ProblemSpec) -> str:
    return f"{problem.id}:{problem.version}"
