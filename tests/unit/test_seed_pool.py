"""The pool of seeds: each drawn a few times, then retired and replaced in the background; the refill
is woken when a seed is retired (or none is ready), not at every draw (draws are on a submission's path)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from grader.config import Settings
from grader.grading.seeds import SeedPool


class CountingPool(SeedPool):
    kicks = 0

    def kick(self) -> None:
        self.kicks += 1


def _pool(tmp_path: Path) -> tuple[CountingPool, Any]:
    settings = Settings(data_dir=tmp_path, seed_pool_size=2, seed_uses=3)
    problem = SimpleNamespace(id="p", version="v1", tests=[SimpleNamespace(seed="fresh")])
    pool = CountingPool(settings.seeding, prepare=lambda problem, seed: None, problems=lambda: [problem])
    return pool, problem


def test_a_seed_is_drawn_seed_uses_times_and_only_its_retirement_wakes_the_refill(tmp_path: Path) -> None:
    pool, problem = _pool(tmp_path)
    assert pool.run_once() and pool.run_once()  # two seeds ready, as a running pool keeps them
    assert pool.ready_count(problem) == 2
    drawn = [pool.draw(problem) for _ in range(6)]
    assert len(set(drawn)) == 2 and all(drawn.count(seed) == 3 for seed in set(drawn))
    assert pool.ready_count(problem) == 0
    assert pool.kicks == 2, "woken once per retired seed"
    fresh = pool.draw(problem)  # none ready: a new seed at once, and the refill woken
    assert fresh is not None and fresh not in drawn and pool.kicks == 3
