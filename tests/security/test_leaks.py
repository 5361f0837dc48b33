"""What must never come out: the service's secrets, a hidden test's output, unbounded or raw hostile text."""

from __future__ import annotations

import json
import re
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
    from grader.app import create_app
    from grader.components import build

    monkeypatch.setenv("GRADER_ADMIN_TOKEN", context.secret)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", context.secret)
    settings = security_settings(tmp_path / "data", sandbox_runtime, pool_size=1)
    assert settings.access.admin_token == context.secret, "the secret is really in the service's settings"
    service = build(settings)
    service.start()
    try:
        wait_until_ready(service)
        with TestClient(create_app(settings, components=service)) as client:
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
    assert len(hidden) == len(EMBEDDING.tests) - VISIBLE_TESTS == verdict["hidden"]["total"]
    for number, test in enumerate(hidden, start=1):
        assert test["name"] == f"hidden test {number}"
        assert test["status"] is None, "a hidden test's status is not shown one by one"
        for key in ("message", "time_ms", "details", "traceback", "hint", "line", "output"):
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


# -- a problem made for probing: a hidden test first, then visible ones ---------------------------------
PROBE_PROBLEM = """\
id: probe
title: Probe
difficulty: easy
statement: Return what you are given.
starter_code: |
  def echo(x):
      return None

  def keyed(x):
      return None
entry_points: [echo, keyed]
reference: |
  def echo(x):
      return x

  def keyed(x):
      return {"a": x}
tests:
  - name: hidden first
    code: |
      marker = "tjhidden" + "-" + "c0ffee-in-the-hidden-test"
      return {"out": echo(len(marker))}
  - name: echo after the hidden test
    visible: true
    code: |
      return {"out": echo(2)}
  - name: keyed
    visible: true
    code: |
      return {"out": keyed(3)}
"""
HIDDEN_MARKER = "tjhidden-c0ffee-in-the-hidden-test"
ADMIN = "leaks-admin-token-0123456789abcdef"

# -- problems made for the status channel: what each hidden test's code says, a trit ---------------------
# A submission reads the running test's code through its caller's frame and answers with the status the
# code names: 0 passes, 1 fails, 2 raises. Two problems whose hidden tests say different things but come to
# the same summary (2 of 6 passed, the first that did not: hidden test 2, raising), and one that opts in.
CHANNELS = {
    "channel-a": ((0, 2, 1, 0, 1, 2), "summary"),
    "channel-b": ((0, 2, 2, 0, 1, 1), "summary"),
    "channel-per-test": ((0, 2, 1, 0, 1, 2), "per-test"),
}
STATUS_OF = {0: "passed", 1: "failed", 2: "error"}


def channel_problem(problem_id: str, pattern: tuple[int, ...], hidden_results: str) -> str:
    hidden = "".join(
        f"""  - name: hidden {number}
    code: |
      key = "trit-{trit}"
      return {{"out": echo({number})}}
"""
        for number, trit in enumerate(pattern, 1)
    )
    return f"""\
id: {problem_id}
title: Channel
difficulty: easy
statement: Return what you are given.
hidden_results: {hidden_results}
starter_code: |
  def echo(x):
      return None
entry_points: [echo]
reference: |
  def echo(x):
      return x
tests:
  - name: visible
    visible: true
    code: |
      return {{"out": echo(0)}}
{hidden}"""


READS_ITS_CALLER = """
import sys


def echo(x):
    for const in sys._getframe(1).f_code.co_consts:
        if isinstance(const, str) and const.startswith("trit-"):
            if const == "trit-1":
                return x + 1
            if const == "trit-2":
                raise RuntimeError("trit" + " two")
    return x
"""


