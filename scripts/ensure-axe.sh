#!/usr/bin/env bash
# The browser tests audit each page with axe-core (Deque's accessibility engine), pinned with its
# integrity hash in tests/web/axe/package-lock.json and installed from the npm registry with `npm ci`.
# Does nothing when the pinned version is already there.
set -euo pipefail
cd "$(dirname "$0")/../tests/web/axe"

want=$(sed -n 's/.*"axe-core": "\([^"]*\)".*/\1/p' package.json)
have=$(sed -n 's/^ *"version": "\([^"]*\)".*/\1/p' node_modules/axe-core/package.json 2>/dev/null | head -n 1 || true)
if [ -n "$want" ] && [ "$have" = "$want" ] && [ -f node_modules/axe-core/axe.min.js ]; then
    exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
    echo "==> installing npm (Debian's) for axe-core"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends npm >/dev/null
fi

echo "==> installing axe-core $want for the browser tests"
npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
test -f node_modules/axe-core/axe.min.js
