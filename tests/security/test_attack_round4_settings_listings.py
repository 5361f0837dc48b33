"""Round 4 attacks on the settings groups, the one limits type, and the streamed listings (no Docker).

Each test is a value that passed a check it should not have, or an answer other than a clean refusal:
- a GRADER_* value inside its setting's bounds but outside the runner's: start-up dies with the runner's
  FrameError (GRADER_DEFAULT_TIME_S), or every job is refused (GRADER_LOAD_TIME_S, GRADER_MAX_RESULT_BYTES);
- a problem file that loads but whose every job the runner's contract refuses (more tests or entry points than
  a job carries), or a speed-graded one whose default memory cannot run twice in a sandbox;
- the admin's list and export answering 500 to a time that has no UTC form;
- a start-up error that falls back to pydantic's own, printing every input (secrets too).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient
from pydantic import ValidationError

from grader.app import create_app
from grader.components import _registry
from grader.config import Settings
from grader.grading.execution import build_job
from grader.problems.registry import ProblemError, Registry
from tests.speed_results import graderless_service

PROBLEMS = Path(__file__).resolve().parents[2] / "problems"
SECRET = "round4-admin-token-never-printed"


def _registry_of(settings: Settings) -> Registry:
    limits = settings.limits
    return Registry(limits.defaults, max_memory_mb=limits.max_memory_mb, devices=limits.device_list)


def _loaded(settings: Settings, text: str) -> Any:
    registry = _registry_of(settings)
    return registry.make(registry.parse(text, "mutated.yaml"))


# -- settings ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("variable", "value"),
    [("GRADER_DEFAULT_TIME_S", "0.0005"), ("GRADER_LOAD_TIME_S", "0.0005"), ("GRADER_MAX_RESULT_BYTES", str(2**31))],
)
def test_a_setting_the_runner_refuses_is_refused_at_start_up(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, variable: str, value: str
) -> None:
    """Inside the setting's own bounds, outside the job's (sandbox/runner/messages.py): before, Settings took it,
    then start-up died in LimitsSettings.defaults with `FrameError: malformed job: time_s` (no variable named), or
    every submission's job was refused (internal_error for all)."""
    monkeypatch.setenv(variable, value)
    try:
        settings = Settings(data_dir=tmp_path)
    except ValidationError as error:
        assert variable in str(error)
        return
    registry = _registry(settings.limits)  # what start-up builds
    problem = registry.make(registry.parse((PROBLEMS / "causal-mask.yaml").read_text(), "causal-mask.yaml"))
    build_job(problem, problem.reference, settings.sandbox, seed=1)  # raises FrameError before the fix


def test_a_start_up_error_never_falls_back_to_printing_every_input(tmp_path: Path) -> None:
    """An error pydantic cannot rebuild (path_type) made _named return the original error whole: with it, the
    admin token's check printed the token (its group's input)."""
    with pytest.raises(ValidationError) as caught:
        Settings(data_dir=5, admin_token=SECRET[:12])
    assert SECRET[:12] not in str(caught.value)
    assert "GRADER_DATA_DIR" in str(caught.value)


# -- problem files ---------------------------------------------------------------------------------------
def _mutated(name: str, change: Any) -> str:
    data = yaml.safe_load((PROBLEMS / name).read_text())
    change(data)
    return yaml.safe_dump(data, sort_keys=False)


def _more_tests(data: dict[str, Any]) -> None:
    data["tests"] = [dict(copy.deepcopy(data["tests"][-1]), name=f"t{number}") for number in range(1001)]


def _more_entry_points(data: dict[str, Any]) -> None:
    extra = [f"extra_{number}" for number in range(64)]
    data["entry_points"] += extra
    data["reference"] += "\n" + "\n".join(f"def {name}():\n    return 0\n" for name in extra)
    data["starter_code"] = data["reference"]


@pytest.mark.parametrize("change", [_more_tests, _more_entry_points], ids=["1001-tests", "66-entry-points"])
def test_a_problem_that_loads_can_be_graded(change: Any) -> None:
    """Loaded and served, yet every submission's job broke the runner's contract (MAX_TESTS, MAX_ENTRY_POINTS):
    FrameError in build_job, an internal_error for each (and an upload's check raising)."""
    settings = Settings()
    try:
        problem = _loaded(settings, _mutated("causal-mask.yaml", change))
    except ProblemError:
        return
    build_job(problem, problem.reference, settings.sandbox, seed=1)


def test_a_speed_graded_problem_on_the_default_memory_fits_twice() -> None:
    """`_speed_fits` read only the file's memory: a problem leaving it out got GRADER_DEFAULT_MEMORY_MB, which
    may be more than half of GRADER_MAX_MEMORY_MB (the submission and the baseline side by side)."""
    settings = Settings(default_memory_mb=4096, max_memory_mb=4096)
    text = re.sub(r"^limits: .*$", "limits: {time_s: 4}", (PROBLEMS / "fused-softmax.yaml").read_text(), flags=re.M)
    try:
        problem = _loaded(settings, text)
    except ProblemError as refused:
        assert "GRADER_MAX_MEMORY_MB" in str(refused)
        return
    assert 2 * problem.speed_limits.memory_mb <= settings.limits.max_memory_mb


# -- the admin's list and export ---------------------------------------------------------------------------
ADMIN = "round4-listing-admin-0123456789"


@pytest.fixture(scope="module")
def admin_http(tmp_path_factory: pytest.TempPathFactory) -> Any:
    service = graderless_service(tmp_path_factory.mktemp("round4-listing"), admin_token=ADMIN)
    with TestClient(create_app(service.settings, components=service), raise_server_exceptions=False) as client:
        yield client


@pytest.mark.parametrize("url", ["/api/submissions?", "/api/submissions/export?format=csv&"])
@pytest.mark.parametrize("query", ["until=0001-01-01T00:00:00%2B14:00", "since=9999-12-31T23:59:59-14:00"])
def test_a_time_without_a_utc_form_is_refused_not_a_500(admin_http: TestClient, url: str, query: str) -> None:
    answer = admin_http.get(url + query, headers={"Authorization": f"Bearer {ADMIN}"})
    assert answer.status_code == 422, answer.text
