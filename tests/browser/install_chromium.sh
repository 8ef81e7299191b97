#!/usr/bin/env bash
# `make unit` (and `make test`) runs this first: tests/unit/test_report_browser.py opens the report in a headless
# Chromium, Debian's `chromium` package (/usr/bin/chromium). When it is missing and this runs as root, it is
# installed from the machine's apt sources without recommends (26 packages, 350 MB on disk; 19 s on a
# Debian 12 machine with a close mirror); otherwise this says how. Already installed: nothing to do.
set -euo pipefail
browser="${CHROMIUM:-chromium}"
if command -v "$browser" >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "chromium is missing: install it as root with" \
       "'apt-get install -y --no-install-recommends chromium' (or set CHROMIUM to a Chromium binary)" >&2
  exit 1
fi
start=$(date +%s)
echo "[test] installing chromium (apt-get, --no-install-recommends) for the report's browser test"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
echo "[test] chromium installed in $(( $(date +%s) - start )) s: $(chromium --version 2>/dev/null || echo '?')"
