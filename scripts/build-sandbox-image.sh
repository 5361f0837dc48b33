#!/usr/bin/env bash
# Builds the sandbox image torchjudge-sandbox from sandbox/, offline: Python comes from .deb
# files and torch/numpy from a wheelhouse, both prepared here on the host first.
# Skipped when an image built from the same inputs exists.
set -euo pipefail
cd "$(dirname "$0")/.."

image=${GRADER_SANDBOX_IMAGE:-torchjudge-sandbox}
# This script is an input too: it decides what is pruned from site-packages.
inputs_hash=$( (find sandbox -type f ! -name '*.pyc' ! -path '*/__pycache__/*' -print0; printf '%s\0' scripts/build-sandbox-image.sh) \
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
#
# Every file of the image is shared by every sandbox through the host's page cache (SECURITY.md, "The
# page-cache channel"), and every container reads all of them at start (sandbox/runner/prewarm.py):
# what is not needed to run a solution is removed here. Kept on purpose: torch/bin/torch_shm_manager
# (`import torch` checks that it exists), torchgen (imported by torch.utils._python_dispatch),
# torch/testing (torch.testing.assert_close), sympy (torch.fx, symbolic shapes).
prune_site_packages() {
    local sp=$1
    rm -rf "$sp/bin" \
        "$sp/torch/include" "$sp/torch/test" "$sp/torch/share" \
        "$sp/torch/lib/libshm" "$sp/torch/lib/libshm_windows" \
        "$sp/torch/lib/libtorchbind_test.so" "$sp/torch/lib/libjitbackend_test.so" \
        "$sp/torch/lib/libbackend_with_compiler.so" "$sp/torch/lib/libaoti_custom_ops.so" \
        "$sp/numpy/_core/include" "$sp/numpy/_core/lib" "$sp/numpy/random/lib" "$sp/numpy/_pyinstaller" \
        "$sp/numpy/conftest.py"
    find "$sp/torch/bin" -mindepth 1 ! -name torch_shm_manager -exec rm -rf {} +
    # Test suites of every package (tests/, never testing/: torch.testing is public API).
    find "$sp" -depth -type d -name tests -exec rm -rf {} +
    find "$sp" -type f \( -name '*.a' -o -name '*.cmake' -o -name '*.pxd' -o -name '*.pc' \) -delete
}

req_hash=$(cat sandbox/requirements.txt scripts/build-sandbox-image.sh | sha256sum | cut -c1-16)
if [ "$(cat "$cache/site-packages.hash" 2>/dev/null)" != "$req_hash" ] || [ ! -d "$ctx/site-packages" ]; then
    "$pip_python" -m pip download -q --no-deps -d "$cache/wheelhouse" -r sandbox/requirements.txt
    rm -rf "$ctx/site-packages"
    "$pip_python" -m pip install -q --no-deps --no-index --no-compile --find-links "$cache/wheelhouse" \
        --target "$ctx/site-packages" -r sandbox/requirements.txt
    prune_site_packages "$ctx/site-packages"
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
cp sandbox/Dockerfile sandbox/check-image.py "$ctx/"

docker build -q --network none --label "torchjudge.inputs=$inputs_hash" -t "$image" "$ctx" >/dev/null
echo "==> built $image"
