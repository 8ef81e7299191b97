"""The check phase across the fleet: sglang_serial predicted over the deploy play's hosts (issue 24 item 4)."""

import pytest
from sglang_checks import fleet

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

