#!/usr/bin/env bash
# Makes sure a Docker engine answers: installs Debian's docker.io and starts dockerd when none does.
set -euo pipefail

if docker info >/dev/null 2>&1; then
    exit 0
fi

if ! command -v dockerd >/dev/null 2>&1; then
    echo "==> installing the Docker engine (docker.io)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq docker.io >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
    if [ -z "${TORCHJUDGE_DOCKERD_DIRECT:-}" ] && [ -d /run/systemd/system ] && systemctl cat docker.service >/dev/null 2>&1; then
        echo "==> starting the docker service"
        systemctl start docker
    else
        # In a session of its own, with no terminal: Ctrl-C on `make run` (a signal to the terminal's
        # process group) stops the service, never the engine, which outlives it as a system service would.
        echo "==> starting dockerd (in its own session; it outlives this command)"
        mkdir -p "${TORCHJUDGE_LOG_DIR:-/var/log}"
        setsid -f dockerd </dev/null >"${TORCHJUDGE_LOG_DIR:-/var/log}/torchjudge-dockerd.log" 2>&1
    fi
    for _ in $(seq 1 60); do
        docker info >/dev/null 2>&1 && break
        sleep 1
    done
fi

if ! docker info >/dev/null 2>&1; then
    echo "dockerd did not come up; its log:" >&2
    tail -n 40 "${TORCHJUDGE_LOG_DIR:-/var/log}/torchjudge-dockerd.log" >&2 || true
    exit 1
fi
