"""The queue's kind is decided in grader/queue/backends.py only: which processes grade, and what dispatcher
each gets; no other module of the service tells one backend from another."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from grader.config import Settings
from grader.queue import backends
from grader.queue.local import LocalQueue

GRADER = Path(__file__).resolve().parents[2] / "grader"


class _Progress:
    relay = None

    def wake(self, submission_id: str, final: bool = True) -> None:
        pass


def test_only_backends_names_a_backend() -> None:
    """A comparison of the setting with a backend's name, or a backend's name in a branch, anywhere else."""
    names = {"local", "celery"}
    found = []
    for path in GRADER.rglob("*.py"):
        if path.name in ("backends.py", "config_groups.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                parts = [node.left, *node.comparators]
                named = any(isinstance(part, ast.Constant) and part.value in names for part in parts)
                backend = any(isinstance(part, ast.Attribute) and part.attr == "backend" for part in parts)
                if named or backend:
                    found.append(f"{path.relative_to(GRADER)}:{node.lineno}")
    assert found == []


@pytest.mark.parametrize(
    ("queue", "role", "graded_where_taken", "graded_here"),
    [("local", "server", True, True), ("celery", "server", False, False), ("celery", "worker", False, True)],
)
def test_which_process_grades(queue: str, role: backends.Role, graded_where_taken: bool, graded_here: bool) -> None:
    queueing = Settings(queue=queue).queueing
    assert backends.grades_where_taken(queueing) is graded_where_taken
    assert backends.grades_here(queueing, role) is graded_here


def test_one_machine_gets_the_in_process_queue_of_its_size() -> None:
    queueing = Settings(queue="local", max_queue=7).queueing
    progress = _Progress()
    dispatcher = backends.dispatcher(
        queueing,
        "server",
        db=None,
        graders=3,
        handler=lambda *_: None,
        progress=progress,
        calls={},  # type: ignore[arg-type]
    )
    assert isinstance(dispatcher, LocalQueue) and dispatcher.immediate and dispatcher._max_size == 7
    assert progress.relay is None
