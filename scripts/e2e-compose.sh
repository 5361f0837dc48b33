#!/usr/bin/env bash
# The scale-out stack end to end: builds the images, brings docker-compose.yml up (proxy, API, three
# workers of one sandbox each, Redis with a password, PostgreSQL) under a project name of its own on a
# free port, waits for every service to be healthy, then drives it through the proxy (scripts/e2e_compose_checks.py): grades the
# reference of embedding-layer, runs it (POST /api/runs), uploads a problem and grades a submission of it,
# sends a slow request and an oversized chunked body, and kills the worker grading one submission three
# times to see it end as internal_error. Tears it all down again (volumes included), also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/ensure-docker.sh
scripts/ensure-base-image.sh
scripts/build-sandbox-image.sh
scripts/build-compose-images.sh
scripts/compose-env.sh
read -r -a compose <<< "$(scripts/ensure-compose.sh)"

project="torchjudge-e2e-$$"
port=$(.venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export TORCHJUDGE_PORT=$port
export DOCKER_GID
DOCKER_GID=$(stat -c %g /var/run/docker.sock)
export GRADER_ADMIN_TOKEN
GRADER_ADMIN_TOKEN=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
# A killed worker's submission is taken back after its lease: short here, so three kills take a minute.
export GRADER_LEASE_S=10
# Three small workers: while a killed one restarts (its sandbox warming up), another is ready to take over.
export TORCHJUDGE_WORKER_POOL_SIZE=1
workers=3
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

echo "==> $project: up (proxy, api, $workers workers, redis, postgres); the proxy on 127.0.0.1:$port, nothing else published"
dc up -d --scale worker=$workers >/dev/null 2>&1

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
until healthy redis 1 && healthy postgres 1 && healthy api 1 && healthy worker $workers && healthy proxy 1; do
    if crashed; then
        echo "a service crashed" >&2
        dc ps >&2
        exit 1
    fi
    if [ $(($(date +%s) - started)) -gt 420 ]; then
        echo "the stack was not healthy within 420 s" >&2
        dc ps >&2
        exit 1
    fi
    sleep 2
done
echo "==> healthy after $(($(date +%s) - started)) s"

published=$(docker ps --filter "label=com.docker.compose.project=$project" --format '{{.Names}} {{.Ports}}' | grep -- '->' || true)
echo "==> published ports: $published"
[ "$(echo "$published" | grep -c -- '->')" = 1 ] && echo "$published" | grep -q proxy

.venv/bin/python scripts/e2e_compose_checks.py "$port" "$GRADER_ADMIN_TOKEN" "$project"

graded_by=$(dc logs --no-color worker 2>/dev/null | grep -o '"message": "graded: [^"]*"' | head -n 1 || true)
echo "==> a worker's log: ${graded_by:-?}"
echo "==> e2e-compose passed"