@pytest.fixture(scope="module")
def probe_client(sandbox_runtime: str, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from grader.app import create_app
    from grader.components import build

    problems = tmp_path_factory.mktemp("probe-problems")
    (problems / "probe.yaml").write_text(PROBE_PROBLEM)
    for problem_id, (pattern, results) in CHANNELS.items():
        (problems / f"{problem_id}.yaml").write_text(channel_problem(problem_id, pattern, results))
    settings = security_settings(
        tmp_path_factory.mktemp("probe-data"), sandbox_runtime, pool_size=1, problems_dir=problems, admin_token=ADMIN
    )
    service = build(settings)
    service.start()
    try:
        wait_until_ready(service)
        with TestClient(create_app(settings, components=service)) as client:
            yield client
    finally:
        service.stop()


def _probe(client: TestClient, source: str, problem_id: str = "probe") -> dict:
    response = client.post("/api/submissions?wait=60", json={"problem_id": problem_id, "source": source})
    assert response.status_code == 200, response.text
    verdict = response.json()
    verdict["_raw"] = response.text
    return verdict


def test_code_of_a_test_already_run_is_gone(probe_client: TestClient) -> None:
    """After the hidden test, the submission looks for its code where a process keeps what it ran: the
    line cache, and every object the garbage collector knows (functions, their code's constants,
    namespaces). Whatever it finds it raises as the message of the visible test that follows."""
    source = """
import gc
import linecache

PARTS = ["tjhidden", "-c0ffee-in-the-hidden-test"]  # the marker is never whole in this module


def _found():
    needle = "".join(PARTS)
    found = [f"linecache {name}" for name in list(linecache.cache) if name == "<test 1>"]
    for obj in gc.get_objects():
        try:
            if callable(obj) and hasattr(obj, "__code__") and needle in obj.__code__.co_consts:
                found.append("a function's constants")
            elif isinstance(obj, dict) and needle in obj.values():
                found.append("a namespace")
        except Exception:
            pass
    return found


def echo(x):
    if x == 2:
        found = _found()
        if found:
            raise RuntimeError("found: " + ", ".join(found))
    return x


def keyed(x):
    return {"a": x}
"""
    verdict = _probe(probe_client, source)
    assert verdict["status"] == "accepted", verdict["tests"]


def test_messages_the_judge_builds_are_bounded(probe_client: TestClient) -> None:
    """ "keys differ (missing [...], unexpected [...])" once listed every key a submission returned: 250
    keys of 60 000 characters (15 MB) now give a message of at most 4 KiB, a verdict of at most 256 KiB,
    and an event stream and a report page of the same order."""
    source = """
def echo(x):
    return x


def keyed(x):
    return {f"k{i:03d}" + "x" * 60_000: i for i in range(250)}
"""
    verdict = _probe(probe_client, source)
    assert verdict["status"] == "wrong_answer", verdict["message"]
    failed = next(test for test in verdict["tests"] if test["status"] == "failed")
    assert failed["message"].startswith("keys differ"), failed["message"]
    assert len(failed["message"]) <= 4096
    assert len(verdict["_raw"]) <= 256 * 1024
    submission_id = verdict["id"]
    assert len(probe_client.get(f"/api/submissions/{submission_id}").content) <= 256 * 1024
    assert len(probe_client.get(f"/api/submissions/{submission_id}/events").content) <= 1024 * 1024
    assert len(probe_client.get(f"/submissions/{submission_id}").content) <= 1024 * 1024


def _public_views(client: TestClient, verdict: dict) -> dict[str, object]:
    """What a submitter can see of a submission, per view, with what differs between any two submissions
    (ids, times, the problem) left out: the POST answer, GET, each event of the stream, the report's rows.
    A hidden test's own time is never shown; the visible test's is left out as any run's time would be."""
    submission_id = verdict["id"]
    unrelated = {"id", "problem_id", "problem_version", "created_at", "started_at", "finished_at"}

    def scrub(body: dict) -> dict:
        """Without what differs between runs of the same tests (ids, times; the visible test's duration)."""
        kept = {key: value for key, value in body.items() if key not in unrelated | {"time_ms"}}
        if isinstance(kept.get("tests"), list):
            kept["tests"] = [scrub(test) for test in kept["tests"]]
        return kept

    stream = client.get(f"/api/submissions/{submission_id}/events").text
    events = [json.loads(line[5:]) for line in stream.splitlines() if line.startswith("data:")]
    page = client.get(f"/submissions/{submission_id}").text
    rows = re.findall(r'<tr class="result-row[^"]*"[^>]*>', page)
    return {
        "posted": scrub(json.loads(verdict["_raw"])),
        "read": scrub(client.get(f"/api/submissions/{submission_id}").json()),
        "events": [scrub(event) for event in events],
        "rows": rows,
    }


def test_hidden_statuses_chosen_from_the_tests_code_do_not_leave_one_by_one(probe_client: TestClient) -> None:
    """The channel is real: a submission reads each hidden test's code through its caller's frame and
    answers with the status the code names (the admin sees exactly those statuses). By default nothing a
    submitter sees tells them apart: two problems whose hidden tests name different statuses, with the
    same count and first failure, look the same in every view, and no view has a hidden test's status."""
    admin = {"Authorization": f"Bearer {ADMIN}"}
    views = {}
    for problem_id in ("channel-a", "channel-b"):
        pattern, _ = CHANNELS[problem_id]
        verdict = _probe(probe_client, READS_ITS_CALLER, problem_id)
        assert verdict["status"] == "runtime_error", verdict
        seen = probe_client.get(f"/api/submissions/{verdict['id']}", headers=admin).json()
        hidden = [test for test in seen["tests"] if not test["visible"]]
        assert [test["status"] for test in hidden] == [STATUS_OF[trit] for trit in pattern], "the channel works"
        assert hidden[1]["message"] and "trit two" in hidden[1]["message"], "the admin sees why a hidden test failed"
        assert all(test["time_ms"] is not None for test in hidden)
        assert verdict["hidden"] == {"total": 6, "passed": 2, "first_failed": 2, "per_test": False}
        assert all(test["status"] is None for test in verdict["tests"] if not test["visible"])
        views[problem_id] = _public_views(probe_client, verdict)
        assert "status-failed" not in "".join(views[problem_id]["rows"])
        assert "status-error" not in "".join(views[problem_id]["rows"])
    assert views["channel-a"] == views["channel-b"], "what a submitter sees depends on the hidden statuses"


def test_a_problem_that_opts_in_shows_each_hidden_status_and_nothing_more(probe_client: TestClient) -> None:
    pattern, _ = CHANNELS["channel-per-test"]
    verdict = _probe(probe_client, READS_ITS_CALLER, "channel-per-test")
    hidden = [test for test in verdict["tests"] if not test["visible"]]
    assert [test["status"] for test in hidden] == [STATUS_OF[trit] for trit in pattern]
    for test in hidden:
        assert {key for key, value in test.items() if value is not None} == {"index", "name", "visible", "status"}, test
    assert verdict["hidden"] == {"total": 6, "passed": 2, "first_failed": 2, "per_test": True}
    assert "trit two" not in _everything_public(probe_client, verdict)
