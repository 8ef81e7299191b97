"""probe-5's acceptances through ansible-playbook (issue 36 item 4; ../shared/reference/probe-5.md): the check phase
refuses a router's workers that are no inventory hosts and its metrics port on its own port (N-S5-6) and a host name
that cannot be a file name (N-S5-12) before anything connects, and the sglang role's own input check runs whatever
-e says and refuses the role's run facts given from outside (N-S5-7). The plain-Python cases:
tests/unit/test_check_probe5.py."""

import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
NOWHERE = "192.0.2.1"  # TEST-NET-1: a run that tried to connect would report the host unreachable
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")


def playbook(*args):
    result = subprocess.run([PLAYBOOK_BIN, *args], cwd=REPO, env=ENV, capture_output=True, text=True, timeout=300)
    return result.returncode, result.stdout + result.stderr


def inventory(folder, servers, routers):
    """The repository's group_vars, and ct200's host_vars in each server's entry (a file named after a 252-character
    host could not be written)."""
    shutil.copytree(os.path.join(REPO, "inventory", "group_vars"), os.path.join(folder, "group_vars"))
    with open(os.path.join(REPO, "inventory", "host_vars", "ct200.yml"), encoding="utf-8") as handle:
        ct200 = yaml.safe_load(handle) or {}
    path = os.path.join(folder, "hosts.yml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"all": {"children": {
            "sglang_servers": {"hosts": {host: dict(ct200, **own) for host, own in servers.items()}},
            "sglang_routers": {"hosts": routers}}}}, handle)
    return path


def refused_without_connecting(code, out, words):
    assert code != 0, out
    for word in words:
        assert word in out, out
    assert "UNREACHABLE" not in out and "Traceback" not in out, out


SERVER = {"ansible_host": NOWHERE, "sglang_host": "0.0.0.0", "sglang_api_key": "k-1"}


def test_the_check_phase_refuses_a_router_s_bad_workers_and_ports(tmp_path):
    path = inventory(str(tmp_path), {"ct200": SERVER}, {"r1": {
        "ansible_host": NOWHERE, "sglang_router_workers": ["ct20", "file:///etc/passwd"],
        "sglang_router_prometheus_port": 30000, "sglang_router_health_check_endpoint": "http://evil/h"}})
    code, out = playbook("-i", path, "playbooks/check.yml")
    refused_without_connecting(code, out, [
        "r1: sglang_router_workers is ['ct20', 'file:///etc/passwd']: ct20 not in the inventory. Did you mean ct200?",
        "holds 'file:///etc/passwd', which is not an inventory host name",
        "sglang_router_prometheus_port and sglang_router_port are both port 30000",
        "sglang_router_health_check_endpoint is 'http://evil/h'"])


def test_the_router_role_used_alone_refuses_the_same(tmp_path):
    # the role's own check (tasks/assert.yml) is the check phase's function: the same inventory, the same sentences
    path = inventory(str(tmp_path), {"ct200": SERVER}, {"r1": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "sglang_router_workers": ["ct20"], "sglang_router_prometheus_port": 30000}})
    code, out = playbook("-i", path, "tests/router/role_localhost.yml")
    refused_without_connecting(code, out, ["ct20 not in the inventory. Did you mean ct200?",
                                           "sglang_router_prometheus_port and sglang_router_port are both port 30000"])


def test_a_host_name_too_long_for_a_file_name_is_refused_before_the_plan_s_picture(tmp_path):
    host = "h" * 252
    path = inventory(str(tmp_path), {host: {"ansible_host": NOWHERE}}, {})
    code, out = playbook("-i", path, "playbooks/plan.yml")
    refused_without_connecting(code, out, ["252 characters long, over the 251 a host name may have here"])
    assert "File name too long" not in out


def role_check(*args):
    return playbook("tests/integration/run_facts_localhost.yml", *args)


def test_the_role_s_own_check_runs_whatever_e_says():
    # before: -e sglang_inputs_checked=true skipped the whole check ("skipping", then the bad value went through)
    code, out = role_check("-e", json.dumps({"sglang_inputs_checked": True, "sglang_tp_size": "abc"}))
    assert code != 0, out
    assert "sglang_tp_size (role sglang)" in out and "unknown variable sglang_inputs_checked" in out, out


def test_a_run_fact_the_role_set_itself_passes_its_check():
    code, out = role_check()
    assert code == 0, out


@pytest.mark.parametrize("args, name", [
    (["-e", json.dumps({"sglang_proof_record": {"proven_at": 1}})], "sglang_proof_record"),
    # -e over a fact the role has set: extra vars beat set_fact, so the role would use the outside value
    (["-e", json.dumps({"sglang_kv_plan_result": {"args": ["--port", "1"]}})], "sglang_kv_plan_result"),
    (["-e", "play_vars_hosts=localhost"], "sglang_proof_record"),
])
def test_a_run_fact_from_outside_is_refused_by_the_role_s_own_check(args, name):
    code, out = role_check(*args)
    assert code != 0, out
    assert "localhost: %s is the sglang role's own run fact" % name in out, out


def test_a_run_fact_from_the_inventory_is_refused_by_the_role_s_own_check(tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "sglang_proof_level": {"level": "check"}}}}}))
    code, out = role_check("-i", str(path))
    assert code != 0, out
    assert "localhost: sglang_proof_level is the sglang role's own run fact" in out, out


@pytest.mark.parametrize("private", ["_sglang_check_refusals", "_refusals"])
def test_a_private_name_from_e_cannot_replace_the_check_phase_s_result(private):
    # -e beats every fact of a play: the check phase's own list of refusals given as [] would let a typo through
    code, out = playbook("-l", "ct200", "playbooks/check.yml",
                         "-e", json.dumps({private: [], "sglang_context_targt": 300000, "ansible_host": NOWHERE}))
    refused_without_connecting(code, out, ["-e sets %s, a private name" % private])


@pytest.mark.parametrize("private", [{"_refusals": []}, {"_knobs": {}}])
def test_a_private_name_from_e_cannot_replace_the_role_s_own_check(private):
    code, out = role_check("-e", json.dumps(dict(private, sglang_tp_size="abc")))
    assert code != 0, out
    assert "localhost: -e sets %s, a private name" % next(iter(private)) in out, out
