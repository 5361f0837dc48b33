"""`grader submit`, `grader problems list|show` and `grader leaderboard`: the service from a terminal, over its
HTTP API.

A submission is POSTed, then followed on its event stream: each test is printed as it finishes, then
the summary and the first failing visible test's expected against got, and for a speed-graded problem the
timing against its baseline (a row per input size, then the score line). With --run, the file is run on
the visible tests instead (POST /api/runs: not a submission). Exit status: 0 accepted, 1 not, 2 a usage
or connection error; `grader leaderboard` 0, or 2 (a problem without a board among them). The API key, if
the server wants one, comes from GRADER_API_KEY; without keys, GRADER_OWNER_TOKEN (if set) is sent as
X-Owner-Token, so that a browser holding the same token lists these submissions in its history.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from grader import vocabulary

DEFAULT_URL = "http://127.0.0.1:8000"
TIMEOUT_S = 120.0
RESUMES = 3  # times a dropped event stream is picked up again where it stopped
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
MARKS = {status.value: words.mark for status, words in vocabulary.TEST.items()}


class ClientError(Exception):
    """The service could not be reached, or refused the request: exit status 2."""


class Client:
    def __init__(self, url: str, api_key: str | None = None, owner_token: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.api_key = api_key
        # Without API keys: the token the submissions are made with, so that the browser that holds the
        # same one lists them in its history (GRADER_OWNER_TOKEN; the problem page shows the browser's).
        self.owner_token = owner_token if owner_token is not None else os.environ.get("GRADER_OWNER_TOKEN")

    def _request(
        self, method: str, path: str, body: Any = None, stream: bool = False, headers: dict[str, str] | None = None
    ) -> Any:
        headers = {"Accept": "text/event-stream" if stream else "application/json", **(headers or {})}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        elif self.owner_token:
            headers["X-Owner-Token"] = self.owner_token
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
        """The submission's server-sent events, (kind, data), until the verdict. A stream that drops is
        resumed (Last-Event-ID) up to RESUMES times: no event comes twice."""
        last_id: str | None = None
        for attempt in range(RESUMES + 1):
            headers = {"Last-Event-ID": last_id} if last_id is not None else {}
            response = self._request("GET", f"/api/submissions/{submission_id}/events", stream=True, headers=headers)
            if response.status == 204:  # resumed after the verdict: nothing more
                response.close()
                return
            try:
                for event_id, kind, data in _parse_events(response):
                    last_id = event_id if event_id is not None else last_id
                    yield kind, data
                    if kind == "verdict":
                        return
            except (OSError, http.client.HTTPException):
                if attempt == RESUMES:
                    raise ClientError("the event stream broke off; the verdict is at the submission's URL") from None
            finally:
                response.close()


def _parse_events(response: Any) -> Iterator[tuple[str | None, str, Any]]:
    """(id, kind, decoded data) of each event of a text/event-stream."""
    event_id, kind, data = None, "message", []
    for raw in response:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and data:
            yield event_id, kind, json.loads("\n".join(data))
            event_id, kind, data = None, "message", []


# -- printing: whatever the server sent, as plain text a terminal shows as it is -------------------------
def _safe(value: Any, limit: int = 4000) -> str:
    """Text without control characters (an escape sequence would act on the terminal), cut to `limit`."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _test_line(test: dict[str, Any]) -> str:
    status = test.get("status")
    time_ms = test.get("time_ms")
    took = f" {time_ms:.0f} ms" if isinstance(time_ms, (int, float)) and math.isfinite(time_ms) else ""
    memory, limit = test.get("memory_mb"), test.get("memory_limit_mb")
    if type(memory) is int:
        took += f" · {memory} MB" + (f" of {limit} MB" if type(limit) is int else "")
    message = f"  {_safe(test['message'], 300)}" if test.get("message") and status != "passed" else ""
    return f"  {MARKS.get(status, _safe(status, 8))}  {_safe(test.get('name'), 200)}{took}{message}"


