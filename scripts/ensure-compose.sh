#!/usr/bin/env bash
# Makes sure a Compose answers: the `docker compose` plugin or `docker-compose`, else Debian's
# docker-compose package is installed. Prints the command to use.
set -euo pipefail

if docker compose version >/dev/null 2>&1; then
    echo "docker compose"
    exit 0
fi
if ! command -v docker-compose >/dev/null 2>&1; then
    echo "==> installing docker-compose" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends docker-compose >/dev/null
fi
docker-compose version >/dev/null
echo "docker-compose"
