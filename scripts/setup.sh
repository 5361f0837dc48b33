#!/usr/bin/env bash
# Everything `make run` and `make test` need on a fresh Debian machine, each step skipped when done:
# the virtual environment, a Docker engine, the base image, the sandbox image.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3.11}
stamp=.venv/.installed
if [ ! -x .venv/bin/python ]; then
    echo "==> creating .venv"
    "$python" -m venv .venv
fi
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    echo "==> installing Python dependencies"
    .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'
    touch "$stamp"
fi

scripts/ensure-docker.sh
scripts/ensure-base-image.sh
scripts/build-sandbox-image.sh
