#!/usr/bin/env bash
# Makes sure debian:bookworm-slim exists: pulled where a registry answers, otherwise built
# locally with mmdebstrap from this machine's own apt sources.
set -euo pipefail
base=debian:bookworm-slim

if docker image inspect "$base" >/dev/null 2>&1; then
    exit 0
fi
if timeout 60 docker pull -q "$base" >/dev/null 2>&1; then
    exit 0
fi

echo "==> no registry: creating $base with mmdebstrap"
if ! command -v mmdebstrap >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq mmdebstrap >/dev/null
fi
mmdebstrap --quiet --variant=minbase bookworm - | docker import - "$base" >/dev/null
docker image inspect "$base" >/dev/null
