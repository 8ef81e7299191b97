#!/usr/bin/env python3
"""A no-change re-run of site.yml on the simulated host: wall time, time per phase, prompt tokens received.

Not a test: a measurement (issue 18). It needs the molecule default instance converged (`make demo` leaves it so),
and holds nothing itself; run the whole sequence under the shared lock:

    flock /tmp/molecule.lock bash -c 'molecule converge -s default && .venv/bin/python tests/benchmarks/bench_rerun.py \
        && molecule destroy -s default'

It runs site.yml against the container through the docker connection, with the repository's inventory layout
(tests/benchmarks/layout.py: the instance in every group that holds ct200 in inventory/hosts.yml, so the model's
group_vars, TP 8 among them, reach it), inventory/group_vars and the simulation's group_vars/all
(molecule/shared/group_vars/all: the stand-ins, MOLECULE_PROJECT_DIRECTORY set to this checkout), and reads:
  - the wall time of ansible-playbook, and the PLAY RECAP's changed count;
  - the time per phase: per task file (the bench_timer callback beside this script records each task);
  - the prompt tokens the server received during the run: the sglang:prompt_tokens_total counter of the
    server's /metrics (SGLang's --enable-metrics; the double serves the same counter) before and after;
  - the proof level the run used (the report this run wrote on the controller says it).
A failed run (rc != 0, no recap, no task timed, no counter, no prompt token received, no report from this run)
prints why and exits 1, with no figure. Extra arguments go to ansible-playbook (e.g. -e sglang_proof=full).

--plan-only is the cheap form `make test` runs (tests/unit/test_benchmarks_cheap.py): the same inventory, group_vars,
environment and ansible-playbook command line, on playbooks/plan.yml (site.yml's check phase, then the plan printed)
instead of site.yml, so it needs no instance. The simulated GPU's memory (molecule/fixtures/ct200-gpus.json, what the
stand-in nvidia-smi tells preflight) is given as a host variable so that the check phase plans the host in full; a
layout that keeps the model, its drafter or TP 8 from the host leaves it unplanned, and that fails.
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from layout import REPO, write_inventory  # noqa: E402
from outcome import BenchmarkFailed, finish  # noqa: E402

KEY = "molecule-not-a-secret"  # molecule/shared/group_vars: the simulated server's API key, not a secret
GROUP_VARS = [os.path.join(REPO, "inventory", "group_vars"), os.path.join(REPO, "molecule", "shared", "group_vars")]
GPUS = os.path.join(REPO, "molecule", "fixtures", "ct200-gpus.json")
FINGERPRINT = os.path.join(REPO, ".cache", "molecule", "apt-repo", "standin-archive-key.fpr")
# The form of a fingerprint (40 hex digits) for --plan-only when molecule/harness/standins.sh has not made the
# stand-in key yet: the check phase reads the variable, nothing fetches or trusts a key in that mode.
PLACEHOLDER_FINGERPRINT = "0" * 40


def prompt_tokens_total(instance, port):
    """sglang:prompt_tokens_total summed over its labels, or None when the server serves no such counter (or no
    docker command is there to ask it)."""
    try:
        out = subprocess.run(["docker", "exec", instance, "curl", "-s", "-H", "Authorization: Bearer " + KEY,
                              "http://127.0.0.1:%d/metrics" % port], capture_output=True, text=True, check=False)
    except OSError:
        return None
    values = [float(m.group(1)) for m in re.finditer(r"^sglang:prompt_tokens_total(?:\{[^}]*\})? (\S+)$",
                                                     out.stdout, re.MULTILINE)]
    return int(sum(values)) if values else None


def host_variables(plan_only):
    """The instance's inventory variables: the docker connection; for --plan-only what preflight would read."""
    variables = {"ansible_connection": "community.docker.docker"}
    if plan_only:
        with open(GPUS, encoding="utf-8") as handle:
            gpus = json.load(handle)["gpus"]
        variables["sglang_gpu_memory_mib"] = min(gpu["memory_total_mib"] for gpu in gpus)
        if not os.path.isfile(FINGERPRINT):
            variables["nvidia_driver_repo_key_fingerprint"] = PLACEHOLDER_FINGERPRINT
    return variables


def phases(rows):
    """Seconds per task file (gather facts counted as its own phase), slowest first."""
    total = collections.Counter()
    for row in rows:
        name = "gather facts" if row["task"] == "Gathering Facts" else row["file"]
        total[name] += row["seconds"]
    return total.most_common()


def last_report(instance, since):
    """The report this run wrote on the controller, or {} when the newest is older than the run."""
    paths = sorted(glob.glob(os.path.join(REPO, "reports", instance, "*", "report.json")))
    if not paths or os.path.getmtime(paths[-1]) < since:
        return {}
    with open(paths[-1], encoding="utf-8") as handle:
        return json.load(handle)


def recap_changed(instance, stdout):
    """The PLAY RECAP's changed= count for the instance, or None when the run printed no recap for it."""
    recap = re.search(r"^%s\s*:\s*ok=.*$" % re.escape(instance), stdout, re.MULTILINE)
    found = re.search(r"changed=(\d+)", recap.group(0)) if recap else None
    return int(found.group(1)) if found else None