def _print_details(details: dict[str, Any], out: TextIO, expected: Any = None, got: Any = None) -> None:
    """A failed comparison: where, why, expected against got, the errors."""
    if details.get("path"):
        print(f"  output:   {_safe(details['path'], 200)}", file=out)
    if details.get("reason"):
        print(f"  reason:   {_safe(details['reason'], 300)}", file=out)
    expected, got = details.get("expected") or expected, details.get("got") or got
    if expected is not None or got is not None:
        print(f"  expected: {_safe(expected, 2000)}", file=out)
        print(f"  got:      {_safe(got, 2000)}", file=out)
    for key in ("max_abs_error", "max_rel_error", "first_mismatches"):
        if key in details:
            print(f"  {key}: {_safe(details[key], 2000)}", file=out)


def _first_failure(tests: list[dict[str, Any]], out: TextIO) -> None:
    failing = next((t for t in tests if t.get("visible") and t.get("status") not in (None, "passed", "skipped")), None)
    if failing is None:
        return
    print(f"\nfirst failing visible test: {_safe(failing.get('name'), 200)}", file=out)
    details = failing.get("details") if isinstance(failing.get("details"), dict) else {}
    _print_details(details, out, failing.get("expected"), failing.get("got"))
    if failing.get("traceback"):
        print("  " + _safe(failing["traceback"], 16_000).rstrip().replace("\n", "\n  "), file=out)
    if failing.get("output"):
        print("  printed:\n    " + _safe(failing["output"], 4200).rstrip().replace("\n", "\n    "), file=out)


def _hidden_line(verdict: dict[str, Any]) -> str | None:
    """The hidden tests in one line, when the verdict does not show them one by one."""
    hidden = verdict.get("hidden") if isinstance(verdict.get("hidden"), dict) else {}
    total, passed, first = hidden.get("total"), hidden.get("passed"), hidden.get("first_failed")
    if not isinstance(total, int) or total <= 0 or hidden.get("per_test") or not isinstance(passed, int):
        return None
    mark = MARKS["passed"] if passed == total else MARKS["failed"]
    line = f"  {mark}  hidden tests: {passed} of {total} passed"
    return line + (f"; the first that did not: hidden test {first}" if isinstance(first, int) else "")


def _summary(verdict: dict[str, Any], out: TextIO) -> None:
    tests = [test for test in verdict.get("tests") or [] if isinstance(test, dict)]
    hidden = verdict.get("hidden") if isinstance(verdict.get("hidden"), dict) else {}
    passed = sum(1 for test in tests if test.get("status") == "passed")
    if not hidden.get("per_test") and isinstance(hidden.get("passed"), int):
        passed += hidden["passed"]
    total = verdict.get("tests_total") if isinstance(verdict.get("tests_total"), int) else len(tests)
    score = verdict.get("score") if isinstance(verdict.get("score"), (int, float)) else 0.0
    status = _safe(verdict.get("status"), 40)
    print(f"\n{status}  score {score:.3f}  ({passed}/{total} tests)", file=out)
    if verdict.get("message") and status != "accepted":
        print(f"  {_safe(verdict['message'], 4000)}", file=out)
    if verdict.get("hint"):
        print(f"  hint: {_safe(verdict['hint'], 2000)}", file=out)
    _first_failure(tests, out)
    _print_speed(verdict, out)


# -- speed: a speed-graded verdict's timing, and a problem's leaderboard ----------------------------------
SCORE_WORDS = {"geomean": "geometric mean of the sizes", "min": "smallest of the sizes"}
MAX_SIZES = 16  # a problem has at most this many


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _times(value: Any) -> str:
    """A speed-up: 12.3x, 0.5x, 1,250x; "-" for what is not a positive number."""
    number = _number(value)
    if number is None or number <= 0:
        return "-"
    return f"{number:,.0f}x" if number >= 1000 else f"{number:.3g}x"


