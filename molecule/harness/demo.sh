#!/usr/bin/env bash
# `make demo`: converge the default scenario (all of site.yml on a simulated ct200: stand-in NVIDIA
# packages, the SGLang double) with the boot's and the proof's progress live, then print the plan, the
# calibration, the restarts, the proof and where the run's report is (reports/ct200-sim/<timestamp>/report.html).
#
# As root, the first run installs Debian packages (docker.io, debootstrap, dpkg-dev, apt-utils, gnupg,
# gcc; molecule/harness/prepare.sh) and starts a Docker engine when none answers. That dockerd keeps
# running after `make demo-clean`; stop it with `kill "$(cat /var/run/docker.pid)"` (when systemd runs
# docker instead: `systemctl stop docker docker.socket`).
#
#   molecule/harness/demo.sh              # converge (`make demo`); run it again for the idempotent re-run
#   molecule/harness/demo.sh plan         # the demo host's plan with the calibration it stored (`make demo-plan`)
#   molecule/harness/demo.sh rollback ... # playbooks/rollback.yml on the demo host (`make demo-rollback`),
#                                         # e.g. `... rollback -e sglang_rollback_list=true`
# `make demo-clean` removes the instance.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
export PATH="$REPO/.venv/bin:$PATH" ANSIBLE_CONFIG="$REPO/ansible.cfg"
cd "$REPO"

# plan / rollback: the repository's own playbooks against the demo container, through Docker, with the
# scenario's group_vars (molecule/harness/demo-inventory links them).
if [ "${1:-}" = plan ] || [ "${1:-}" = rollback ]; then
  what=$1; shift
  export MOLECULE_PROJECT_DIRECTORY="$REPO"
  if [ "$what" = rollback ] && ! docker inspect ct200-sim >/dev/null 2>&1; then
    echo "demo: no demo instance (ct200-sim); run \`make demo\` first"; exit 1
  fi
  if [ "$what" = plan ] && docker inspect ct200-sim >/dev/null 2>&1; then
    # The calibration the demo host stored (its newest boot's P and A, /etc/ansible/facts.d), read through Docker
    # as a real host's would be read from its host_vars: the plan then says "calibrated", as ct200's does.
    stored=$(docker exec ct200-sim cat /etc/ansible/facts.d/sglang_calibration.fact 2>/dev/null || true)
    if [ -n "$stored" ]; then
      calibration=$(python3 -c 'import json, sys
entries = json.load(sys.stdin).get("entries") or {}
newest = max(entries.values(), key=lambda e: e.get("measured_at", ""), default=None)
if newest:
    print(json.dumps({"sglang_calibration": {k: newest[k] for k in ("pre_load_avail_gib", "post_load_avail_gib")}}))
' <<<"$stored")
      [ -n "$calibration" ] && { echo "demo: the demo host's stored calibration: $calibration"; set -- -e "$calibration" "$@"; }
    fi
  fi
  exec ansible-playbook -i "$HERE/demo-inventory" "playbooks/$what.yml" -l ct200-sim "$@"
fi

"$HERE/prepare.sh"
mkdir -p .cache/molecule/logs
log=.cache/molecule/logs/demo.log
molecule create -s default >/dev/null 2>&1
molecule prepare -s default >/dev/null 2>&1
# The demo paces the double's simulated weight load over 40 s (molecule's 1 s is for speed), so the boot's
# progress lines (SGLang's own shard bar, read by the wait) can be watched; a real ct200 takes ~6 minutes.
# Its prefill runs at 20,000 tokens/s (the double's default is 5 million), so the proof's 196,004-token prompt
# takes ~10 s and its progress shows too; a real ct200 takes longer still.
docker exec ct200-sim sed -i 's/"load_seconds": [0-9.]*\(, "prefill_tokens_per_s": [0-9.]*\)\{0,1\}/"load_seconds": 40, "prefill_tokens_per_s": 20000/' \
  /etc/sglang-double/gpu.json
start=$(date +%s)
strip() { sed -u 's/\x1b\[[0-9;]*m//g; s/^ *│ \{0,1\}//'; }
# One line per try of the boot wait and of the proof (callback_plugins/sglang_progress.py), as it happens.
live() { strip | grep --line-buffered -E '^ct200-sim: ' | sed -u 's/^/   /' || true; }
echo "== simulated ct200: converging site.yml (log: $log)"
set +e
COLUMNS=400 molecule converge -s default 2>&1 | tee "$log" | live
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -ne 0 ]; then
  strip <"$log" | grep -E -A15 'fatal:' | tail -40
  echo "demo: converge failed (full log: $log)"; exit 1
fi
took=$(( $(date +%s) - start ))
clean() { strip <"$log"; }
echo "== simulated ct200: site.yml converged in ${took} s (log: $log)"
clean | grep -oE '"msg": "The estimate gave a pool[^"]*"' | sed 's/^"msg": /   /' || true
clean | sed -n '/TASK \[sglang : Summarise the run\]/,/PLAY RECAP/p' | grep -E '^ +"(plan|trade-off|calibration|starts|smoke|concurrency)' | sed 's/^ *"/   /; s/",\{0,1\}$//; s/\\"/"/g'
clean | grep -E '^ct200-sim +: ok=' | sed 's/^/== recap: /'
report=$(clean | grep -oE '"msg": "report: [^"]*"' | tail -1 | sed 's/^"msg": "report: //; s/"$//')
echo "== report: ${report:-none written (see $log)}"
echo "   next: make demo-plan, make demo-rollback ARGS='-e sglang_rollback_list=true', make demo-clean"
