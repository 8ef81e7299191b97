#!/usr/bin/env python3
"""A no-change re-run of site.yml on the simulated host: wall time, time per phase, prompt tokens received.

Not a test: a measurement (issue 18). It needs the molecule default instance converged, and holds nothing
itself; run the whole sequence under the shared lock:

    flock /tmp/molecule.lock bash -c 'molecule converge -s default && tests/benchmarks/bench_rerun.py \
        && molecule destroy -s default'

It replays molecule/default/converge.yml (site.yml plus its read-only assertion) against the container
through the docker connection, with the inventory molecule builds (the host in sglang_servers, the shared
group_vars), and reads:
  - the wall time of ansible-playbook, and the PLAY RECAP's changed count;
  - the time per phase: per task file (the bench_timer callback beside this script records each task);
  - the prompt tokens the server received during the run: the sglang:prompt_tokens_total counter of the
    server's /metrics (SGLang's --enable-metrics; the double serves the same counter) before and after;
  - the proof level the run used (the last report on the controller says it).
Extra arguments go to ansible-playbook (e.g. -e sglang_proof=full).
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HERE = os.path.dirname(os.path.abspath(__file__))
KEY = "molecule-not-a-secret"  # molecule/shared/group_vars: the simulated server's API key, not a secret


def prompt_tokens_total(instance, port):
    """sglang:prompt_tokens_total summed over its labels, or None when the server serves no such counter."""
    out = subprocess.run(["docker", "exec", instance, "curl", "-s", "-H", "Authorization: Bearer " + KEY,
                          "http://127.0.0.1:%d/metrics" % port], capture_output=True, text=True, check=False)
    values = [float(m.group(1)) for m in re.finditer(r"^sglang:prompt_tokens_total(?:\{[^}]*\})? (\S+)$",
                                                     out.stdout, re.MULTILINE)]
    return int(sum(values)) if values else None


def inventory(folder, instance):
    os.symlink(os.path.join(REPO, "molecule", "shared", "group_vars"), os.path.join(folder, "group_vars"))
    path = os.path.join(folder, "hosts.yml")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"all": {"children": {"sglang_servers": {"hosts": {instance: {
            "ansible_connection": "community.docker.docker"}}}}}}, handle)
    return path


def phases(rows):
    """Seconds per task file (gather facts counted as its own phase), slowest first."""
    total = collections.Counter()
    for row in rows:
        name = "gather facts" if row["task"] == "Gathering Facts" else row["file"]
        total[name] += row["seconds"]
    return total.most_common()


def last_report(instance, since):
    paths = sorted(glob.glob(os.path.join(REPO, "reports", instance, "*", "report.json")))
    if not paths or os.path.getmtime(paths[-1]) < since:
        return {}
    with open(paths[-1], encoding="utf-8") as handle:
        return json.load(handle)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instance", default="ct200-sim")
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--playbook", default=os.path.join(REPO, "site.yml"))
    parser.add_argument("--top", type=int, default=12, help="phases to print")
    parser.add_argument("--json", help="write every task's time here (a list of rows)")
    args, extra = parser.parse_known_args()
    with tempfile.TemporaryDirectory(prefix="bench-rerun-") as folder:
        timer_out = os.path.join(folder, "tasks.json")
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
                   ANSIBLE_ROLES_PATH=os.path.join(REPO, "roles"), ANSIBLE_LIBRARY=os.path.join(REPO, "library"),
                   ANSIBLE_FILTER_PLUGINS=os.path.join(REPO, "filter_plugins"),
                   ANSIBLE_CALLBACK_PLUGINS=os.pathsep.join([os.path.join(REPO, "callback_plugins"),
                                                             os.path.join(HERE, "callback")]),
                   ANSIBLE_CALLBACKS_ENABLED="sglang_progress,bench_timer", ANSIBLE_FORCE_COLOR="0",
                   BENCH_TIMER_OUT=timer_out, BENCH_TIMER_ROOT=REPO + os.sep, MOLECULE_PROJECT_DIRECTORY=REPO,
                   PIP_DISABLE_PIP_VERSION_CHECK="1")
        before = prompt_tokens_total(args.instance, args.port)
        started = time.time()
        run = subprocess.run(["ansible-playbook", "-i", inventory(folder, args.instance), args.playbook, *extra],
                             env=env, capture_output=True, text=True, check=False, cwd=REPO)
        wall = time.time() - started
        after = prompt_tokens_total(args.instance, args.port)
        rows = json.load(open(timer_out, encoding="utf-8")) if os.path.exists(timer_out) else []
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=1)
    recap = re.search(r"^%s\s*:\s*ok=.*$" % re.escape(args.instance), run.stdout, re.MULTILINE)
    changed = re.search(r"changed=(\d+)", recap.group(0)).group(1) if recap else "?"
    if run.returncode != 0:
        print(run.stdout[-4000:], run.stderr[-2000:], sep="\n")
    report = last_report(args.instance, started)
    proof = report.get("proof") or {}
    print("re-run: %.1f s wall, rc %d, changed=%s, %d tasks" % (wall, run.returncode, changed, len(rows)))
    print("prompt tokens the server received: %s" % (
        "%d" % (after - before) if None not in (before, after)
        else "not counted (the server serves no sglang:prompt_tokens_total); the proof's own prompt: %s tokens"
        % proof.get("prompt_tokens", "?")))
    if report:
        print("proof level: %s (%s)" % (proof.get("level", "full (no level recorded)"), proof.get("level_reason", "")))
    print("time per phase (task file, seconds):")
    for name, seconds in phases(rows)[:args.top]:
        print("  %6.1f  %s" % (seconds, name))
    slow = sorted(rows, key=lambda r: -r["seconds"])[:8]
    print("slowest tasks:")
    for row in slow:
        print("  %6.1f  %s (%s)" % (row["seconds"], row["task"], row["file"]))
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
