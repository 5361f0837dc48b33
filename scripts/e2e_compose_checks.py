"""What scripts/e2e-compose.sh checks through the stack's public port (the proxy), once it is healthy:

  grade     the reference of embedding-layer is accepted (POST /api/submissions?wait=60)
  run       POST /api/runs answers as on one machine (a task on a worker)
  upload    a problem uploaded as YAML is checked on a worker (201), and a submission of it graded
  slow      a request whose headers never end is closed by the proxy within its header timeout
  chunked   an oversized chunked body is answered 413 before it is all sent
  poison    a submission whose grader is killed (docker kill) three times ends as internal_error,
            its event stream flowing through the proxy meanwhile

Usage: e2e_compose_checks.py PORT ADMIN_TOKEN COMPOSE_PROJECT
"""

from __future__ import annotations

import json
import select
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
HEADER_TIMEOUT_S = 10  # compose/nginx.conf client_header_timeout
BODY_CAP = 1024 * 1024  # compose/nginx.conf client_max_body_size


def request(base: str, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    all_headers = {"content-type": "application/json", **(headers or {})}
    req = urllib.request.Request(f"{base}{path}", data=data, method=method, headers=all_headers)
    try:
        with urllib.request.urlopen(req, timeout=400) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def submit(base: str, problem_id: str, source: str, wait: int = 60) -> dict[str, Any]:
    status, verdict = request(
        base, "POST", f"/api/submissions?wait={wait}", {"problem_id": problem_id, "source": source}
    )
    assert status in (200, 202), (status, verdict)
    return verdict  # type: ignore[no-any-return]


def check_grade(base: str) -> None:
    reference = yaml.safe_load((ROOT / "problems/embedding-layer.yaml").read_text())["reference"]
    started = time.monotonic()
    verdict = submit(base, "embedding-layer", reference)
    took = time.monotonic() - started
    passed = sum(test["status"] == "passed" for test in verdict["tests"])
    print(f"grade: embedding-layer reference -> {verdict['status']} ({passed}/{len(verdict['tests'])}) in {took:.2f} s")
    assert verdict["status"] == "accepted", verdict


def check_run(base: str) -> None:
    reference = yaml.safe_load((ROOT / "problems/embedding-layer.yaml").read_text())["reference"]
    started = time.monotonic()
    status, run = request(base, "POST", "/api/runs", {"problem_id": "embedding-layer", "source": reference})
    print(
        f"run: POST /api/runs -> {status} {run.get('status')} on {len(run.get('tests', []))} visible tests"
        f" in {time.monotonic() - started:.2f} s"
    )
    assert status == 200 and run["status"] == "accepted", run


PROBLEM = """\
id: e2e-scale
title: Scale by 3 (uploaded by e2e-compose)
difficulty: easy
statement: Return $3x$.
starter_code: |
  def scale(x):
      pass
entry_points: [scale]
reference: |
  def scale(x):
      return 3 * x
limits:
  time_s: 30
tests:
  - name: ones
    visible: true
    code: |
      return {"out": scale(torch.ones(3))}
  - name: a random vector
    code: |
      return {"out": scale(torch.randn(4))}
pitfalls:
  - name: forgot the factor
    hint: Multiply by 3.
    code: |
      def scale(x):
          return x
"""


def check_upload(base: str, token: str) -> None:
    headers = {"Authorization": f"Bearer {token}", "content-type": "application/yaml"}
    started = time.monotonic()
    status, stored = request(base, "POST", "/api/problems", PROBLEM.encode(), headers)
    steps = ", ".join(f"{step['name']} {step['status']}" for step in (stored or {}).get("check", {}).get("steps", []))
    print(f"upload: POST /api/problems -> {status} in {time.monotonic() - started:.2f} s ({steps})")
    assert status == 201, stored
    deadline = time.monotonic() + 30
    while request(base, "GET", "/api/problems/e2e-scale")[0] != 200:  # every API process polls the uploads
        assert time.monotonic() < deadline, "the uploaded problem is not served"
        time.sleep(0.5)
    verdict = submit(base, "e2e-scale", "def scale(x):\n    return 3 * x\n")
    print(f"upload: a submission of e2e-scale -> {verdict['status']}")
    assert verdict["status"] == "accepted", verdict


def check_slow(port: int) -> None:
    """Headers that never end, a byte of them now and then: the proxy closes within its header timeout."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
        closed_after = None
        while time.monotonic() - started < HEADER_TIMEOUT_S + 20:
            try:
                sock.sendall(b"X-Slow: 1\r\n")
                ready, _, _ = select.select([sock], [], [], 1.0)
                if ready and sock.recv(4096) == b"":
                    closed_after = time.monotonic() - started
                    break
            except OSError:
                closed_after = time.monotonic() - started
                break
    print(f"slow: headers trickled a line a second, closed by the proxy after {closed_after} s")
    assert closed_after is not None and closed_after <= HEADER_TIMEOUT_S + 3, closed_after


def check_chunked(port: int) -> None:
    """An endless chunked body: 413 once the proxy's count passes the cap, long before the sender is done."""
    chunk = b"x" * 65536
    sent = 0
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            b"POST /api/submissions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        while sent < 16 * BODY_CAP:
            # A moment after each chunk for an answer: on loopback a sender outruns any reply otherwise.
            if select.select([sock], [], [], 0.02)[0]:
                break
            try:
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except OSError:
                break
            sent += len(chunk)
        sock.settimeout(10)
        try:
            while not answer.endswith(b"\r\n\r\n") and b"\r\n\r\n" not in answer:
                data = sock.recv(4096)
                if not data:
                    break
                answer += data
        except OSError:
            pass
    status = answer.split(b"\r\n", 1)[0].decode(errors="replace")
    print(f"chunked: {sent // 1024} KiB sent of an endless body, answered {status!r} (cap {BODY_CAP // 1024} KiB)")
    assert b" 413 " in answer.split(b"\r\n", 1)[0], answer[:200]
    assert sent <= BODY_CAP + 8 * len(chunk), sent


def docker(*args: str) -> str:
    return subprocess.run(["docker", *args], check=True, capture_output=True, text=True).stdout


def workers(project: str) -> list[str]:
    labels = [
        "--filter",
        f"label=com.docker.compose.project={project}",
        "--filter",
        "label=com.docker.compose.service=worker",
    ]
    return docker("ps", "-aq", *labels).split()


def holder(project: str, submission_id: str, attempt: int) -> str | None:
    """The worker whose log says it started `attempt` of the submission."""
    needle = f"grading started: attempt {attempt},"
    for container in workers(project):
        # The service logs to stderr, which `docker logs` gives back on its own stderr.
        logs = subprocess.run(
            ["docker", "logs", container], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        ).stdout
        if any(submission_id in line and needle in line for line in logs.splitlines()):
            return container
    return None


def first_event(port: int, submission_id: str) -> tuple[float, str]:
    """Seconds until the first server-sent event of a running submission came through the proxy."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
        sock.sendall(f"GET /api/submissions/{submission_id}/events HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        data = b""
        while b"\nevent:" not in data and b"\r\n\r\nevent:" not in data:
            data += sock.recv(4096)
    line = next(line for line in data.decode().splitlines() if line.startswith("event:"))
    return time.monotonic() - started, line


def check_poison(base: str, port: int, project: str) -> None:
    sleeper = "import time\n\ndef scale(x):\n    time.sleep(25)\n    return 3 * x\n"
    status, accepted = request(base, "POST", "/api/submissions", {"problem_id": "e2e-scale", "source": sleeper})
    assert status == 202, accepted
    submission_id = accepted["id"]
    started = time.monotonic()
    for attempt in (1, 2, 3):
        deadline = time.monotonic() + 300  # a worker restarted after a kill warms its sandbox first
        while (container := holder(project, submission_id, attempt)) is None:
            assert time.monotonic() < deadline, f"no worker started attempt {attempt}"
            time.sleep(0.5)
        if attempt == 1:
            seconds, event = first_event(port, submission_id)
            print(f"poison: while it runs, its first event came through the proxy in {seconds:.2f} s ({event})")
        docker("kill", container)
        print(
            f"poison: attempt {attempt} started on worker {container[:12]}; docker kill at"
            f" {time.monotonic() - started:.1f} s"
        )
        docker("start", container)  # back to three workers (its leftover sandboxes are removed as it starts)
    deadline = time.monotonic() + 300
    while True:
        status, view = request(base, "GET", f"/api/submissions/{submission_id}")
        if view["status"] not in ("queued", "running"):
            break
        assert time.monotonic() < deadline, view
        time.sleep(1)
    print(f"poison: after 3 kills -> {view['status']} at {time.monotonic() - started:.1f} s: {view['message'][:90]}...")
    assert view["status"] == "internal_error" and "started 3 times" in view["message"], view
    given_up = 0.0
    for container in workers(project):
        metrics = subprocess.run(
            [
                "docker",
                "exec",
                container,
                "python3",
                "-c",
                "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:9100/metrics').read().decode())",
            ],
            capture_output=True,
            text=True,
        ).stdout
        given_up += sum(
            float(line.split()[-1])
            for line in metrics.splitlines()
            if line.startswith("torchjudge_submissions_given_up_total")
        )
    print(f"poison: torchjudge_submissions_given_up_total over the workers = {given_up:g}")
    assert given_up == 1, given_up


def main() -> None:
    port, token, project = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    base = f"http://127.0.0.1:{port}"
    check_grade(base)
    check_run(base)
    check_upload(base, token)
    check_slow(port)
    check_chunked(port)
    check_poison(base, port, project)
    status, health = request(base, "GET", "/healthz")
    print(f"healthz: {status} ready={health['ready']} queue={health['queue']} depth={health['queue_depth']}")


if __name__ == "__main__":
    main()
