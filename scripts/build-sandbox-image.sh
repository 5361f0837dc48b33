#!/usr/bin/env bash
# Builds the sandbox image torchjudge-sandbox from sandbox/, offline: Python comes from .deb
# files and torch/numpy from a wheelhouse, both prepared here on the host first.
# Skipped when an image built from the same inputs exists.
set -euo pipefail
cd "$(dirname "$0")/.."

image=${GRADER_SANDBOX_IMAGE:-torchjudge-sandbox}
inputs_hash=$(find sandbox -type f ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 \
    | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)

current=$(docker image inspect "$image" --format '{{ index .Config.Labels "torchjudge.inputs" }}' 2>/dev/null || true)
if [ "$current" = "$inputs_hash" ]; then
    exit 0
fi

echo "==> building $image (inputs $inputs_hash)"
cache=.cache/sandbox
ctx=$cache/context
mkdir -p "$cache/wheelhouse" "$ctx"

# Python packages: a wheelhouse, then a site-packages tree that the Dockerfile copies in.
# The wheels must match the sandbox's Python (3.11): use the project's interpreter.
pip_python=python3.11
[ -x .venv/bin/python ] && pip_python=.venv/bin/python
req_hash=$(sha256sum sandbox/requirements.txt | cut -c1-16)
if [ "$(cat "$cache/site-packages.hash" 2>/dev/null)" != "$req_hash" ]; then
    "$pip_python" -m pip download -q --no-deps -d "$cache/wheelhouse" -r sandbox/requirements.txt
    rm -rf "$ctx/site-packages"
    "$pip_python" -m pip install -q --no-deps --no-index --no-compile --find-links "$cache/wheelhouse" \
        --target "$ctx/site-packages" -r sandbox/requirements.txt
    rm -rf "$ctx/site-packages/bin"
    echo "$req_hash" > "$cache/site-packages.hash"
fi

# Python itself: Debian's python3 packages, resolved by apt in a throwaway container.
if ! ls "$ctx/debs/"python3.11-minimal_*.deb >/dev/null 2>&1; then
    mkdir -p "$ctx/debs"
    docker run --rm --network host -v "$PWD/$ctx/debs:/debs" debian:bookworm-slim sh -c '
        apt-get update -qq &&
        apt-get install -y -qq --no-install-recommends --download-only \
            -o Dir::Cache::archives=/debs python3 >/dev/null &&
        rm -rf /debs/partial /debs/lock'
fi

rm -rf "$ctx/runner"
cp -r sandbox/runner "$ctx/runner"
find "$ctx/runner" -name '__pycache__' -prune -exec rm -rf {} +
cp sandbox/Dockerfile "$ctx/Dockerfile"

docker build -q --network none --label "torchjudge.inputs=$inputs_hash" -t "$image" "$ctx" >/dev/null
echo "==> built $image"
