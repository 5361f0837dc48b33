#!/usr/bin/env bash
# Builds the images docker-compose.yml runs, offline (no registry answers on these machines):
#   torchjudge-service   Dockerfile: the API and the workers
#   torchjudge-redis     compose/redis.Dockerfile: Debian's redis-server, with a password
#   torchjudge-proxy     compose/proxy.Dockerfile: Debian's nginx-light, the front door
#   torchjudge-postgres  compose/postgres.Dockerfile: Debian's postgresql-15
# Debian packages are fetched by apt in a throwaway debian:bookworm-slim container and Python packages
# come from a wheelhouse prepared here on the host; `docker build` itself runs with --network none.
# Each image is skipped when one built from the same inputs exists. The sandbox image is built by
# scripts/build-sandbox-image.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=.cache/compose
mkdir -p "$cache"

inputs_hash() {
    find "$@" -type f ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum \
        | sha256sum | cut -c1-16
}

# fetch_debs DIR PACKAGE...: the .deb files of PACKAGE and of whatever they need that the base image lacks.
fetch_debs() {
    local dir=$1
    shift
    if [ "$(cat "$dir/.packages" 2>/dev/null)" = "$*" ] && ls "$dir"/*.deb >/dev/null 2>&1; then
        return
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    # Host networking: the throwaway container needs the Debian mirror, not a bridge of its own.
    docker run --rm --network host -v "$PWD/$dir:/debs" debian:bookworm-slim sh -c "
        apt-get update -qq &&
        apt-get install -y -qq --no-install-recommends --download-only -o Dir::Cache::archives=/debs $* >/dev/null &&
        rm -rf /debs/partial /debs/lock"
    echo "$*" > "$dir/.packages"
}

# build IMAGE CONTEXT DOCKERFILE HASH
build() {
    local image=$1 context=$2 dockerfile=$3 hash=$4
    docker build -q --network none --label "torchjudge.inputs=$hash" -f "$dockerfile" -t "$image" "$context" >/dev/null
    echo "==> built $image"
}

# This machine's pip configuration warns about every missing index folder: keep the real errors only.
quiet_pip() {
    { "$@" 2>&1 1>&3 | { grep -v '^WARNING: Location' || true; } >&2; } 3>&1
}

current() {
    docker image inspect "$1" --format '{{ index .Config.Labels "torchjudge.inputs" }}' 2>/dev/null || true
}

# -- torchjudge-redis ----------------------------------------------------------------------------------
hash=$(inputs_hash compose/redis.Dockerfile compose/redis-entrypoint.sh)
if [ "$(current torchjudge-redis)" != "$hash" ]; then
    echo "==> building torchjudge-redis"
    fetch_debs "$cache/redis/debs" redis-server
    cp compose/redis-entrypoint.sh "$cache/redis/"
    build torchjudge-redis "$cache/redis" compose/redis.Dockerfile "$hash"
fi

# -- torchjudge-proxy ----------------------------------------------------------------------------------
hash=$(inputs_hash compose/proxy.Dockerfile compose/nginx.conf)
if [ "$(current torchjudge-proxy)" != "$hash" ]; then
    echo "==> building torchjudge-proxy"
    fetch_debs "$cache/proxy/debs" nginx-light
    cp compose/nginx.conf "$cache/proxy/"
    build torchjudge-proxy "$cache/proxy" compose/proxy.Dockerfile "$hash"
fi

# -- torchjudge-postgres -------------------------------------------------------------------------------
hash=$(inputs_hash compose/postgres.Dockerfile compose/postgres-entrypoint.sh)
if [ "$(current torchjudge-postgres)" != "$hash" ]; then
    echo "==> building torchjudge-postgres"
    fetch_debs "$cache/postgres/debs" postgresql-15
    cp compose/postgres-entrypoint.sh "$cache/postgres/"
    build torchjudge-postgres "$cache/postgres" compose/postgres.Dockerfile "$hash"
fi

# -- torchjudge-service --------------------------------------------------------------------------------
# The contract with the sandbox that grader/ imports (stdlib only): sandbox/runner/protocol.py CONTRACT_FILES.
contract=(sandbox/runner/protocol.py sandbox/runner/messages.py sandbox/runner/bench_job.py)
hash=$(inputs_hash Dockerfile pyproject.toml grader problems sandbox/__init__.py sandbox/runner/__init__.py \
    "${contract[@]}")
if [ "$(current torchjudge-service)" != "$hash" ]; then
    echo "==> building torchjudge-service"
    ctx=$cache/service
    mkdir -p "$ctx" "$cache/wheelhouse"
    fetch_debs "$ctx/debs" python3

    # The pinned runtime dependencies of pyproject.toml, for the image's Python (3.11, as the venv's).
    pip_python=python3.11
    [ -x .venv/bin/python ] && pip_python=.venv/bin/python
    "$pip_python" -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' \
        > "$cache/requirements.txt"
    # Resolved for the image's Python (Debian's 3.11.2), not the host's. pip's --python-version does not
    # reach python_full_version markers, so what they add below 3.11.3 is listed here by hand: redis
    # needs async-timeout there.
    image_python=$(ls "$ctx/debs"/python3.11-minimal_*.deb | sed -E 's/.*_([0-9]+\.[0-9]+\.[0-9]+)-.*/\1/')
    echo "async-timeout==5.0.1" >> "$cache/requirements.txt"
    req_hash=$( (cat "$cache/requirements.txt"; echo "$image_python") | sha256sum | cut -c1-16)
    if [ "$(cat "$ctx/site-packages.hash" 2>/dev/null)" != "$req_hash" ]; then
        quiet_pip "$pip_python" -m pip download -q --disable-pip-version-check --only-binary=:all: \
            --python-version "$image_python" -d "$cache/wheelhouse" -r "$cache/requirements.txt"
        rm -rf "$ctx/site-packages"
        quiet_pip "$pip_python" -m pip install -q --disable-pip-version-check --no-index --no-compile \
            --only-binary=:all: --python-version "$image_python" \
            --find-links "$cache/wheelhouse" --target "$ctx/site-packages" -r "$cache/requirements.txt"
        rm -rf "$ctx/site-packages/bin"
        echo "$req_hash" > "$ctx/site-packages.hash"
    fi

    # The service itself, as source: grader/ (templates and static files included), problems/, and the
    # contract with the sandbox that grader/ imports (stdlib only).
    rm -rf "$ctx/app"
    mkdir -p "$ctx/app/sandbox/runner"
    cp -r grader problems "$ctx/app/"
    cp sandbox/__init__.py "$ctx/app/sandbox/"
    cp sandbox/runner/__init__.py "${contract[@]}" "$ctx/app/sandbox/runner/"
    find "$ctx/app" -name '__pycache__' -prune -exec rm -rf {} +
    build torchjudge-service "$ctx" Dockerfile "$hash"
fi
