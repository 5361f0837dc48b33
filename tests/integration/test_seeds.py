"""Hidden inputs drawn for each submission (grader/grading/seeds.py), through the real service.

A solution that is right or wrong depending on a fingerprint of its inputs gets the same hidden-test
pattern every time when the inputs never change; with a seed per submission, the pattern moves. The
reference and the known mistakes keep their verdicts under every draw, and the admin can reproduce
a verdict's inputs by submitting again with its seed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from grader.components import Components, build
from grader.problems.registry import parse_problem
from tests.conftest import PROBLEMS_DIR, make_settings, wait_until_ready

pytestmark = pytest.mark.docker

ADMIN = "seeds-test-admin-token-0123456789"
EMBEDDING = parse_problem((PROBLEMS_DIR / "embedding-layer.yaml").read_text(), "embedding-layer.yaml")

# Right when the inputs' fingerprint is even, wrong (doubled) when it is odd.
FINGERPRINTED = """\
import hashlib
import math

import torch.nn as nn


def create_embedding_layer(vocab_size, d_model):
    return nn.Embedding(vocab_size, d_model)


def embed_tokens(embedding, tokens, d_model):
    fingerprint = hashlib.sha256(repr(tokens.tolist()).encode()).digest()[0]
    scale = math.sqrt(d_model) if fingerprint % 2 == 0 else 2 * math.sqrt(d_model)
    return embedding(tokens) * scale
"""


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Components, TestClient]]:
    from grader.app import create_app

    settings = make_settings(
        tmp_path_factory.mktemp("seeds"), admin_token=ADMIN, seed_pool_size=2, seed_uses=2, pool_size=2
    )
    service = build(settings)
    service.start()
    try:
        wait_until_ready(service)
        with TestClient(create_app(settings, components=service)) as client:
            yield service, client
    finally:
        service.stop()


def _submit(client: TestClient, source: str, **body: object) -> dict:
    headers = {"Authorization": f"Bearer {ADMIN}"} if "seed" in body else {}
    response = client.post(
        "/api/submissions?wait=60", json={"problem_id": "embedding-layer", "source": source, **body}, headers=headers
    )
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _hidden_pattern(client: TestClient, verdict: dict) -> tuple[str, ...]:
    """Each hidden test's status, as the admin sees them (a submitter sees how many passed only)."""
    admin = client.get(f"/api/submissions/{verdict['id']}", headers={"Authorization": f"Bearer {ADMIN}"}).json()
    return tuple(test["status"] for test in admin["tests"] if not test["visible"])


def test_a_solution_that_recognises_its_inputs_gets_different_hidden_patterns(seeded) -> None:  # type: ignore[no-untyped-def]
    _service, client = seeded
    patterns = {_hidden_pattern(client, _submit(client, FINGERPRINTED)) for _ in range(6)}
    assert len(patterns) > 1, f"six submissions, one hidden-test pattern: {patterns}"


def test_the_reference_is_accepted_and_each_mistake_refused_under_every_draw(seeded) -> None:  # type: ignore[no-untyped-def]
    _service, client = seeded
    for _ in range(3):
        assert _submit(client, EMBEDDING.reference)["status"] == "accepted"
    for pitfall in EMBEDDING.pitfalls[:3]:
        for _ in range(2):
            assert _submit(client, pitfall.module)["status"] != "accepted", pitfall.name


def test_the_admin_reproduces_a_verdicts_inputs_with_its_seed(seeded) -> None:  # type: ignore[no-untyped-def]
    service, client = seeded
    first = _submit(client, FINGERPRINTED)
    assert first.get("seed") is None, "the seed is not shown to a submitter"
    admin = {"Authorization": f"Bearer {ADMIN}"}
    seed = client.get(f"/api/submissions/{first['id']}", headers=admin).json()["seed"]
    assert isinstance(seed, int)
    again = [_submit(client, FINGERPRINTED, seed=seed) for _ in range(2)]
    assert {_hidden_pattern(client, v) for v in again} == {_hidden_pattern(client, first)}
    assert all(v["seed"] == seed for v in again)


def test_only_the_admin_chooses_a_seed(seeded) -> None:  # type: ignore[no-untyped-def]
    _service, client = seeded
    response = client.post(
        "/api/submissions", json={"problem_id": "embedding-layer", "source": FINGERPRINTED, "seed": 7}
    )
    assert response.status_code == 403, response.text
    assert "admin" in response.json()["detail"]


def test_the_seed_pool_keeps_seeds_ready_and_retires_used_ones(seeded, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    service, _client = seeded
    problem = service.registry.get("embedding-layer")
    assert problem is not None
    drawn = [service.seeds.draw(problem) for _ in range(12)]
    assert all(isinstance(seed, int) for seed in drawn)
    # Two seeds ready, each used twice: twelve draws cannot all be the same seed.
    assert len(set(drawn)) >= 4
