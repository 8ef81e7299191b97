#!/usr/bin/env bash
# Run `molecule test` for each scenario (all of them by default) on a machine prepared by prepare.sh,
# MOLECULE_LANES at a time (default 3; make test runs 5 beside its other checks: each scenario has its own instance
# names), the longest first but real_server before gpu_host (make test starts the real SGLang contract once
# real_server has ended: the two never hold their ~10-19 GiB installs at once), and end with one plain line:
# "molecule: N passed, M failed".
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
export PATH="$REPO/.venv/bin:$PATH"
cd "$REPO"
"$HERE/prepare.sh" "$@" || {  # the Debian 13 image only for a scenario that uses it
  echo "molecule: 0 passed, 1 failed"; exit 1; }
LOGS="$REPO/.cache/molecule/logs"; mkdir -p "$LOGS"
LANES="${MOLECULE_LANES:-3}"
scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
  # longest first, so that the lanes end together (measured on a 2-core machine: docs/testing.md); real_server
  # (about as long as gpu_host) first of the two, so that make test's real-contract can start early
  for s in rollback scaleout undersized default real_server gpu_host; do [ -f "molecule/$s/molecule.yml" ] && scenarios+=("$s"); done
  for f in molecule/*/molecule.yml; do
    s="$(basename "$(dirname "$f")")"; [[ " ${scenarios[*]} " == *" $s "* ]] || scenarios+=("$s")
  done
fi
run_one() {  # scenario -> its verdict line in $LOGS/<scenario>.verdict
  local scenario="$1" start; start=$(date +%s)
  if molecule test -s "$scenario" >"$LOGS/$scenario.log" 2>&1; then verdict=passed; else verdict=FAILED; fi
  echo "$verdict $(( $(date +%s) - start ))" >"$LOGS/$scenario.verdict"
}
rm -f "$LOGS"/*.verdict
running=0
for scenario in "${scenarios[@]}"; do
  if [ "$running" -ge "$LANES" ]; then wait -n; running=$((running - 1)); fi
  run_one "$scenario" & running=$((running + 1))
done
wait
passed=0; failed=0
for scenario in "${scenarios[@]}"; do
  read -r verdict seconds <"$LOGS/$scenario.verdict" || { verdict=FAILED; seconds=0; }
  if [ "$verdict" = passed ]; then passed=$((passed + 1)); else
    failed=$((failed + 1))
    sed 's/\x1b\[[0-9;]*m//g' "$LOGS/$scenario.log" | grep -E -B2 -A12 'fatal:|FAILED!|failed=[1-9]|Error|assert' | tail -60
  fi
  echo "molecule scenario $scenario: $verdict in $seconds s (log: .cache/molecule/logs/$scenario.log)"
done
echo "molecule: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
