#!/usr/bin/env bash
# The scale-out stack end to end: builds the images, brings docker-compose.yml up (two workers) under a
# project name of its own on a free port, waits for every service to be healthy, grades the reference
# solution of embedding-layer through the API with ?wait=60, checks it is accepted, and tears it all
# down again (volumes included), also when something fails.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/ensure-docker.sh
scripts/ensure-base-image.sh
scripts/build-sandbox-image.sh
scripts/build-compose-images.sh
read -r -a compose <<< "$(scripts/ensure-compose.sh)"

project="torchjudge-e2e-$$"
port=$(.venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export TORCHJUDGE_PORT=$port
export DOCKER_GID
DOCKER_GID=$(stat -c %g /var/run/docker.sock)
dc() { "${compose[@]}" -p "$project" -f docker-compose.yml "$@"; }

teardown() {
    status=$?
    if [ "$status" != 0 ]; then
        echo "==> failed; the last log lines of each service:" >&2
        dc logs --no-color --tail 30 >&2 || true
    fi
    echo "==> tearing down $project"
    dc down -v --remove-orphans --timeout 60 >/dev/null 2>&1 || true
    exit "$status"
}
trap teardown EXIT

echo "==> $project: checking docker-compose.yml"
dc config -q

echo "==> $project: up (api, 2 workers, redis, postgres) on 127.0.0.1:$port"
dc up -d --scale worker=2 >/dev/null 2>&1

healthy() {  # healthy SERVICE COUNT
    local ids id count=0
    ids=$(dc ps -q "$1")
    for id in $ids; do
        [ "$(docker inspect -f '{{ .State.Health.Status }}' "$id" 2>/dev/null)" = healthy ] && count=$((count + 1))
    done
    [ "$count" -ge "$2" ]
}
crashed() {  # a container that exited or restarted will not get healthy: fail now, with its logs
    local id
    for id in $(dc ps -q); do
        [ "$(docker inspect -f '{{ .RestartCount }} {{ .State.Status }}' "$id")" = "0 running" ] || return 0
    done
    return 1
}
started=$(date +%s)
until healthy redis 1 && healthy postgres 1 && healthy api 1 && healthy worker 2; do
    if crashed; then
        echo "a service crashed" >&2
        dc ps >&2
        exit 1
    fi
    if [ $(($(date +%s) - started)) -gt 300 ]; then
        echo "the stack was not healthy within 300 s" >&2
        dc ps >&2
        exit 1
    fi
    sleep 2
done
echo "==> healthy after $(($(date +%s) - started)) s"

.venv/bin/python - "$port" <<'PY'
import json
import sys
import time
import urllib.request

import yaml

base = f"http://127.0.0.1:{sys.argv[1]}"
reference = yaml.safe_load(open("problems/embedding-layer.yaml"))["reference"]
body = json.dumps({"problem_id": "embedding-layer", "source": reference}).encode()
request = urllib.request.Request(
    f"{base}/api/submissions?wait=60", data=body, headers={"content-type": "application/json"}
)
started = time.monotonic()
with urllib.request.urlopen(request, timeout=90) as response:
    status, verdict = response.status, json.load(response)
took = time.monotonic() - started
print(f"POST /api/submissions?wait=60 -> {status} {verdict['status']} score {verdict['score']} in {took:.2f} s")
passed = sum(test["status"] == "passed" for test in verdict["tests"])
print(f"  {passed}/{len(verdict['tests'])} tests passed, submission {verdict['id']}")
assert status == 200 and verdict["status"] == "accepted", verdict
with urllib.request.urlopen(f"{base}/api/submissions/{verdict['id']}", timeout=10) as response:
    assert json.load(response)["status"] == "accepted"
with urllib.request.urlopen(f"{base}/metrics", timeout=10) as response:
    metrics = response.read().decode()
assert 'torchjudge_submissions{status="accepted"} 1.0' in metrics, metrics
with urllib.request.urlopen(f"{base}/healthz", timeout=10) as response:
    health = json.load(response)
print(f"  /healthz: ready={health['ready']} queue={health['queue']} depth={health['queue_depth']}")
PY

graded_by=$(dc logs --no-color worker 2>/dev/null | grep -o '"message": "graded: [^"]*"' | head -n 1 || true)
echo "==> a worker's log: ${graded_by:-?}"
echo "==> e2e-compose passed"
