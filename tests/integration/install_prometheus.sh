#!/usr/bin/env bash
# `make unit` (and `make test`) runs this first: tests/integration/test_prometheus_*.py load the rendered scrape
# configuration and rules in a real Prometheus, Debian's `prometheus` package (/usr/bin/prometheus and
# /usr/bin/promtool; Debian 12 ships 2.42). When it is missing and this runs as root, it is installed from the
# machine's apt sources without recommends, and the package's own service is stopped and disabled (the tests
# start their own on a free loopback port); otherwise this says how. Already installed: nothing to do.
set -euo pipefail
if command -v "${PROMETHEUS:-prometheus}" >/dev/null 2>&1 && command -v "${PROMTOOL:-promtool}" >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "prometheus is missing: install it as root with" \
       "'apt-get install -y --no-install-recommends prometheus' (or set PROMETHEUS and PROMTOOL to its binaries)" >&2
  exit 1
fi
start=$(date +%s)
echo "[test] installing prometheus (apt-get, --no-install-recommends) for the scrape and rule tests"
apt-get update -qq
# policy-rc.d 101: the package's postinst must not start a server on :9090 that nobody asked for
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy" && made_policy=1
fi
trap '[ "$made_policy" = 1 ] && rm -f "$policy"' EXIT
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
echo "[test] prometheus installed in $(( $(date +%s) - start )) s: $(prometheus --version 2>&1 | head -1)"
