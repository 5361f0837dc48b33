#!/usr/bin/env bash
# What `make test` needs on top of `make run`'s set-up: Chromium for the browser tests, and real
# Redis and PostgreSQL servers for the scale-out tests. Each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
scripts/ensure-chromium.sh
scripts/ensure-services.sh
