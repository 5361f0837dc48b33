"""What a speed-graded submission's sandbox is sent (grader/grading/speed.py): the submission and the public
baseline, never the reference nor a hidden test; the benchmark's seed follows the submission's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grader.config import REPO_ROOT, Settings
from grader.containers.losses import SandboxLost
from grader.containers.protocol import BENCH_JOB, KEPT, PREFIX, BenchJob
from grader.grading.judge import LOCAL
from grader.grading.speed import SpeedGrader, bench_seed
from grader.grading.verdict import Status, Verdict
from grader.problems.registry import Registry
from sandbox.runner.messages import Limits

MARK = "REFERENCE-ONLY-8c1f"


class Recorder:
    """A container that keeps what it is sent and is then lost (the grader tries a second, then gives up)."""

    name = "recorder"

    def __init__(self, sent: list[bytes]) -> None:
        self.sent = sent

    def send(self, frame: bytes, deadline: float) -> None:
        self.sent.append(frame)

    def next_frame(self, deadline: float) -> Any:
        raise SandboxLost("recorded")


class Sandboxes:
    image_id = "image"

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def acquire(self, timeout: float | None = None, due_in_s: float = 3600.0) -> Recorder:
        return Recorder(self.sent)

    def release(self, container: Any, reusable: bool) -> None:
        pass

    def engine_ok(self) -> bool:
        return True


class Expected:
    """The reference's values: 10 bytes for each call asked for."""

    def __init__(self) -> None:
        self.asked: list[list[tuple[int, int]]] = []

    def bench(self, problem: Any, image_id: str, seed: int, calls: list[tuple[int, int]]) -> dict:
        self.asked.append(list(calls))
        return {call: b"x" * 10 for call in calls}


def _problem() -> Any:
    text = (REPO_ROOT / "problems" / "pairwise-distances.yaml").read_text()
    text = text.replace(
        "      return torch.cdist(x, y)\n\nlimits", f"      return torch.cdist(x, y)  # {MARK}\n\nlimits"
    )
    registry = Registry(Limits(time_s=2, memory_mb=1024, output_kb=64))
    problem = registry.make(registry.parse(text, "pairwise-distances.yaml"))
    assert MARK in problem.reference
    return problem


def _job(frame: bytes) -> BenchJob:
    magic, kind, head, body = PREFIX.unpack_from(frame)
    assert kind == BENCH_JOB
    return BenchJob.parse(frame[PREFIX.size + head : PREFIX.size + head + body])


def test_a_submissions_benchmark_carries_the_submission_and_the_baseline_only(tmp_path: Path) -> None:
    problem = _problem()
    sandboxes = Sandboxes()
    expected = Expected()
    grader = SpeedGrader(Settings(data_dir=tmp_path).sandbox, sandboxes, expected, LOCAL)  # type: ignore[arg-type]
    verdict = grader.grade(problem, "def pairwise_distances(x, y):\n    pass\n", 99, Verdict(status=Status.ACCEPTED))
    assert verdict.status == Status.RUNTIME_ERROR  # both containers "lost": the submission's doing
    assert len(sandboxes.sent) == 2
    for frame in sandboxes.sent:
        assert MARK.encode() not in frame
        assert not any(test.code.encode() in frame for test in problem.tests)
        job = _job(frame)
        assert job.subject.startswith("def pairwise_distances(x, y):\n    pass")
        assert job.baseline == problem.speed.baseline_code()
        assert job.bench.seed == bench_seed(problem, 99) != bench_seed(problem, 100)
        assert job.max_ratio > 0  # a hopeless submission is stopped early
        assert job.max_result_bytes == 2 * 10 + 64 * 1024  # twice the reference's largest value, and a margin
        kept = 3 * (1 + min(problem.speed.repeats, KEPT))  # the first call of each size and KEPT timed ones
        assert job.total_bytes() == 10 * kept * 5 // 4 + 1024 * 1024  # in all: the reference's, and margins
    # Before the benchmark, the reference's first call at each size only: the calls it checks are drawn as it goes.
    assert expected.asked == [[(0, 0), (1, 0), (2, 0)]]
