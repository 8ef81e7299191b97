#!/usr/bin/env bash
# Run `molecule test` for each scenario (all of them by default) on a machine prepared by prepare.sh,
# and end with one plain line: "molecule: N passed, M failed".
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
export PATH="$REPO/.venv/bin:$PATH"
cd "$REPO"
"$HERE/prepare.sh" || { echo "molecule: 0 passed, 1 failed"; exit 1; }
LOGS="$REPO/.cache/molecule/logs"; mkdir -p "$LOGS"
scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
  for f in molecule/*/molecule.yml; do scenarios+=("$(basename "$(dirname "$f")")"); done
fi
passed=0; failed=0
for scenario in "${scenarios[@]}"; do
  start=$(date +%s)
  if molecule test -s "$scenario" >"$LOGS/$scenario.log" 2>&1; then
    passed=$((passed + 1)); verdict=passed
  else
    failed=$((failed + 1)); verdict=FAILED
    sed 's/\x1b\[[0-9;]*m//g' "$LOGS/$scenario.log" | grep -E -B2 -A12 'fatal:|FAILED!|failed=[1-9]|Error|assert' | tail -60
  fi
  echo "molecule scenario $scenario: $verdict in $(( $(date +%s) - start )) s (log: .cache/molecule/logs/$scenario.log)"
done
echo "molecule: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