def _ms(value: Any) -> str:
    number = _number(value)
    return "-" if number is None or number < 0 else f"{number:.3g}"


def _interval(pair: Any) -> str:
    if not isinstance(pair, list) or len(pair) != 2:
        return ""
    return f"[{_times(pair[0])}, {_times(pair[1])}]"


def _print_speed(verdict: dict[str, Any], out: TextIO) -> None:
    """The timing against the baseline: a row per input size, then the score line."""
    speed = verdict.get("speed")
    if not isinstance(speed, dict):
        return
    device = _safe(speed.get("device") or "cpu", 8)
    print(f"\nspeed against the baseline {_safe(speed.get('baseline'), 64)} ({device}):", file=out)
    sizes = [size for size in speed.get("sizes") or [] if isinstance(size, dict)][:MAX_SIZES]
    if sizes:
        names = [_safe(size.get("name"), 40) for size in sizes]
        width = max(4, *(len(name) for name in names))
        print(f"  {'size':<{width}}  {'yours ms':>9}  {'baseline ms':>11}  speed-up [95% interval]", file=out)
        for name, size in zip(names, sizes, strict=True):
            timed = f"{_ms(size.get('submission_ms')):>9}  {_ms(size.get('baseline_ms')):>11}"
            print(
                f"  {name:<{width}}  {timed}  {_times(size.get('speedup'))} {_interval(size.get('interval'))}", file=out
            )
    how = SCORE_WORDS.get(speed.get("score"), _safe(speed.get("score"), 16))
    passed = "passed" if speed.get("passed") is True else "not passed"
    score = f"{_times(speed.get('speedup'))} {_interval(speed.get('interval'))}".rstrip()
    print(f"  score {score} ({how}); threshold {_times(speed.get('threshold'))}: {passed}", file=out)
    if sizes:
        yours, theirs = _ms(speed.get("submission_import_ms")), _ms(speed.get("baseline_import_ms"))
        charge = _ms(speed.get("setup_charge_ms"))
        print(
            f"  import: yours {yours} ms, the baseline's {theirs} ms; setup charge {charge} ms per timed call", file=out
        )
    if speed.get("message") and speed.get("message") != verdict.get("message"):
        print(f"  {_safe(speed['message'], 1000)}", file=out)
    if isinstance(speed.get("details"), dict):
        print("  a timed call's wrong value:", file=out)
        _print_details(speed["details"], out)


def _print_tests(tests: list[Any], verdict: dict[str, Any], out: TextIO) -> None:
    """Each test once, in order (a hidden test without a status is told by the hidden tests' line)."""
    for test in tests:
        if isinstance(test, dict) and test.get("status") is not None:
            print(_test_line(test), file=out, flush=True)
    line = _hidden_line(verdict)
    if line is not None:
        print(line, file=out)


