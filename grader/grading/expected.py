"""Expected outputs: the reference (and each pitfall) run in a fresh sandbox, once per problem
version and sandbox image. Only the decoded data reaches the comparison; nothing goes back in."""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from grader.config import Settings
from grader.problems.registry import LoadedProblem
from grader.sandboxes.container import JobOutcome, SandboxContainer, SandboxLost
from grader.sandboxes.protocol import JobLimits, JobSpec, JobTest, Outcome
from grader.sandboxes.values import MalformedValue, decode_value

log = logging.getLogger(__name__)

MISSING = object()  # a test on which a module did not produce a value


class ProblemBroken(Exception):
    """The problem's own reference fails: the author's fault, reported as internal_error."""


@dataclass
class ModuleOutputs:
    """Per test: the decoded value, or MISSING with the runner's status."""

    values: list[Any]
    statuses: list[str]


@dataclass
class ExpectedOutputs:
    reference: ModuleOutputs
    pitfalls: list[ModuleOutputs]


def build_job(problem: LoadedProblem, source: str, settings: Settings) -> JobSpec:
    return JobSpec(
        source=source,
        entry_points=list(problem.problem.entry_points),
        limits=JobLimits(**problem.limits.as_dict()),
        tests=[JobTest(code=test.code, seed=index) for index, test in enumerate(problem.problem.tests)],
        max_result_bytes=settings.max_result_bytes,
        load_time_s=settings.load_time_s,
    )


def job_deadline(problem: LoadedProblem, settings: Settings) -> float:
    """The trusted side's own bound on a whole job: the runner enforces each test's limit itself."""
    tests = len(problem.problem.tests)
    return time.monotonic() + settings.load_time_s + tests * (problem.limits.time_s + 1.0) + 15.0


def _serialise(outcome: JobOutcome) -> dict[str, Any]:
    return {
        "compile": outcome.load.status.value,
        "tests": [
            {"status": header.status.value, "body": base64.b64encode(body).decode()} for header, body in outcome.tests
        ],
    }


def _outputs(raw: dict[str, Any], test_count: int) -> ModuleOutputs:
    values: list[Any] = [MISSING] * test_count
    statuses = ["error"] * test_count
    if raw["compile"] == Outcome.OK:
        for index, test in enumerate(raw["tests"][:test_count]):
            statuses[index] = test["status"]
            if test["status"] == "ok":
                try:
                    values[index] = decode_value(base64.b64decode(test["body"]))
                except MalformedValue:
                    statuses[index] = "error"
    return ModuleOutputs(values, statuses)


class ExpectedCache:
    """Memory first, then the database (through load/save), then a sandbox run."""

    def __init__(
        self,
        settings: Settings,
        load: Callable[[str], bytes | None],
        save: Callable[[str, bytes], None],
    ) -> None:
        self.settings = settings
        self._load = load
        self._save = save
        self._memory: dict[str, ExpectedOutputs] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def key(self, problem: LoadedProblem, image_id: str) -> str:
        return f"{problem.id}:{problem.version}:{image_id}"

    def get(self, problem: LoadedProblem, image_id: str, fresh: Callable[[], SandboxContainer]) -> ExpectedOutputs:
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
                raw = self._compute(problem, fresh)
                stored = json.dumps(raw).encode()
                self._save(key, stored)
            expected = self._decode(problem, json.loads(stored))
            self._memory[key] = expected
            return expected

    def _compute(self, problem: LoadedProblem, fresh: Callable[[], SandboxContainer]) -> dict[str, Any]:
        modules = [problem.problem.reference] + [pitfall.code for pitfall in problem.problem.pitfalls]
        last_error: Exception | None = None
        for _attempt in range(self.settings.max_attempts):
            container = None
            try:
                container = fresh()
                results = []
                for source in modules:
                    job = build_job(problem, source, self.settings)
                    results.append(_serialise(container.run_job(job, job_deadline(problem, self.settings))))
                return {"reference": results[0], "pitfalls": results[1:]}
            except SandboxLost as exc:
                last_error = exc
                log.warning("reference run for %s lost its sandbox: %s", problem.id, exc)
            finally:
                if container is not None:
                    container.remove()
        raise SandboxLost(f"could not run the reference of {problem.id}: {last_error}")

    def _decode(self, problem: LoadedProblem, raw: dict[str, Any]) -> ExpectedOutputs:
        count = len(problem.problem.tests)
        reference = _outputs(raw["reference"], count)
        if raw["reference"]["compile"] != "ok":
            raise ProblemBroken(f"the reference of {problem.id} does not load ({raw['reference']['compile']})")
        broken = [problem.problem.tests[i].name for i, status in enumerate(reference.statuses) if status != "ok"]
        if broken:
            raise ProblemBroken(f"the reference of {problem.id} fails its own tests: {', '.join(broken[:5])}")
        return ExpectedOutputs(reference, [_outputs(p, count) for p in raw["pitfalls"]])
