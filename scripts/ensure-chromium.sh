#!/usr/bin/env bash
# The browser tests drive Debian's Chromium (Playwright cannot download its own browser on these
# machines): installs it with apt when /usr/bin/chromium is missing, and does nothing otherwise.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
    exit 0
fi

echo "==> installing Chromium for the browser tests"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# DejaVu: readable text and a MathML-capable math font on a minimal image, for the screenshots.
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core fonts-dejavu-extra >/dev/null

if [ ! -x /usr/bin/chromium ]; then
    echo "chromium did not install at /usr/bin/chromium" >&2
    exit 1
fi
