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
#   molecule/harness/demo.sh upgrade-fails  # site.yml on the demo host with an upgrade whose proof fails
#                                         # (`make demo-upgrade-fails`): SGLang 0.5.22+double (the double's second
#                                         # wheel, standins.sh), a proof that expects the wrong answer, and
#                                         # sglang_rollback_on_failure: true; the last proven state comes back
# `make demo-clean` removes the instance.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
export PATH="$REPO/.venv/bin:$PATH" ANSIBLE_CONFIG="$REPO/ansible.cfg"
cd "$REPO"

# upgrade-fails: site.yml as `make demo` runs it, with another release and a proof that cannot pass; the run
# fails, puts the last proven state back and says so; its message is printed last (the log has the rest).
if [ "${1:-}" = upgrade-fails ]; then
  shift
  docker inspect ct200-sim >/dev/null 2>&1 || { echo "demo: no demo instance (ct200-sim); run \`make demo\` first"; exit 1; }
  mkdir -p .cache/molecule/logs
  log=.cache/molecule/logs/demo-upgrade-fails.log
  echo "== simulated ct200: site.yml with SGLang 0.5.22+double and a proof that expects a cat (log: $log)"
  set +e
  MOLECULE_PROJECT_DIRECTORY="$REPO" ANSIBLE_STDOUT_CALLBACK=default ansible-playbook -i "$HERE/demo-inventory" \
    site.yml -l ct200-sim -e sglang_version=0.5.22+double -e '{"sglang_smoke_expect": "\\bcat\\b"}' \
    -e sglang_rollback_on_failure=true "$@" >"$log" 2>&1
  rc=$?
  set -e
  grep -E '^ct200-sim: ' "$log" | sed 's/^/   /' || true
  grep -E '^ct200-sim +: ok=' "$log" | sed 's/^/== recap: /' || true
  [ "$rc" -ne 0 ] || { echo "demo: the upgrade passed its proof (full log: $log)"; exit 1; }
  echo "demo: the upgrade failed its proof, as staged (full log: $log):"
  printf '\n%s\n' "$(python3 "$HERE/demo_lines.py" refusal <"$log")"
  exit 0
fi

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

"$HERE/prepare.sh" default  # the demo is the default scenario: no Debian 13 image
mkdir -p .cache/molecule/logs
log=.cache/molecule/logs/demo.log
echo "== simulated ct200: creating its container and installing the stand-ins (a minute or two the first time)"
molecule create -s default >"$log" 2>&1 || { echo "demo: the instance was not created (log: $log)"; exit 1; }
molecule prepare -s default >"$log" 2>&1 || { echo "demo: the instance was not prepared (log: $log)"; exit 1; }
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
  # The message that stopped the run, last and alone (molecule's own ERROR/CRITICAL lines stay in the log).
  stopped=$(python3 "$HERE/demo_lines.py" refusal <"$log")
  echo "demo: converge failed (full log: $log); what stopped it:"
  if [ -n "$stopped" ]; then printf '\n%s\n' "$stopped"; else strip <"$log" | grep -E -A15 'fatal:' | tail -40; fi
  exit 1
fi
took=$(( $(date +%s) - start ))
clean() { strip <"$log"; }
echo "== simulated ct200: site.yml converged in ${took} s (log: $log)"
clean | grep -oE '"msg": "The estimate gave a pool[^"]*"' | sed 's/^"msg": /   /' || true
# Every line of the role's summary: the plan, the calibration, the starts, the proof level and why, smoke and decode.
python3 "$HERE/demo_lines.py" summary <"$log" | sed 's/^/   /'
clean | grep -E '^ct200-sim +: ok=' | sed 's/^/== recap: /'
report=$(clean | grep -oE '"msg": "report: [^"]*"' | tail -1 | sed 's/^"msg": "report: //; s/"$//')
echo "== report: ${report:-none written (see $log)}"
echo "   next: make demo-plan, make demo-rollback ARGS='-e sglang_rollback_list=true', make demo-clean"
