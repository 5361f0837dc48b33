"""The settings of grading, declared once as in grader/config_groups.py: the sandboxes, the judge processes,
hidden tests' seeds, and the limits a problem's tests and a submission get."""

from __future__ import annotations

import os
from dataclasses import fields
from typing import Any, Self

from pydantic import Field, model_validator

from grader.config_groups import Group, SeedMode
from sandbox.runner.messages import Limits
from sandbox.runner.protocol import MAX_RESULT_BYTES, MIN_RESULT_BYTES, MIN_TEST_TIME_S


def _default_pool_size() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


def is_gvisor(runtime: str) -> bool:
    return "runsc" in runtime or "gvisor" in runtime


class SandboxSettings(Group):
    """The sandboxes: their image, runtime and resources, the warm pool, and what a job in one may take to load
    and send back."""

    prefix = "sandbox_"
    image: str = "torchjudge-sandbox"
    runtime: str = "runc"
    # Warm containers; under gVisor twice the default unless set (_size_pool_for_the_runtime).
    pool_size: int = Field(default_factory=_default_pool_size, ge=1, le=64, alias="pool_size")
    # Jobs a warm container serves before it is replaced; 1 gives a fresh container per submission (still
    # started ahead of time, in the background). Between two jobs the runner kills every process of the last
    # one and wipes what it could write, so replacing is hygiene, not isolation; and a start (torch imported,
    # the image's files read, warmed up) costs seconds of CPU, spread over the jobs it serves
    # (docs/BENCHMARKS.md, "Costs behind the code").
    reuse: int = Field(1000, ge=1)
    cpus: float = Field(1.0, gt=0, le=64)
    pids_limit: int = Field(128, ge=16, le=4096)
    tmpfs_mb: int = Field(64, ge=1, le=4096)
    # What the runner itself (python + torch, warmed up) needs on top of a problem's memory limit.
    memory_overhead_mb: int = Field(768, ge=128)
    start_timeout_s: float = Field(60.0, gt=0)
    # Every file of the image read into the host's page cache: by the pool at start, and by each container's
    # runner before it serves (not under gVisor). Closes the "make resident" direction of the page-cache channel
    # between sandboxes (SECURITY.md); off only to measure that channel (bench/page_cache_channel.py).
    prewarm: bool = True
    # With prewarm: the pool keeps a container that holds every page of the image locked in the host's memory
    # (the image's size, about 820 MB, once per host), so that no reclaim evicts them later
    # (grader/containers/prewarm.py). Off: the image is read once at start, and may be evicted.
    pin_image: bool = True
    # How long a submission waits for a free warm sandbox before the judge gives up (internal_error).
    acquire_timeout_s: float = Field(120.0, gt=0)
    # Within what a job may carry (sandbox/runner/messages.py Job): a value the runner refuses is refused here.
    max_result_bytes: int = Field(16 * 1024 * 1024, ge=MIN_RESULT_BYTES, le=MAX_RESULT_BYTES, alias="max_result_bytes")
    load_time_s: float = Field(10.0, ge=MIN_TEST_TIME_S, le=120, alias="load_time_s")

    @model_validator(mode="before")
    @classmethod
    def _size_pool_for_the_runtime(cls, data: Any) -> Any:
        """Under gVisor a container's next child (its fork, and every page it first touches, each a trap into the
        runtime) takes longer to prepare than a submission takes to run: with only as many containers as cores,
        the next submission would wait for one (docs/BENCHMARKS.md, "Costs behind the code"). Unless
        GRADER_POOL_SIZE is set."""
        if isinstance(data, dict) and "pool_size" not in data:
            runtime = data.get("runtime", "")
            if isinstance(runtime, str) and is_gvisor(runtime):
                return {**data, "pool_size": min(64, 2 * _default_pool_size())}
        return data


class JudgeSettings(Group):
    """What a sandbox returned is judged (decoded, compared, the check's expressions evaluated) in judge
    processes of the service's own (grader/grading/isolated.py): each gets memory_mb on top of what it starts
    with and cpu_s per request, enforced by the kernel; a test whose values need more is that test's error.
    At most `processes` of them at once (0: one per sandbox, plus two)."""

    prefix = "judge_"
    memory_mb: int = Field(1024, ge=64, le=65536)
    cpu_s: float = Field(10.0, gt=0, le=600)
    processes: int = Field(0, ge=0, le=256)


class SeedSettings(Group):
    """Hidden tests' inputs per submission (grader/grading/seeds.py): "pool" draws from pool_size seeds per
    problem version whose expected outputs are ready (each used `uses` times, replaced in the background);
    "fresh" a new seed every time (a reference run per submission); "fixed" one for all."""

    prefix = "seed_"
    mode: SeedMode = Field("pool", alias="seeds")
    pool_size: int = Field(8, ge=1, le=1024)
    uses: int = Field(16, ge=1, le=1_000_000)


class LimitsSettings(Group):
    """What a problem's tests get unless they say otherwise, the most they may ask, and how large a submission
    and a batch may be."""

    default_time_s: float = Field(2.0, ge=MIN_TEST_TIME_S, le=60)
    default_memory_mb: int = Field(1024, ge=64, le=16384)
    # The most memory a problem's tests may be given (its `limits.memory_mb`): every sandbox is sized for it
    # (plus the runner's overhead), each test's process is held to its own problem's limit by the kernel
    # (sandbox/runner/confine.py); a problem asking for more is refused at load, saying so.
    max_memory_mb: int = Field(4096, ge=64, le=16384)
    default_output_kb: int = Field(256, ge=1, le=65536)
    max_source_bytes: int = Field(64 * 1024, ge=1)
    # POST /api/submissions/batch: at most this many items and bytes per batch, and batches taken in at once per
    # API process (another is answered 429 with Retry-After; its body is not read).
    max_batch_items: int = Field(1000, ge=1, le=10_000)
    max_batch_bytes: int = Field(32 * 1024 * 1024, ge=1024, le=1024 * 1024 * 1024)
    batch_concurrency: int = Field(2, ge=1, le=64)
    # Where speed-graded problems may be timed (comma-separated: cpu, cuda): a problem timed on a device not
    # listed is refused at load, saying so (grader/problems/speed.py).
    devices: str = Field("cpu", pattern=r"^(cpu|cuda)(,(cpu|cuda))*$")

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.max_memory_mb < self.default_memory_mb:
            raise ValueError("GRADER_MAX_MEMORY_MB must be at least GRADER_DEFAULT_MEMORY_MB")
        return self

    @property
    def defaults(self) -> Limits:
        """What a test gets of each limit that neither it nor its problem sets (`default_` + the limit's name)."""
        return Limits(**{limit.name: getattr(self, "default_" + limit.name) for limit in fields(Limits)})

    @property
    def device_list(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(name.strip() for name in self.devices.split(",") if name.strip()))
