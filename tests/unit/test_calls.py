"""The calls an API makes to the workers under Celery (grader/queue/calls.py): typed on both ends. A worker
validates the request before it acts and always answers with its call's answer model; what the API reads
back is validated too (another process wrote it)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from grader.config import Settings
from grader.queue.calls import CHECK_TASK, RUN_TASK, CheckAnswer, CheckCall, Refusal, RunAnswer, RunCall
from grader.queue.celery_app import make_celery


def _worker(tmp_path: Path, calls: dict) -> tuple[object, list]:
    replies: list = []
    app = make_celery(
        Settings(data_dir=tmp_path, queue="celery").queueing,
        calls=calls,
        reply=lambda key, result: replies.append((key, result)),
    )
    return app, replies


def test_a_worker_answers_a_call_with_its_typed_answer(tmp_path: Path) -> None:
    seen: list = []

    def run(call: RunCall) -> RunAnswer:
        seen.append(call)
        return RunAnswer(refused=Refusal(status=409, detail="changed"))

    app, replies = _worker(tmp_path, {RUN_TASK: run, CHECK_TASK: lambda call: CheckAnswer(unavailable="none")})
    payload = RunCall(problem_id="p", version="v1", request={"source": "x"}).model_dump(mode="json")
    app.tasks[RUN_TASK].run(payload, "reply-key", time.time() + 30)  # type: ignore[attr-defined]
    assert seen == [RunCall(problem_id="p", version="v1", request={"source": "x"})]
    assert replies == [("reply-key", {"error": None, "run": None, "refused": {"status": 409, "detail": "changed"}})]
    assert RunAnswer.model_validate(replies[0][1]).refused == Refusal(status=409, detail="changed")


@pytest.mark.parametrize(
    "payload",
    [{"problem_id": "p"}, {"problem_id": "p", "version": "v", "request": {}, "extra": 1}, ["not", "an", "object"]],
    ids=["missing", "extra", "list"],
)
def test_a_malformed_request_is_answered_with_an_error_and_never_acted_on(tmp_path: Path, payload: object) -> None:
    acted: list = []
    app, replies = _worker(tmp_path, {RUN_TASK: acted.append, CHECK_TASK: acted.append})
    app.tasks[RUN_TASK].run(payload, "k", time.time() + 30)  # type: ignore[attr-defined]
    assert not acted
    answer = RunAnswer.model_validate(replies[0][1])
    assert answer.error is not None and answer.error.startswith("ValidationError") and answer.run is None


def test_a_call_past_its_deadline_is_dropped(tmp_path: Path) -> None:
    acted: list = []
    app, replies = _worker(tmp_path, {CHECK_TASK: acted.append, RUN_TASK: acted.append})
    app.tasks[CHECK_TASK].run(CheckCall(text="t", source="s").model_dump(), "k", time.time() - 1)  # type: ignore[attr-defined]
    assert not acted and not replies


def test_answers_are_strict() -> None:
    with pytest.raises(ValidationError):
        RunAnswer.model_validate({"refused": {"status": 200, "detail": "ok"}})  # not a refusal's status
    with pytest.raises(ValidationError):
        CheckAnswer.model_validate({"report": None, "surprise": True})
