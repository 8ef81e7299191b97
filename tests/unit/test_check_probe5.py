"""probe-5's acceptances of the check phase (issue 36 item 4): what it lets through is what the roles and modules
accept. Each reproduction of ../shared/reference/probe-5.md N-S5-6, -7, -12 and -14 as the check phase's filter
sees it (sglang_check_hosts over the run's hostvars and groups), and what must still pass.
Through ansible-playbook: tests/integration/test_check_phase_probe5.py."""

import pytest
import sglang_check_phase
from sglang_checks import inputs, values

SERVER = {"ansible_host": "10.0.0.7", "sglang_host": "0.0.0.0", "sglang_api_key": "k-1",
          "group_names": ["sglang_servers"]}


def check(router_vars=None, server_vars=None, run=("ct200", "r1"), extra_hosts=()):
    """The check phase's refusals for an inventory of ct200 (a server) and r1 (a router) with these variables."""
    hostvars = {"ct200": dict(SERVER, **(server_vars or {})),
                "r1": dict({"group_names": ["sglang_routers"], "sglang_router_workers": ["ct200"]},
                           **(router_vars or {}))}
    for host in extra_hosts:
        hostvars[host] = dict(SERVER, ansible_host="10.0.0.8")
    groups = {"all": sorted(hostvars), "sglang_servers": ["ct200", *extra_hosts], "sglang_routers": ["r1"]}
    return sglang_check_phase.check_hosts(list(run), hostvars, groups)


def test_the_inventory_of_a_router_and_its_replica_passes():
    assert check() == []


# --- N-S5-6: the router's workers, its ports, its health-check path ---

@pytest.mark.parametrize("workers, words", [
    (["nosuchhost"], "nosuchhost not in the inventory"),
    (["ct20"], "ct20 not in the inventory. Did you mean ct200?"),
    (["../../x"], "holds '../../x', which is not an inventory host name"),
    ([1, 2], "holds 1, which is not an inventory host name"),
    (["file:///etc/passwd"], "holds 'file:///etc/passwd', which is not an inventory host name"),
    (["http://10.0.0.7:30000"], "holds 'http://10.0.0.7:30000', which is not an inventory host name"),
    ([], "sglang_router_workers is [] on r1"),
])
def test_a_worker_that_is_no_inventory_host_is_refused_by_the_check_phase(workers, words):
    found = check({"sglang_router_workers": workers})
    assert any(words in refusal for refusal in found), found


def test_a_worker_outside_the_run_is_still_read_from_the_inventory():
    # -l r1: the replica is not in the run, but the router's list is checked against it all the same
    assert check(run=("r1",)) == []
    assert any("ct200 listens on 127.0.0.1" in r for r in check(server_vars={"sglang_host": "127.0.0.1"}, run=("r1",)))


@pytest.mark.parametrize("router_vars, words", [
    ({"sglang_router_prometheus_port": 30000}, "sglang_router_prometheus_port and sglang_router_port are both port "
                                               "30000"),
    ({"sglang_router_prometheus_host": "0.0.0.0", "sglang_router_prometheus_port": "30000"}, "both port 30000"),
    ({"sglang_router_port": 29000}, "both port 29000"),
])
def test_the_router_s_metrics_port_cannot_be_its_own_port(router_vars, words):
    found = check(router_vars)
    assert any(words in refusal for refusal in found), found


def test_a_router_on_a_server_host_keeps_off_the_server_s_port():
    hostvars_router = {"sglang_router_workers": ["ct200"], "group_names": ["sglang_routers", "sglang_servers"],
                       "sglang_host": "0.0.0.0", "sglang_api_key": "k-1"}
    found = sglang_check_phase.check_hosts(["ct200"], {"ct200": dict(SERVER, **hostvars_router)},
                                           {"all": ["ct200"], "sglang_servers": ["ct200"], "sglang_routers": ["ct200"]})
    assert any("sglang_port (the SGLang server on this host) and sglang_router_port are both port 30000" in r
               for r in found), found


def test_listeners_on_different_addresses_may_share_a_port():
    from sglang_checks import router  # (imported here: the file runs against the code before router.py too)

    # what works: one port number on two addresses that do not overlap (a wildcard or a name overlaps everything)
    assert check({"sglang_router_host": "10.0.0.9", "sglang_router_prometheus_host": "127.0.0.1",
                  "sglang_router_prometheus_port": 30000}) == []
    assert router.overlap("0.0.0.0", "127.0.0.1") and router.overlap("::", "10.0.0.1")
    assert router.overlap("localhost", "127.0.0.1") and not router.overlap("127.0.0.1", "::1")
    assert not router.overlap("0.0.0.0", "::1")


@pytest.mark.parametrize("endpoint", ["health", "http://evil/h", "/health now", "/h%zz", "", "/health\n"])
def test_the_health_check_endpoint_is_a_path(endpoint):
    found = check({"sglang_router_health_check_endpoint": endpoint})
    assert any("sglang_router_health_check_endpoint is" in refusal for refusal in found), found


@pytest.mark.parametrize("endpoint", ["/health", "/health_generate", "/v1/models", "/health?deep=1", "/%7Ehealth"])
def test_a_health_check_path_sglang_router_can_append_passes(endpoint):
    assert check({"sglang_router_health_check_endpoint": endpoint}) == []


# --- N-S5-7: the role's run facts from the inventory or -e ---

@pytest.mark.parametrize("name, value", [
    ("sglang_smoke", {"level": "full"}), ("sglang_proof_level", {"level": "check"}),
    ("sglang_proof_record", {}), ("sglang_kv_plan_result", {"args": []}), ("sglang_starts", 0),
])
def test_a_run_fact_from_the_inventory_is_refused_as_the_role_s_own(name, value):
    found = check(server_vars={name: value})
    assert any(r.startswith("ct200: %s is the sglang role's own run fact" % name) for r in found), found


