"""What a submission returns cannot grow the service: it is judged in processes the kernel bounds
(grader/grading/isolated.py), behind guards on every node kind of a check's expressions
(grader/grading/guards.py). Against the real service, under each sandbox runtime.

The service runs in this test's process (tests/security/conftest.py), so this process's peak memory is
the service's: judging the values in it, as before, grew it by a gigabyte and more."""

from __future__ import annotations

import resource
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.security.attacks import CORRECT
from tests.security.conftest import Submit

pytestmark = pytest.mark.docker

GROWTH_KIB = 200 * 1024  # what the service may grow by while judging the attack (it would be 1.2 GB)

# embedding-layer's hidden test "end to end with the submission's own layer" checks
#   out: {expect: "weight[tokens] * math.sqrt(10)"}
# over the weights and tokens the test returns. The submission makes the layer 3,000 wide (144 KB of weights)
# and the test's own tokens tensor 50,000 long (400 KB): weight[tokens] is 150 million floats (600 MB), and the
# product another 600 MB.
WIDE_LOOKUP = """\
import math

import torch
import torch.nn as nn


def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, 3000 if d_model == 10 else d_model)


def embed_tokens(embedding, tokens, d_model):
    out = embedding(tokens) * math.sqrt(d_model)
    if d_model == 10 and tokens.dim() == 2 and embedding.weight.shape[1] == 3000:
        with torch.no_grad():
            tokens.resize_(50_000).zero_()
    return out
"""


def _peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def test_a_check_expression_over_returned_values_cannot_grow_the_service(submit: Submit, client: TestClient) -> None:
    before = _peak_kib()
    verdict = submit(WIDE_LOOKUP)
    grown = _peak_kib() - before
    assert verdict["status"] in ("wrong_answer", "runtime_error"), verdict["status"]
    assert grown < GROWTH_KIB, f"the service grew by {grown // 1024} MiB judging the attack"
    assert client.get("/healthz").status_code == 200
    assert submit(CORRECT)["status"] == "accepted"


def test_the_service_itself_never_decodes_what_a_sandbox_returned(
    submit: Submit, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wrong answer with a hint, and a run with expected against got, while decoding a value in the
    service's own process fails: every value is decoded in a judge process."""

    def refuse(_body: bytes) -> Any:
        raise AssertionError("a value was decoded in the service's process")

    import grader.containers.values
    import grader.grading.execution
    import grader.grading.expected

    for module in (grader.containers.values, grader.grading.execution, grader.grading.expected):
        monkeypatch.setattr(module, "decode_value", refuse)
    unscaled = CORRECT.replace("* math.sqrt(d_model)", "")
    verdict = submit(unscaled)
    assert verdict["status"] == "wrong_answer"
    assert verdict["hint"], "the pitfall's hint (matched in a judge process)"
    first = next(test for test in verdict["tests"] if test["visible"] and test["status"] == "failed")
    assert first["details"]["reason"] == "values differ"
    run = client.post("/api/runs", json={"problem_id": "embedding-layer", "source": unscaled})
    assert run.status_code == 200, run.text
    shown = next(test for test in run.json()["tests"] if test["status"] == "failed")
    assert shown["expected"] and shown["got"]
