"""The check phase through Ansible: site.yml, rollback.yml and plan.yml refuse bad input before connecting.

Every host here has an address no one answers (TEST-NET-1): a run that tried to connect would report an
unreachable host instead of the refusal.
"""

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
NOWHERE = "192.0.2.1"
# The four inputs of issue 16, one each: a misspelled knob, a target that cannot fit ct200, a driver branch
# 0.5.23's torch cannot use, a serial Ansible cannot use.
BAD = {
    "misspelled": ({"sglang_context_targt": 300000}, "unknown variable sglang_context_targt"),
    "unfit": ({"sglang_context_target": 400000}, "context_target 400,000 does not fit"),
    "driver": ({"nvidia_driver_branch": "570"}, "nvidia_driver_branch is 570"),
    "serial": ({"sglang_serial": "abc"}, "sglang_serial is 'abc': expected"),
}


def run(playbook, extra, *args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    extra = dict(extra, ansible_host=NOWHERE)
    return subprocess.run([PLAYBOOK_BIN, playbook, "-l", "ct200", "-e", json.dumps(extra), *args], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=300)


def assert_refused_without_connecting(result, words):
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    for word in words:
        assert word in out, out
    assert "UNREACHABLE" not in out and "unreachable=0" in out, out
    assert "Traceback" not in out, out


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("playbook", ["site.yml", "playbooks/rollback.yml", "playbooks/plan.yml"])
def test_each_bad_input_is_refused_by_name_before_any_connection(playbook, case):
    extra, words = BAD[case]
    if (playbook, case) in (("playbooks/plan.yml", "serial"), ("playbooks/rollback.yml", "unfit")):
        return  # plan.yml has no batches; a rollback restores a stored state with its own plan
    assert_refused_without_connecting(run(playbook, extra), [words])


def test_all_refusals_come_together_in_one_run():
    extra = {}
    for values, _ in BAD.values():
        extra.update(values)
    result = run("site.yml", extra)
    # the planner runs only on inputs that passed the checks, so the target's refusal waits for the typo's fix
    assert_refused_without_connecting(result, [BAD[c][1] for c in ("misspelled", "driver", "serial")])


def test_the_check_phase_comes_before_every_role_that_changes_a_host():
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    listing = subprocess.run([PLAYBOOK_BIN, "site.yml", "--list-tasks"], cwd=REPO, env=env, capture_output=True,
                             text=True, timeout=120).stdout
    check = listing.index("Check the inputs of every host")
    plan = listing.index("Plan with the host's GPUs, model and stored calibration")
    assert check < listing.index("preflight :") < plan < listing.index("nvidia_driver :")


def test_make_plan_refuses_a_misspelled_knob_given_to_make():
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    result = subprocess.run(["make", "-o", ".venv/.installed", "plan", "-e", "sglang_context_targt=300000"], cwd=REPO,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert "unknown variable sglang_context_targt" in result.stdout and "Did you mean sglang_context_target?" in \
        result.stdout, result.stdout + result.stderr
