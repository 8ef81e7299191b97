"""The check phase at fleet size and its serial prediction (issue 28 item 1, issue 24 item 4).

The check phase reads every host through Ansible's real hostvars here (an inventory of ct200 copies on disk): what
it costs per host must not grow with the inventory, and sglang_serial is predicted over the deploy play's hosts.
"""

import os
import shutil

import pytest
import yaml
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import filter_loader
from ansible.template import Templar, trust_as_template
from ansible.vars.hostvars import HostVars
from ansible.vars.manager import VariableManager
from sglang_checks import fleet, inputs

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def in_a_template(expression, loader, **variables):
    """`expression` evaluated as a playbook's template evaluates it: filters get lazy containers, not plain values."""
    filter_loader.add_directory(os.path.join(REPO, "filter_plugins"))
    return Templar(loader=loader, variables=variables).template(trust_as_template("{{ %s }}" % expression))


def ansible_inventory(folder, count):
    """(hosts, hostvars, groups) of an inventory of `count` ct200 copies, each with its own host_vars file."""
    os.makedirs(os.path.join(folder, "host_vars"))
    shutil.copytree(os.path.join(REPO, "inventory", "group_vars"), os.path.join(folder, "group_vars"))
    hosts = ["ct%03d" % i for i in range(count)]
    for host in hosts:
        shutil.copy(os.path.join(REPO, "inventory", "host_vars", "ct200.yml"),
                    os.path.join(folder, "host_vars", host + ".yml"))
    with open(os.path.join(folder, "hosts.yml"), "w", encoding="utf-8") as handle:
        # in ct200's model group, as inventory/hosts.yml has it (Kimi K2.6, TP8, its drafter)
        group = {"hosts": {h: {"ansible_host": "192.0.2.1"} for h in hosts}}
        yaml.safe_dump({"sglang_servers": {"children": {"kimi_k26_dflash": group}}}, handle)
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[os.path.join(folder, "hosts.yml")])
    variables = VariableManager(loader=loader, inventory=inventory)
    return hosts, HostVars(inventory, variables, loader), inventory.get_groups_dict(), loader


PLAIN = (dict, list, str, int, float, bool, type(None))


def kinds(value):
    """Every type inside a value."""
    if isinstance(value, dict):
        return {type(value)}.union(*(kinds(k) | kinds(v) for k, v in value.items()))
    if isinstance(value, list):
        return {type(value)}.union(*(kinds(v) for v in value))
    return {type(value)}


def test_the_per_host_checks_get_plain_values(monkeypatch, tmp_path):
    # hostvars hand a filter lazy containers that carry the host's whole variable context (every group's host list
    # among it); ansible-core's argument-spec validator deep-copies what it checks, so with lazy values each host
    # cost more in a larger fleet (200 hosts: 127 s instead of 6 s under the same load).
    seen, real = [], inputs.host_refusals

    def recording(host, variables, *args, **kwargs):
        seen.append(kinds(variables))
        return real(host, variables, *args, **kwargs)

    monkeypatch.setattr(inputs, "host_refusals", recording)
    hosts, hostvars, groups, loader = ansible_inventory(str(tmp_path), 2)
    assert in_a_template("hosts | sglang_check_hosts(hostvars, groups)", loader, hosts=hosts, hostvars=hostvars,
                         groups=groups) == []
    assert len(seen) == 2 and set().union(*seen) <= set(PLAIN), seen


def test_the_plans_are_plain_values_one_per_server_host(tmp_path):
    hosts, hostvars, _, loader = ansible_inventory(str(tmp_path), 3)
    plans = in_a_template("hosts | sglang_plan_hosts(hostvars)", loader, hosts=hosts, hostvars=hostvars)
    assert sorted(plans) == hosts
    assert set().union(*(kinds(p) for p in plans.values())) <= set(PLAIN)
    assert len({p["plan"]["explanation"] for p in plans.values()}) == 1
    servers = in_a_template("plans | sglang_plan_pictures(hostvars)", loader, plans=plans, hostvars=hostvars)
    assert len({s["key"] for s in servers}) == 1  # make plan draws one picture for the three


NODES = {"sglang_nodes": ["n0", "n1"]}


@pytest.mark.parametrize("order, serial, split", [
    (["r", "n0", "n1"], 2, False),        # the router is in the run, not in the deploy play's batches
    (["r", "one", "n0", "n1"], 2, True),  # one | n0 ... n1: the review's missed split
    (["r", "one", "n0", "n1"], 3, False),
    (["one", "n0", "n1"], [1, 2], False),
])
def test_serial_batches_the_deploy_plays_hosts(order, serial, split):
    hostvars = {"r": {}, "one": {}, "n0": NODES, "n1": NODES}
    deploy = fleet.play_hosts(order, [h for h in ("one", "n0", "n1") if h in order])
    refusals = fleet.serial_refusals(order, hostvars, {"sglang_serial": serial}, deploy)
    assert bool(refusals) == split
    assert not refusals or refusals[0].startswith("sglang_serial %r splits the server of n0" % (serial,))


def test_the_deploy_play_follows_the_groups_order_and_the_limit():
    # groups['sglang_servers'] is the order Ansible batches the play in; the run's hosts (-l) only filter it
    assert fleet.play_hosts(["n1", "r", "n0", "one"], ["one", "n0", "n1"]) == ["one", "n0", "n1"]
    assert fleet.play_hosts(["n0", "n1"], ["one", "n0", "n1"]) == ["n0", "n1"]


def test_a_node_outside_the_run_is_the_node_check_s_refusal_alone():
    hostvars = {"n0": NODES, "n1": NODES}
    assert fleet.serial_refusals(["n0"], hostvars, {}, ["n0"]) == []
    (refusal,) = fleet.node_refusals(["n0"], hostvars, {"n0", "n1"})
    assert "n1 is not in this run" in refusal