def failure(rc, changed, rows, before, after, report, output):
    """Why the re-run measured nothing, or None when every figure it prints was measured."""
    if rc != 0:
        return "ansible-playbook exited %d:\n%s" % (rc, output[-4000:])
    if changed is None:
        return "ansible-playbook printed no PLAY RECAP for the instance"
    if not rows:
        return "the bench_timer callback recorded no task"
    if before is None or after is None:
        return ("the server served no sglang:prompt_tokens_total on its /metrics (before: %s, after: %s): is the "
                "instance up, with sglang_metrics on?" % (before, after))
    if after - before <= 0:
        return "the server received %d prompt tokens: the run's proof sent none" % (after - before)
    if not report:
        return "the run wrote no report under reports/<instance>/"
    return None


def plan_failure(rc, instance, stdout):
    """(why the plan-only run failed or None, the instance's plan lines)."""
    lines = re.findall(r"^%s: target .*$" % re.escape(instance), stdout, re.MULTILINE)
    flags = re.findall(r"^flags: .*$", stdout, re.MULTILINE)
    if rc != 0:
        return "ansible-playbook exited %d:\n%s" % (rc, stdout[-4000:]), []
    if not lines or not flags:
        unplanned = re.findall(r"^%s: planned once .*$" % re.escape(instance), stdout, re.MULTILINE)
        return ("the check phase made no plan for %s (%s): it is not where ct200's model group puts a host?"
                % (instance, unplanned[0] if unplanned else "no plan line printed")), []
    return None, lines + flags


def environment(folder):
    """ansible-playbook's environment: the repository's config and plugins, the bench_timer callback."""
    return dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
                ANSIBLE_ROLES_PATH=os.path.join(REPO, "roles"), ANSIBLE_LIBRARY=os.path.join(REPO, "library"),
                ANSIBLE_FILTER_PLUGINS=os.path.join(REPO, "filter_plugins"),
                ANSIBLE_CALLBACK_PLUGINS=os.pathsep.join([os.path.join(REPO, "callback_plugins"),
                                                          os.path.join(HERE, "callback")]),
                ANSIBLE_CALLBACKS_ENABLED="sglang_progress,bench_timer", ANSIBLE_FORCE_COLOR="0",
                ANSIBLE_NOCOLOR="1", BENCH_TIMER_OUT=os.path.join(folder, "tasks.json"),
                BENCH_TIMER_ROOT=REPO + os.sep, MOLECULE_PROJECT_DIRECTORY=REPO, PIP_DISABLE_PIP_VERSION_CHECK="1")


def playbook_bin():
    """ansible-playbook beside this Python (the venv's), else the one on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    return beside if os.path.exists(beside) else "ansible-playbook"


def measure(args, extra):
    with tempfile.TemporaryDirectory(prefix="bench-rerun-") as folder:
        hosts = write_inventory(folder, {args.instance: host_variables(args.plan_only)}, GROUP_VARS)
        env = environment(folder)
        if args.plan_only:
            extra = ["-e", "sglang_report_dir=" + folder, *extra]
            began = time.monotonic()
            run = subprocess.run([playbook_bin(), "-i", hosts, os.path.join(REPO, "playbooks", "plan.yml"), *extra],
                                 env=env, capture_output=True, text=True, check=False, cwd=REPO)
            why, plan = plan_failure(run.returncode, args.instance, run.stdout or run.stderr)
            if why:
                raise BenchmarkFailed(why)
            return ["plan-only: %.1f s wall, rc 0 (playbooks/plan.yml on the benchmark's inventory: %s in ct200's "
                    "groups)" % (time.monotonic() - began, args.instance)] + plan
        before = prompt_tokens_total(args.instance, args.port)
        started = time.time()
        run = subprocess.run([playbook_bin(), "-i", hosts, args.playbook, *extra], env=env, capture_output=True,
                             text=True, check=False, cwd=REPO)
        wall = time.time() - started
        after = prompt_tokens_total(args.instance, args.port)
        timer_out = env["BENCH_TIMER_OUT"]
        rows = json.load(open(timer_out, encoding="utf-8")) if os.path.exists(timer_out) else []
    changed = recap_changed(args.instance, run.stdout)
    report = last_report(args.instance, started)
    why = failure(run.returncode, changed, rows, before, after, report, run.stdout or run.stderr)
    if why:
        raise BenchmarkFailed(why)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=1)
    proof = report.get("proof") or {}
    lines = ["re-run: %.1f s wall, rc 0, changed=%d, %d tasks; load %s" % (
                 wall, changed, len(rows), " ".join("%.2f" % x for x in os.getloadavg())),
             "prompt tokens the server received: %d" % (after - before),
             "proof level: %s (%s)" % (proof.get("level", "full (no level recorded)"), proof.get("level_reason", "")),
             "time per phase (task file, seconds):"]
    lines += ["  %6.1f  %s" % (seconds, name) for name, seconds in phases(rows)[:args.top]]
    lines.append("slowest tasks:")
    lines += ["  %6.1f  %s (%s)" % (row["seconds"], row["task"], row["file"])
              for row in sorted(rows, key=lambda r: -r["seconds"])[:8]]
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instance", default="ct200-sim")
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--playbook", default=os.path.join(REPO, "site.yml"))
    parser.add_argument("--top", type=int, default=12, help="phases to print")
    parser.add_argument("--json", help="write every task's time here (a list of rows)")
    parser.add_argument("--plan-only", action="store_true",
                        help="the cheap form: playbooks/plan.yml on the same inventory, no instance needed")
    args, extra = parser.parse_known_args(argv)
    return finish("bench_rerun", lambda: measure(args, extra))


if __name__ == "__main__":
    sys.exit(main())
