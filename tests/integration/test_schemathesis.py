"""Property-based requests from the OpenAPI document (Schemathesis) against the real service: whatever
a client sends, inside the document (positive) or just outside it (negative), the answer is never a 5xx.

Schemathesis' pytest integration (`from_fixture`) does not run on this pytest, so each operation's
Hypothesis strategy is driven directly, and every operation's failure is collected before reporting.
Random ids would only ever meet 404s, so half the cases get real ones: an existing problem (a random
source is then stored and graded for real) and existing submissions.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from tests.services import REFERENCE, WRONG

pytestmark = pytest.mark.docker

# Per operation and mode: bounded so that the whole run stays well under a minute or two.
EXAMPLES = 40
PROBLEM = "embedding-layer"


def _realistic(case: Any, data: st.DataObject, submission_ids: list[str]) -> None:
    if case.query and isinstance(case.query.get("wait"), int | float):
        # A generated source is graded in milliseconds, but ?wait= still costs a trip through the queue.
        case.query["wait"] = min(case.query["wait"], 2)
    if not data.draw(st.booleans(), label="use real ids"):
        return
    if case.path_parameters:
        if "problem_id" in case.path_parameters:
            case.path_parameters["problem_id"] = PROBLEM
        if "submission_id" in case.path_parameters:
            case.path_parameters["submission_id"] = data.draw(st.sampled_from(submission_ids), label="submission")
    if isinstance(case.body, dict) and "problem_id" in case.body:
        case.body["problem_id"] = PROBLEM


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=lambda m: m.value)
def test_no_request_makes_the_api_fail(client: TestClient, submit: Any, mode: GenerationMode) -> None:
    submission_ids = [submit(REFERENCE)["id"], submit(WRONG)["id"]]
    schema = schemathesis.openapi.from_asgi("/openapi.json", client.app)
    failures: dict[str, str] = {}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {"POST /api/submissions", "GET /api/submissions/{submission_id}"} <= {op.label for op in operations}

    for operation in operations:

        @given(case=operation.as_strategy(generation_mode=mode), data=st.data())
        @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        def run(case: Any, data: st.DataObject) -> None:
            _realistic(case, data, submission_ids)
            case.call_and_validate(checks=[not_a_server_error])

        try:
            run()
        except Unsatisfiable:
            # No input of this operation can break its schema (say, only a string in the path): nothing to send.
            assert mode is GenerationMode.NEGATIVE, operation.label
        except Exception as exc:  # noqa: BLE001 - every operation is tried; all failures are reported
            failures[operation.label] = str(exc)[:2000]
    assert not failures, "\n\n".join(f"{label}:\n{message}" for label, message in failures.items())
