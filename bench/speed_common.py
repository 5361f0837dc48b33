"""What the speed benchmarks share (speed_fidelity.py, speed_noise.py): the judge's speed grading on warm sandboxes
of the local engine, with no service, database or cache around it."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from grader.config import Settings
from grader.containers.pool import SandboxPool
from grader.grading.expected import ExpectedCache
from grader.grading.judge import LOCAL
from grader.grading.speed import SpeedGrader


@dataclass(frozen=True)
class SpeedBench:
    settings: Settings
    pool: SandboxPool
    grader: SpeedGrader


@contextmanager
def speed_bench(runtime: str) -> Iterator[SpeedBench]:
    """A SpeedGrader on a pool of two warm sandboxes under `runtime`; SystemExit when no sandbox starts."""
    settings = Settings(data_dir=Path(tempfile.mkdtemp()), sandbox_runtime=runtime, load_time_s=30)
    pool = SandboxPool(settings.sandbox, settings.limits, owner="bench-speed", size=2, keep_image=False)
    pool.start()
    try:
        if pool.image_id is None:
            raise SystemExit(f"no sandbox: {pool.last_error}")
        expected = ExpectedCache(settings.sandbox, pool, load=lambda key: None, save=lambda key, data: None)
        yield SpeedBench(settings, pool, SpeedGrader(settings.sandbox, pool, expected, LOCAL))
    finally:
        pool.close()
