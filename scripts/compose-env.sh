#!/usr/bin/env bash
# The secrets of docker-compose.yml, in .env next to it (which docker-compose reads, and git ignores):
# TORCHJUDGE_REDIS_PASSWORD, generated here when .env does not set it. Never overwrites a value.
set -euo pipefail
cd "$(dirname "$0")/.."

env_file=.env
touch "$env_file"
chmod 600 "$env_file"
if ! grep -q '^TORCHJUDGE_REDIS_PASSWORD=.' "$env_file"; then
    # Hex: nothing in it needs escaping in a redis:// URL or in redis.conf.
    password=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
    echo "TORCHJUDGE_REDIS_PASSWORD=$password" >> "$env_file"
    echo "==> generated TORCHJUDGE_REDIS_PASSWORD into $env_file"
fi