def test_the_old_switch_of_the_role_s_check_is_no_known_name():
    (refusal,) = check(server_vars={"sglang_inputs_checked": True})
    assert "unknown variable sglang_inputs_checked" in refusal


def test_the_playbooks_switches_are_no_run_facts():
    roles = inputs.roles_at(sglang_check_phase._ROLES)
    assert not roles.run_facts & set(inputs.PLAYBOOK_VARIABLES)


# --- N-S5-12: a host name that cannot be a file name ---

def test_a_host_name_too_long_for_its_picture_s_file_name_is_refused_with_the_limit():
    assert values.HOST_NAME_MAX == 255 - len(".png")
    (refusal,) = values.host_name_refusals("h" * 252)
    assert "252 characters long, over the 251" in refusal and "255 bytes" in refusal
    assert values.host_name_refusals("h" * 251) == []
    assert values.host_name_refusals("a/b") and values.host_name_refusals("a..b")


# --- N-S5-14: the token file, the home, the GPUs preflight needs, the package ---

@pytest.mark.parametrize("server_vars, words", [
    ({"sglang_hf_token_file": "/opt/sglang/runtimes/token"}, "is inside sglang_runtimes_dir (/opt/sglang/runtimes)"),
    ({"sglang_hf_token_file": "/var/backups/sglang/token"}, "is inside sglang_backup_dir (/var/backups/sglang)"),
    ({"sglang_hf_token_file": "/srv/models/kimi-k2.6/token"}, "is inside sglang_model_path (/srv/models/kimi-k2.6)"),
    ({"sglang_hf_token_file": "/home/alice/.cache/huggingface/token"}, "is in /home/alice, another user's home"),
    ({"sglang_hf_token_file": "/root/.cache/huggingface/token"}, "is in /root, another user's home"),
    ({"sglang_home": "/home/alice"}, "sglang_home (/home/alice) is in /home/alice, another user's home"),
    ({"sglang_home": "/home/alice/sglang"}, "sglang_home (/home/alice/sglang) is in /home/alice"),
    ({"sglang_home": "/srv/models"}, "sglang_home (/srv/models) is the folder that holds sglang_model_path"),
    ({"preflight_required_gpus": 0}, "preflight_required_gpus is 0: it is out of range"),
    ({"preflight_required_gpus": "eight"}, "preflight_required_gpus is 'eight': it is not a whole number"),
    ({"sglang_package": "/ctl/../etc/passwd"}, "sglang_package is '/ctl/../etc/passwd': it holds a '..' component"),
    ({"sglang_package": "sglang==0.5.23"}, "sglang_package is 'sglang==0.5.23': it is neither a URL nor a wheel"),
])
def test_questionable_acceptances_are_refused_by_name(server_vars, words):
    found = check(server_vars=server_vars)
    assert any(words in refusal for refusal in found), found


@pytest.mark.parametrize("server_vars", [
    {"sglang_hf_token_file": "/var/lib/sglang/.cache/huggingface/token"}, {"sglang_hf_token_file": "/etc/sglang/hf"},
    {"sglang_hf_token_file": "/srv/secrets/hf-token"},
    {"sglang_home": "/home/sglang", "sglang_hf_token_file": "/home/sglang/.cache/huggingface/token"},
    {"sglang_home": "/var/lib/sglang", "sglang_model_path": "/var/lib/sglang/models/kimi"},
    {"preflight_required_gpus": 8}, {"preflight_required_gpus": "4"},
    {"sglang_package": "/srv/wheels/sglang-0.5.23-py3-none-any.whl"},
    {"sglang_package": "git+https://github.com/ORG/sglang@REF#subdirectory=python"},
])
def test_what_the_roles_and_modules_take_still_passes(server_vars):
    assert check(server_vars=server_vars) == []


def test_the_role_s_own_check_sees_the_token_file_as_templated():
    # the role checks its knobs after defaults: the default token file below sglang_home passes, the home's rules hold
    knobs = {"sglang_home": "/var/lib/sglang", "sglang_hf_token_file": "/var/lib/sglang/.cache/huggingface/token"}
    assert values.folder_refusals("ct200", dict(knobs, sglang_user="sglang")) == []
    found = values.folder_refusals("ct200", dict(knobs, sglang_hf_token_file="/opt/sglang/venv/t",
                                                 sglang_venv="/opt/sglang/venv", sglang_user="sglang"))
    assert any("is inside sglang_venv" in refusal for refusal in found), found


def _set_by_the_role():
    """The sglang_* names the sglang role's task files set (set_fact keys, register) that are not knobs."""
    import glob
    import os

    import yaml

    names = set()

    def walk(tasks):
        for task in tasks or []:
            for key in ("block", "rescue", "always"):
                walk(task.get(key))
            names.update(k for k in (task.get("ansible.builtin.set_fact") or {}) if k.startswith("sglang_"))
            if str(task.get("register", "")).startswith("sglang_"):
                names.add(task["register"])
    for path in glob.glob(os.path.join(sglang_check_phase._ROLES, "sglang", "tasks", "*.yml")):
        with open(path, encoding="utf-8") as handle:
            walk(yaml.safe_load(handle))
    return names - values.declared_knobs()


def test_the_run_facts_are_the_names_the_role_sets():
    # a fact missing from the list would pass the check as a known name, -e over it included (probe-5 N-S5-7)
    assert inputs.roles_at(sglang_check_phase._ROLES).run_facts == _set_by_the_role()