def submit(
    client: Client,
    problem_id: str,
    source: str,
    *,
    run: bool,
    as_json: bool,
    out: TextIO = sys.stdout,
    name: str | None = None,
) -> int:
    if run:
        result = client.post("/api/runs", {"problem_id": problem_id, "source": source})
        if as_json:
            print(json.dumps(result, indent=2), file=out)
        else:
            _print_tests(result.get("tests") or [], result, out)
            _summary(result, out)
        return 0 if result["status"] == "accepted" else 1
    body = {"problem_id": problem_id, "source": source} | ({"submitter": name} if name else {})
    created = client.post("/api/submissions", body)
    verdict = None
    printed: set[Any] = set()
    for kind, data in client.events(created["id"]):
        if kind == "test" and not as_json and isinstance(data, dict) and data.get("index") not in printed:
            printed.add(data.get("index"))
            _print_tests([data], {}, out)
        elif kind == "verdict":
            verdict = data
    if verdict is None:
        verdict = client.get(f"/api/submissions/{created['id']}")
    if as_json:
        print(json.dumps(verdict, indent=2), file=out)
    else:
        _print_tests(
            [t for t in verdict.get("tests") or [] if isinstance(t, dict) and t.get("index") not in printed],
            verdict,
            out,
        )
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
    print(f"tests: {len(problem['visible_tests'])} visible, {problem['hidden_tests']} hidden", file=out)
    speed = problem.get("speed")
    if isinstance(speed, dict):
        how = SCORE_WORDS.get(speed.get("score"), _safe(speed.get("score"), 16))
        print(
            f"speed-graded: at least {_times(speed.get('threshold'))} the baseline {_safe(speed.get('baseline'), 64)}"
            f" ({how}), on {_safe(speed.get('device'), 8)}",
            file=out,
        )
        sizes = ", ".join(_safe(size.get("name"), 40) for size in speed.get("sizes") or [] if isinstance(size, dict))
        calls = f"{speed.get('warmup')} warm-up and {speed.get('repeats')} timed calls each"
        print(f"  sizes: {sizes} ({calls}); the board: grader leaderboard {problem['id']}", file=out)
    print(file=out)
    print(problem["statement"].rstrip(), file=out)
    print("\n--- starter code ---\n" + problem["starter_code"].rstrip(), file=out)
    return 0


def show_leaderboard(
    client: Client, problem_id: str, *, as_json: bool, limit: int | None = None, out: TextIO = sys.stdout
) -> int:
    """A speed-graded problem's board, best first (an unknown problem, or one without a board: ClientError)."""
    query = f"?limit={limit}" if limit is not None else ""
    board = client.get(f"/api/problems/{urllib.parse.quote(problem_id, safe='')}/leaderboard{query}")
    if as_json:
        print(json.dumps(board, indent=2), file=out)
        return 0
    how = SCORE_WORDS.get(board.get("score"), _safe(board.get("score"), 16))
    print(
        f"{_safe(board.get('problem_id'), 64)}: speed-up over the baseline {_safe(board.get('baseline'), 64)} ({how});"
        f" accepted from {_times(board.get('threshold'))}",
        file=out,
    )
    entries = [entry for entry in board.get("entries") or [] if isinstance(entry, dict)]
    if not entries:
        print("no entries yet", file=out)
        return 0
    print(f"{'rank':>4}  {'speed-up':>9}  {'verified':<8}  {'submitted':<16}  name", file=out)
    earlier = retimed = False
    for entry in entries:
        rank = entry.get("rank") if type(entry.get("rank")) is int else "?"
        when = _safe(entry.get("submitted_at"), 40)[:16].replace("T", " ")
        mark = "*" if entry.get("problem_version") != board.get("version") else ""
        if entry.get("timing_version") != board.get("timing_version"):
            mark += "+"
        earlier, retimed = earlier or "*" in mark, retimed or "+" in mark
        verified = "yes" if entry.get("verified") is True else "no"
        speedup = _times(entry.get("speedup")) + mark
        print(f"{rank:>4}  {speedup:>9}  {verified:<8}  {when:<16}  {_safe(entry.get('name'), 64)}", file=out)
    if earlier:
        print("* graded against an earlier version of the problem", file=out)
    if retimed:
        print("+ timed under an earlier version of the judge's timing (listed after the current one's)", file=out)
    return 0


def main_submit(path: str, problem_id: str, url: str | None, run: bool, as_json: bool, name: str | None = None) -> int:
    try:
        source = Path(path).read_text(encoding="utf-8-sig")  # a byte-order mark, as some editors save, dropped
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: cannot read {path}: {exc}", file=sys.stderr)
        return 2
    client = Client(url or os.environ.get("GRADER_URL", DEFAULT_URL), os.environ.get("GRADER_API_KEY"))
    try:
        return submit(client, problem_id, source, run=run, as_json=as_json, name=name)
    except ClientError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
