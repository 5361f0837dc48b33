"""Runs (POST /api/runs) cannot put learner code where trusted outputs are made (issue 24, point 1).

  - A run that carries test bodies of its own is refused (422, saying what to send instead): a body that
    read the reference's module once came back as `expected` with the reference in it, from the one
    container that computed every submission's expected outputs.
  - Custom inputs are data: whatever would smuggle code (strings where numbers are declared, NaN or
    infinities, nesting, sizes, names not declared, Python in a value) is refused with a 422 that names the
    argument, before any sandbox is touched.
  - No container runs both the reference and code a learner sent; learner code on Run runs in the runs pool
    only (never a grading or reference container), and the references pool serves graded submissions only.
  - A learner module that hunts its own container for the reference (frames, gc, linecache, sys.modules,
    the files it can read) finds nothing of it, on the visible tests and on a custom input.

Under runc and gVisor (tests/security/conftest.py), each with a service of this file's own.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from grader.components import Components, build
from grader.containers.container import SandboxContainer
from grader.problems.registry import parse_problem
from tests.conftest import PROBLEMS_DIR, wait_until_ready
from tests.security.attacks import CORRECT
from tests.security.conftest import security_settings

pytestmark = pytest.mark.docker

EMBEDDING = parse_problem((PROBLEMS_DIR / "embedding-layer.yaml").read_text(), "embedding-layer.yaml")
MARK = "a-learner-wrote-this-7f3a"
LEARNER = CORRECT + f"\nLEARNER_MARK = '{MARK}'\n"
MHA = parse_problem((PROBLEMS_DIR / "multi-head-attention.yaml").read_text(), "multi-head-attention.yaml")
# The reference's own lines: what no run answer may ever show (the starter code's are public). A value
# is shown cut (its first characters), so the start of a line is enough to be caught.
SECRET_LINES = [
    line.strip()
    for line in MHA.reference.splitlines()
    if len(line.strip()) > 24 and line.strip() not in MHA.starter_code
]


def leaks(text: str) -> list[str]:
    return [line for line in SECRET_LINES if line[:16] in text.replace("\\n", "\n")]


# The attack of issue 24: a test body of one's own that reads the module it runs beside (the reference).
READS_THE_REFERENCE = """\
import sys, linecache
found = [''.join(lines) for name, (_, _, lines, _) in list(linecache.cache.items()) if 'submission' in name]
module = sys.modules.get('submission')
return {'source': ''.join(found) or repr(getattr(module, '__dict__', {}).keys())}
"""

# A learner module that looks everywhere it can for the reference, prints what it finds (a visible test
# shows what was printed), and otherwise does what the starter does.
HUNTER = """\
import gc, linecache, os, sys
import torch.nn as nn

def _hunt():
    found = []
    for name, entry in list(linecache.cache.items()):
        found.append(f"linecache {name}: " + "".join(entry[2]))
    for obj in gc.get_objects():
        code = getattr(obj, "__code__", None)
        if code is not None and code.co_filename != "<submission>":
            found.append(f"code {code.co_filename}:{code.co_name} {code.co_consts!r:.200}")
    for frame in sys._current_frames().values():
        while frame is not None:
            found.append(f"frame {frame.f_code.co_filename} {sorted(frame.f_globals)!r:.200}")
            frame = frame.f_back
    found.append("modules " + " ".join(sorted(sys.modules)))
    tops = ["/tmp", "/var/tmp", "/run", "/home", "/root", "/srv"] + ([os.getcwd()] if os.getcwd() != "/" else [])
    for top in tops:
        for root, _dirs, files in os.walk(top):
            for file in files[:500]:
                try:
                    with open(os.path.join(root, file), errors="replace") as handle:
                        found.append(f"file {root}/{file}: " + handle.read(20000))
                except OSError:
                    pass
    return "\\n".join(found)

FOUND = _hunt()
print(FOUND[-3500:])

def create_multi_head_attention(d_model, num_heads):
    print(_hunt()[-3500:])
    return nn.Linear(d_model, d_model)
"""


@pytest.fixture(scope="module")
def served(sandbox_runtime: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Components, TestClient]]:
    from grader.app import create_app

    settings = security_settings(tmp_path_factory.mktemp(f"runs-{sandbox_runtime}"), sandbox_runtime)
    settings = settings.replace(run_rate_per_minute=0)
    components = build(settings)
    components.start()
    try:
        wait_until_ready(components)
        with TestClient(create_app(settings, components=components)) as client:
            yield components, client
    finally:
        components.stop()


@pytest.fixture
def jobs(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every job any container runs while the test runs: which pool's container, and what it ran."""
    seen: list[dict[str, Any]] = []
    lock = threading.Lock()
    run_job = SandboxContainer.run_job

    def recorded(self: SandboxContainer, job: Any, *args: Any, **kwargs: Any) -> Any:
        with lock:
            seen.append(
                {"owner": self.owner, "name": self.name, "source": job.source, "tests": [t.code for t in job.tests]}
            )
        return run_job(self, job, *args, **kwargs)

    monkeypatch.setattr(SandboxContainer, "run_job", recorded)
    return seen


