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
    echo "==> starting dockerd"
    mkdir -p /var/log
    nohup dockerd >/var/log/torchjudge-dockerd.log 2>&1 &
    for _ in $(seq 1 60); do
        docker info >/dev/null 2>&1 && break
        sleep 1
    done
fi

if ! docker info >/dev/null 2>&1; then
    echo "dockerd did not come up; its log:" >&2
    tail -n 40 /var/log/torchjudge-dockerd.log >&2 || true
    exit 1
fi
