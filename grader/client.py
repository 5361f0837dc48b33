"""`grader submit` and `grader problems list|show`: the service from a terminal, over its HTTP API.

A submission is POSTed, then followed on its event stream: each test is printed as it finishes, then
the summary and the first failing visible test's expected against got. With --run, the file is run on
the visible tests instead (POST /api/runs: not a submission). Exit status: 0 accepted, 1 not, 2 a usage
or connection error. The API key, if the server wants one, comes from GRADER_API_KEY.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

DEFAULT_URL = "http://127.0.0.1:8000"
TIMEOUT_S = 120.0
MARKS = {
    "passed": "ok  ",
    "failed": "FAIL",
    "error": "ERR ",
    "timeout": "TIME",
    "memory": "MEM ",
    "output": "OUT ",
    "skipped": "skip",
}


class ClientError(Exception):
    """The service could not be reached, or refused the request: exit status 2."""


class Client:
    def __init__(self, url: str, api_key: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.api_key = api_key

    def _request(self, method: str, path: str, body: Any = None, stream: bool = False) -> Any:
        headers = {"Accept": "text/event-stream" if stream else "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
        try:
            response = urllib.request.urlopen(request, timeout=TIMEOUT_S)  # noqa: S310 - the user's own URL
        except urllib.error.HTTPError as exc:
            detail = exc.read(64 * 1024).decode("utf-8", "replace")
            try:
                detail = json.loads(detail).get("detail", detail)
            except (ValueError, AttributeError):
                pass
            raise ClientError(f"{method} {path}: {exc.code} {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise ClientError(f"cannot reach {self.url}: {getattr(exc, 'reason', exc)}") from None
        if stream:
            return response
        with response:
            return json.loads(response.read())

    def get(self, path: str) -> Any:
        return self._request("GET", path)

    def post(self, path: str, body: Any) -> Any:
        return self._request("POST", path, body)

    def events(self, submission_id: str) -> Iterator[tuple[str, Any]]:
        """The submission's server-sent events, (kind, data), until the verdict."""
        response = self._request("GET", f"/api/submissions/{submission_id}/events", stream=True)
        kind, data = "message", []
        with response:
            for raw in response:
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                if line.startswith("event:"):
                    kind = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].strip())
                elif not line and data:
                    yield kind, json.loads("\n".join(data))
                    kind, data = "message", []


# -- printing -----------------------------------------------------------------------------------------
def _test_line(test: dict[str, Any]) -> str:
    time_ms = f" {test['time_ms']:.0f} ms" if test.get("time_ms") is not None else ""
    message = f"  {test['message']}" if test.get("message") and test["status"] != "passed" else ""
    return f"  {MARKS.get(test['status'], test['status'])}  {test['name']}{time_ms}{message}"


def _first_failure(tests: list[dict[str, Any]], out: TextIO) -> None:
    failing = next((t for t in tests if t.get("visible") and t["status"] not in ("passed", "skipped")), None)
    if failing is None:
        return
    print(f"\nfirst failing visible test: {failing['name']}", file=out)
    details = failing.get("details") or {}
    expected, got = details.get("expected") or failing.get("expected"), details.get("got") or failing.get("got")
    if expected is not None or got is not None:
        print(f"  expected: {json.dumps(expected)}", file=out)
        print(f"  got:      {json.dumps(got)}", file=out)
    for key in ("max_abs_error", "max_rel_error", "first_mismatches"):
        if key in details:
            print(f"  {key}: {json.dumps(details[key])}", file=out)
    if failing.get("traceback"):
        print("  " + failing["traceback"].rstrip().replace("\n", "\n  "), file=out)
    if failing.get("output"):
        print("  printed:\n    " + failing["output"].rstrip().replace("\n", "\n    "), file=out)


def _summary(verdict: dict[str, Any], out: TextIO) -> None:
    passed = sum(1 for test in verdict["tests"] if test["status"] == "passed")
    print(f"\n{verdict['status']}  score {verdict['score']:.3f}  ({passed}/{len(verdict['tests'])} tests)", file=out)
    if verdict.get("message") and verdict["status"] != "accepted":
        print(f"  {verdict['message']}", file=out)
    if verdict.get("hint"):
        print(f"  hint: {verdict['hint']}", file=out)
    _first_failure(verdict["tests"], out)


def submit(client: Client, problem_id: str, source: str, *, run: bool, as_json: bool, out: TextIO = sys.stdout) -> int:
    if run:
        result = client.post("/api/runs", {"problem_id": problem_id, "source": source})
        if as_json:
            print(json.dumps(result, indent=2), file=out)
        else:
            for test in result["tests"]:
                print(_test_line(test), file=out)
            _summary(result, out)
        return 0 if result["status"] == "accepted" else 1
    created = client.post("/api/submissions", {"problem_id": problem_id, "source": source})
    verdict = None
    for kind, data in client.events(created["id"]):
        if kind == "test" and not as_json:
            print(_test_line(data), file=out, flush=True)
        elif kind == "verdict":
            verdict = data
    if verdict is None:
        verdict = client.get(f"/api/submissions/{created['id']}")
    if as_json:
        print(json.dumps(verdict, indent=2), file=out)
    else:
        print(f"submission {created['id']}: {client.url}/submissions/{created['id']}", file=out)
        _summary(verdict, out)
    return 0 if verdict["status"] == "accepted" else 1


def list_problems(client: Client, out: TextIO = sys.stdout) -> int:
    problems = client.get("/api/problems")
    width = max((len(p["id"]) for p in problems), default=2)
    for problem in problems:
        print(f"{problem['id']:<{width}}  {problem['difficulty']:<6}  {problem['title']}", file=out)
    return 0


def show_problem(client: Client, problem_id: str, out: TextIO = sys.stdout) -> int:
    problem = client.get(f"/api/problems/{problem_id}")
    limits = problem["limits"]
    print(f"{problem['title']} ({problem['id']}, {problem['difficulty']})", file=out)
    print(f"entry points: {', '.join(problem['entry_points'])}", file=out)
    print(f"limits: {limits['time_s']} s, {limits['memory_mb']} MB per test", file=out)
    print(f"tests: {len(problem['visible_tests'])} visible, {problem['hidden_tests']} hidden\n", file=out)
    print(problem["statement"].rstrip(), file=out)
    print("\n--- starter code ---\n" + problem["starter_code"].rstrip(), file=out)
    return 0


def main_submit(path: str, problem_id: str, url: str | None, run: bool, as_json: bool) -> int:
    try:
        source = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: cannot read {path}: {exc}", file=sys.stderr)
        return 2
    client = Client(url or os.environ.get("GRADER_URL", DEFAULT_URL), os.environ.get("GRADER_API_KEY"))
    try:
        return submit(client, problem_id, source, run=run, as_json=as_json)
    except ClientError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