def run_jobs(components: Components, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The jobs of runs: in the runs' pools, or with the learner's mark (the grading side works meanwhile:
    the seed pool computes expected outputs in the background)."""
    owners = {components.runs.pool.owner, components.runs.references.owner}
    return [job for job in jobs if job["owner"] in owners or MARK in job["source"] + "".join(job["tests"])]


def test_a_run_that_carries_test_bodies_is_refused_and_shows_nothing_of_the_reference(
    served: tuple[Components, TestClient], jobs: list[dict[str, Any]]
) -> None:
    components, client = served
    body = {"problem_id": MHA.id, "source": f"x = '{MARK}'\n", "tests": [{"code": READS_THE_REFERENCE}]}
    response = client.post("/api/runs", json=body)
    assert not leaks(response.text), "the reference came back"
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert detail.startswith("tests: a run takes no test code of its own") and "`inputs`" in detail
    assert run_jobs(components, jobs) == [], "refused before any sandbox"


@pytest.mark.parametrize(
    ("inputs", "named"),
    [
        ("{\"tokens\": \"__import__('os').system('id')\"}", "inputs.tokens: expected a list"),
        ('{"tokens": [[1, 2]], "vocab_size": "5); import os; (5"}', "inputs.vocab_size: expected an integer"),
        ('{"tokens": [[NaN]]}', "inputs.tokens[0][0]: expected an integer (int64), got a number nan"),
        ('{"d_model": Infinity}', "inputs.d_model: expected an integer (int64), got a number inf"),
        ('{"tokens": ' + "[" * 150 + "1" + "]" * 150 + "}", "inputs.tokens[0][0]: expected an integer"),
        ('{"tokens": [' + ", ".join(["[1]"] * 20_000) + "]}", "inputs.tokens: more than 1024 elements"),
        ('{"tokens": [[1]], "layer": "nn.Module()"}', "inputs: no argument named 'layer'"),
        ('{"tokens": [[1, 2.5]]}', "inputs.tokens[0][1]: expected an integer (int64), got a number 2.5"),
        ('{"tokens": [[1, 99]]}', "inputs.tokens[0][1]: 99 is above the maximum, vocab_size - 1 = 4"),
        ('{"tokens": {"__class__": "x"}}', "inputs.tokens: expected a list"),
        ('{"tokens": [[true]]}', "inputs.tokens[0][0]: expected an integer (int64), got true"),
    ],
)
def test_inputs_that_would_carry_code_are_refused_before_any_sandbox(
    served: tuple[Components, TestClient], jobs: list[dict[str, Any]], inputs: str, named: str
) -> None:
    components, client = served
    head = json.dumps({"problem_id": "embedding-layer", "source": LEARNER})
    response = client.post(
        "/api/runs", content=f'{head[:-1]}, "inputs": {inputs}}}', headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 422, response.text
    assert named in response.json()["detail"], response.json()["detail"]
    assert len(response.content) < 4096
    assert run_jobs(components, jobs) == [], "refused before any sandbox"


def test_nesting_past_the_parser_is_refused_too(served: tuple[Components, TestClient], jobs: list) -> None:
    components, client = served
    head = json.dumps({"problem_id": "embedding-layer", "source": LEARNER})
    deep = "[" * 100_000 + "1" + "]" * 100_000
    response = client.post(
        "/api/runs",
        content=f'{head[:-1]}, "inputs": {{"tokens": {deep}}}}}',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 422 and "recursion limit" in response.json()["detail"], response.text
    assert run_jobs(components, jobs) == []


def test_no_container_runs_the_reference_and_code_a_learner_sent(
    served: tuple[Components, TestClient], jobs: list[dict[str, Any]]
) -> None:
    components, client = served
    body_of_ones_own = f"return {{'mark': '{MARK}'}}"
    client.post(
        "/api/runs", json={"problem_id": "embedding-layer", "source": LEARNER, "tests": [{"code": body_of_ones_own}]}
    )
    assert client.post("/api/runs", json={"problem_id": "embedding-layer", "source": LEARNER}).status_code == 200
    custom = {"problem_id": "embedding-layer", "source": LEARNER, "inputs": {"tokens": [[4, 1]]}}
    assert client.post("/api/runs", json=custom).json()["status"] == "accepted"
    learners = [job for job in jobs if MARK in job["source"] + "".join(job["tests"])]
    assert learners, "the learner's code ran"
    assert {job["owner"] for job in learners} == {components.runs.pool.owner}, "learner code runs in the runs pool only"
    assert components.runs.pool.owner not in (components.pool.owner, components.references.owner)
    author = {EMBEDDING.reference, *(pitfall.module for pitfall in EMBEDDING.pitfalls)}
    trusted = {job["name"] for job in jobs if job["source"] in author}
    assert trusted, "the reference ran (the visible tests' expected outputs, and on the custom input)"
    assert not {job["name"] for job in learners} & trusted, "a container ran the reference and learner code"
    on_runs = [job for job in jobs if job["owner"] == components.runs.references.owner]
    assert on_runs and {job["source"] for job in on_runs} == {EMBEDDING.reference}


@pytest.mark.parametrize("inputs", [None, {"d_model": 4, "num_heads": 2}], ids=["visible tests", "custom input"])
def test_a_module_that_hunts_its_container_for_the_reference_finds_nothing(
    served: tuple[Components, TestClient], inputs: dict | None
) -> None:
    _components, client = served
    body: dict[str, Any] = {"problem_id": MHA.id, "source": HUNTER}
    if inputs is not None:
        body["inputs"] = inputs
    response = client.post("/api/runs", json=body)
    assert response.status_code == 200, response.text
    printed = "".join(test.get("output") or "" for test in response.json()["tests"])
    assert "modules " in printed or "linecache" in printed or "file " in printed, "the hunt ran and printed"
    assert not leaks(response.text), "the reference was found"
