"""The calls an API makes to the workers under Celery (queue/celery_app.py CeleryDispatcher.call), typed: each
call's request and its answer, validated on both ends (what crosses Redis is JSON another process wrote).

  CHECK_TASK  an upload's problem check: CheckCall -> CheckAnswer (the report, or why there is none)
  RUN_TASK    a run (POST /api/runs): RunCall -> RunAnswer (the run, a refusal with its HTTP status, or an error)

The report and the run themselves are the upper layers' models (problems/check/report.py CheckReport,
submissions/runs.py RunPublic), carried here as their JSON and validated by their callers.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

CHECK_TASK = "torchjudge.check_problem"
RUN_TASK = "torchjudge.run"


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CheckCall(_Message):
    text: str
    source: str


class RunCall(_Message):
    problem_id: str
    version: str  # the problem's version the API saw: a worker with another one refuses (409)
    request: dict[str, Any]  # submissions/runs.py RunRequest, as JSON


class Refusal(_Message):
    status: int = Field(ge=400, le=599)
    detail: str


class Answer(_Message):
    # A call that failed on the worker, whatever failed (celery_app.py answers every call).
    error: str | None = None


class CheckAnswer(Answer):
    report: dict[str, Any] | None = None  # problems/check/report.py CheckReport, as JSON
    unavailable: str | None = None  # no sandbox for the check on that worker


class RunAnswer(Answer):
    run: dict[str, Any] | None = None  # submissions/runs.py RunPublic, as JSON
    refused: Refusal | None = None


REQUESTS: dict[str, type[_Message]] = {CHECK_TASK: CheckCall, RUN_TASK: RunCall}
ANSWERS: dict[str, type[Answer]] = {CHECK_TASK: CheckAnswer, RUN_TASK: RunAnswer}
