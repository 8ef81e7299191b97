#!/usr/bin/env bash
# `make demo`: converge the default scenario (all of site.yml on a simulated ct200: stand-in NVIDIA
# packages, the SGLang double) and print the plan, the calibration, the restarts and the proof.
# Run it again to see an idempotent re-run (no restart); `make demo-clean` removes the instance.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
export PATH="$REPO/.venv/bin:$PATH"
cd "$REPO"
"$HERE/prepare.sh"
mkdir -p .cache/molecule/logs
log=.cache/molecule/logs/demo.log
molecule create -s default >/dev/null 2>&1
molecule prepare -s default >/dev/null 2>&1
start=$(date +%s)
if ! COLUMNS=400 molecule converge -s default >"$log" 2>&1; then
  sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E -A15 'fatal:' | tail -40
  echo "demo: converge failed (full log: $log)"; exit 1
fi
took=$(( $(date +%s) - start ))
clean() { sed 's/\x1b\[[0-9;]*m//g; s/^ *│ \{0,1\}//' "$log"; }
echo "== simulated ct200: site.yml converged in ${took} s (log: $log)"
clean | grep -oE '"msg": "The estimate gave a pool[^"]*"' | sed 's/^"msg": /   /' || true
clean | sed -n '/TASK \[sglang : Summarise the run\]/,/PLAY RECAP/p' | grep -E '^ +"(plan|calibration|starts|smoke)' | sed 's/^ *"/   /; s/",\{0,1\}$//; s/\\"/"/g'
clean | grep -E '^ct200-sim +: ok=' | sed 's/^/== recap: /'
