"""How long the check phase and `make plan` take for a fleet: 10, 50 and 200 copies of ct200 in an inventory.

    python tests/benchmarks/bench_check_phase.py [10 50 200]

Each host gets ct200's host_vars (GPU memory, calibration, measured boots) and an address nobody answers, so a
run that tried to connect would fail. Prints the wall time of playbooks/check.yml (what site.yml runs first)
and of playbooks/plan.yml (the check phase, the printed plans and the pictures).
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def inventory(folder, count):
    with open(os.path.join(REPO, "inventory", "host_vars", "ct200.yml"), encoding="utf-8") as handle:
        ct200 = yaml.safe_load(handle)
    hosts = {"ct%03d" % i: dict(ct200, ansible_host="192.0.2.%d" % (i % 250 + 1)) for i in range(count)}
    shutil.copytree(os.path.join(REPO, "inventory", "group_vars"), os.path.join(folder, "group_vars"))
    path = os.path.join(folder, "hosts.yml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"sglang_servers": {"hosts": hosts}}, handle)
    return path


def timed(playbook, hosts_file, reports):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    start = time.monotonic()
    result = subprocess.run([PLAYBOOK_BIN, "-i", hosts_file, playbook, "-e", "sglang_report_dir=" + reports],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        sys.exit("%s failed:\n%s" % (playbook, result.stdout[-3000:]))
    return time.monotonic() - start


def main(counts):
    print("hosts  check phase (s)  make plan (s)  per host (ms)")
    for count in counts:
        with tempfile.TemporaryDirectory() as folder:
            hosts_file = inventory(folder, count)
            check = timed("playbooks/check.yml", hosts_file, folder)
            plan = timed("playbooks/plan.yml", hosts_file, folder)
        print("%5d  %15.1f  %13.1f  %13.0f" % (count, check, plan, 1000 * plan / count))


if __name__ == "__main__":
    main([int(n) for n in sys.argv[1:]] or [10, 50, 200])
