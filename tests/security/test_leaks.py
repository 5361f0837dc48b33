"""What must never come out: the service's secrets, a hidden test's output, unbounded or raw hostile text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.conftest import wait_until_ready
from tests.security.attacks import CORRECT, EMBEDDING, FACTORY, PRELUDE, TEST_NUMBER, Context, _secret_in_environment
from tests.security.conftest import Submit, security_settings

pytestmark = pytest.mark.docker

MAX_MESSAGE = 10_000
MAX_TRACEBACK = 20_000
VISIBLE_TESTS = sum(1 for test in EMBEDDING.tests if test.visible)


def _everything_public(client: TestClient, verdict: dict) -> str:
    """Every public view of a submission: the POST answer, GET, the event stream, the HTML report."""
    views = [verdict["_raw"]]
    submission_id = verdict["id"]
    views.append(client.get(f"/api/submissions/{submission_id}").text)
    events = client.get(f"/api/submissions/{submission_id}/events")
    if events.status_code == 200:
        views.append(events.text)
    page = client.get(f"/submissions/{submission_id}")
    if page.status_code == 200:
        views.append(page.text)
    return "\n".join(views)


def test_the_service_environment_never_reaches_a_sandbox(
    sandbox_runtime: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, context: Context
) -> None:
    """A service whose own environment holds secrets; the submission looks for them in everything it can
    read (its environment, every process's environ and cmdline) and is right only if it finds one."""
    from grader.api.app import create_app
    from grader.service import Service

    monkeypatch.setenv("GRADER_ADMIN_TOKEN", context.secret)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", context.secret)
    settings = security_settings(tmp_path / "data", sandbox_runtime, pool_size=1)
    assert settings.admin_token == context.secret, "the secret is really in the service's settings"
    service = Service(settings)
    service.start()
    try:
        wait_until_ready(service)
        with TestClient(create_app(settings, service=service)) as client:
            response = client.post(
                "/api/submissions?wait=60",
                json={"problem_id": "embedding-layer", "source": _secret_in_environment(context)},
            )
            assert response.status_code == 200, response.text
            verdict = response.json()
            assert verdict["status"] == "wrong_answer", verdict
            assert context.secret not in response.text
            correct = client.post("/api/submissions?wait=60", json={"problem_id": "embedding-layer", "source": CORRECT})
            assert correct.json()["status"] == "accepted"
    finally:
        service.stop()


def test_a_hidden_test_shows_only_its_status(client: TestClient, submit: Submit, context: Context) -> None:
    """Hidden tests raise, print or return a secret-looking string; none of it may appear anywhere."""
    half = len(context.secret) // 2
    source = (
        PRELUDE
        + FACTORY
        + TEST_NUMBER
        + f'''
SECRET = "{context.secret[:half]}" + "{context.secret[half:]}"  # never whole in the source


def embed_tokens(embedding, tokens, d_model):
    number = test_number()
    if number > {VISIBLE_TESTS}:
        print(SECRET, file=sys.stderr)
        print(SECRET)
        if number % 2:
            raise RuntimeError(f"{{SECRET}} from hidden test {{number}}: {{tokens.tolist()}}")
        return SECRET
    return embedding(tokens) * math.sqrt(d_model)
'''
    )
    verdict = submit(source)
    assert verdict["status"] in ("runtime_error", "wrong_answer"), verdict
    assert verdict["message"] in ("a hidden test: error", "a hidden test: failed"), verdict["message"]
    assert context.secret not in _everything_public(client, verdict)
    hidden = [test for test in verdict["tests"] if not test["visible"]]
    assert len(hidden) == len(EMBEDDING.tests) - VISIBLE_TESTS
    for number, test in enumerate(hidden, start=1):
        assert test["name"] == f"hidden test {number}"
        assert test["status"] in ("error", "failed", "passed")
        for key in ("message", "time_ms", "details", "traceback", "hint", "line"):
            assert test.get(key) is None, (key, test)


HOSTILE_TEXT = (
    '"%s%n%x%p{0}{__class__}${jndi:ldap://x}\\x1b[2J\\x1b]0;owned\\x07\\x1b[31m'
    '<script>alert(1)</script></textarea>\\r\\n\\x00\\u202e\\ufeff" * 40_000'
)


def _hostile(where: str) -> str:
    raising = f"""
Hostile = type("<script>alert('type')</script>" + "E" * 100_000, (Exception,), {{}})
raise Hostile({HOSTILE_TEXT} + "\\ud800")
"""
    if where == "import":
        return PRELUDE + raising + FACTORY + "\n\ndef embed_tokens(embedding, tokens, d_model):\n    return None\n"
    body = "\n".join("    " + line for line in raising.strip().splitlines())
    return PRELUDE + FACTORY + f"\n\ndef embed_tokens(embedding, tokens, d_model):\n{body}\n"


@pytest.mark.parametrize("where", ["import", "test"])
def test_hostile_exception_text_is_stored_bounded_and_escaped(client: TestClient, submit: Submit, where: str) -> None:
    """Megabytes of format strings, escape codes, markup, NUL, a lone surrogate and a 100 000-character
    exception type name: the verdict is runtime_error, every text is bounded, and the JSON carries
    control characters escaped (the web page's own escaping is tested with the web pages)."""
    verdict = submit(_hostile(where))
    assert verdict["status"] == "runtime_error", verdict
    stored = client.get(f"/api/submissions/{verdict['id']}")
    for raw in (verdict["_raw"], stored.text):
        assert not any(ch in raw for ch in "\x00\x1b\x07\r"), "a raw control character in the JSON"
        public = json.loads(raw)
        texts = [(public.get("message"), MAX_MESSAGE), (public.get("traceback"), MAX_TRACEBACK)]
        for test in public["tests"]:
            texts += [(test.get("message"), MAX_MESSAGE), (test.get("traceback"), MAX_TRACEBACK)]
        assert any(text for text, _ in texts), "the error is reported"
        for text, limit in texts:
            assert text is None or len(text) < limit, len(text)
    assert submit(CORRECT)["status"] == "accepted"
