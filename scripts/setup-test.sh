#!/usr/bin/env bash
# What `make test` needs on top of `make run`'s set-up: Chromium and axe-core for the browser tests, and real
# Redis and PostgreSQL servers for the scale-out tests, and gVisor (runsc) registered with the
# engine so that the security suite also runs under it. Each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
scripts/ensure-chromium.sh
scripts/ensure-axe.sh
scripts/ensure-services.sh
scripts/ensure-runsc.sh
