"""How long the check phase and `make plan` take for a fleet: 50 and 200 copies of ct200 (issue 28).

    python tests/benchmarks/bench_fleet.py [50 200] [--repeat N] [ansible-playbook arguments, e.g. -e x=y]

Each host is laid out as the repository lays out ct200: in every group that holds ct200 in inventory/hosts.yml
(tests/benchmarks/layout.py; today the model's group, kimi_k26_dflash, whose group_vars carry the model and TP 8),
its own host_vars/<host>.yml (a copy of ct200's: GPU memory, calibration and measured boots), the repository's
group_vars, and an address nobody answers, so a run that tried to connect would fail. For each count, prints the
wall and CPU seconds (the controller and its workers) of playbooks/check.yml (what site.yml runs first) and
playbooks/plan.yml (the check phase, the printed plans and the pictures), then the 200-host time over the 50-host
time. A failed run, or a host the plan does not print, prints why and exits 1 with no figure. The machine's load
average is printed with each line: on a shared machine the wall time follows the load, the CPU time far less.
Targets: 200 hosts planned in at most 20 s on an idle 2-core machine, and at most 4.6 times the 50-host time (linear
in the hosts, with Ansible's start-up on top). `make test` runs it once for 2 hosts
(tests/unit/test_benchmarks_cheap.py).
"""

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from layout import REPO, write_inventory  # noqa: E402
from outcome import BenchmarkFailed, finish  # noqa: E402

PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def inventory(folder, count):
    """`count` copies of ct200, each in ct200's groups with its own host_vars file, as the inventory has ct200."""
    os.makedirs(os.path.join(folder, "host_vars"))
    hosts = {}
    for i in range(count):
        host = "ct%03d" % i
        hosts[host] = {"ansible_host": "192.0.2.%d" % (i % 250 + 1)}
        shutil.copy(os.path.join(REPO, "inventory", "host_vars", "ct200.yml"),
                    os.path.join(folder, "host_vars", host + ".yml"))
    return write_inventory(folder, hosts, [os.path.join(REPO, "inventory", "group_vars")]), sorted(hosts)


def timed(playbook, hosts_file, reports, extra):
    """(wall s, CPU s of the run and its workers, stdout) of one ansible-playbook run, which must pass."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    result = subprocess.run([PLAYBOOK_BIN, "-i", hosts_file, playbook, "-e", "sglang_report_dir=" + reports, *extra],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise BenchmarkFailed("%s exited %d:\n%s" % (playbook, result.returncode,
                                                     (result.stdout or result.stderr)[-3000:]))
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), result.stdout


def unplanned(hosts, stdout):
    """The hosts make plan printed no plan for ('<host>: target ...'): the inventory kept something from them."""
    planned = set(re.findall(r"^(\S+): target ", stdout, re.MULTILINE))
    return [host for host in hosts if host not in planned]


def measure(args, extra):
    lines = ["hosts  check phase wall/cpu (s)  make plan wall/cpu (s)  load (1 min)"]
    plans = {}
    for _ in range(args.repeat):
        for count in args.counts:
            with tempfile.TemporaryDirectory() as folder:
                hosts_file, hosts = inventory(folder, count)
                check = timed("playbooks/check.yml", hosts_file, folder, extra)
                plan = timed("playbooks/plan.yml", hosts_file, folder, extra)
            missing = unplanned(hosts, plan[2])
            if missing:
                raise BenchmarkFailed("make plan printed no plan for %d of %d hosts (%s ...): they are not where "
                                      "ct200 is in inventory/hosts.yml?" % (len(missing), count, missing[0]))
            plans.setdefault(count, []).append(plan[:2])
            lines.append("%5d  %12.1f / %5.1f  %14.1f / %5.1f  %12.2f"
                         % (count, check[0], check[1], plan[0], plan[1], os.getloadavg()[0]))
    if len(plans) > 1:
        low, high = min(plans), max(plans)
        best = {count: (min(w for w, _ in runs), min(c for _, c in runs)) for count, runs in plans.items()}
        lines.append("make plan, %d hosts over %d (best of %d): wall %.2fx, cpu %.2fx"
                     % (high, low, args.repeat, best[high][0] / best[low][0], best[high][1] / best[low][1]))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("counts", nargs="*", type=int, default=[50, 200])
    parser.add_argument("--repeat", type=int, default=1)
    args, extra = parser.parse_known_args(argv)
    return finish("bench_fleet", lambda: measure(args, extra))


if __name__ == "__main__":
    sys.exit(main())
