"""A server across nodes before anything restarts (lib/sglang_state/nodes.py): every node in this batch, the same
code and weights on each, one sentence naming the node and the fix."""

from sglang_state.nodes import nodes_refusals

NODES = ["ct400-a", "ct400-b"]
SAME = {"ct400-a": {"sglang": "0.5.23"}, "ct400-b": {"sglang": "0.5.23"}}
SHA = {"ct400-a": "abc", "ct400-b": "abc"}


def test_the_same_code_and_weights_on_every_node_in_the_batch_pass():
    assert nodes_refusals(NODES, "ct400", "ct400-b", NODES, SAME, SHA) == []


def test_a_node_left_out_of_the_batch_is_named_with_the_batch_size_that_fits():
    (sentence,) = nodes_refusals(NODES, "ct400", "ct400-a", ["ct400-a"], SAME, SHA)
    assert "ct400-b is not in this batch of the play" in sentence and "a multiple of 2" in sentence


def test_a_host_that_is_not_a_node_of_its_server_is_named():
    (sentence,) = nodes_refusals(NODES, "ct400", "gpu-9", NODES, SAME, SHA)
    assert "this host gpu-9 is not one of them" in sentence


def test_another_release_or_checkpoint_on_a_node_is_named_on_both():
    versions = dict(SAME, **{"ct400-b": {"sglang": "0.5.22"}})
    for host, other in (("ct400-a", "ct400-b"), ("ct400-b", "ct400-a")):
        (sentence,) = nodes_refusals(NODES, "ct400", host, NODES, versions, dict(SHA, **{"ct400-b": "def"}))
        assert sentence.startswith("The nodes of ct400 differ: %s has versions" % other)
        assert "checkpoint" in sentence and "re-run so that install and download converge" in sentence


def test_an_interface_named_for_nccl_or_gloo_that_the_node_lacks_is_refused_by_name():
    (sentence,) = nodes_refusals(NODES, "ct400", "ct400-b", NODES, SAME, SHA, ["ib0", ""], ["lo", "eth0"])
    assert sentence.startswith("ct400-b has no network interface ib0 (sglang_nccl_socket_ifname")
    assert "it has eth0, lo" in sentence
    assert nodes_refusals(NODES, "ct400", "ct400-b", NODES, SAME, SHA, ["eth0", "eth0"], ["lo", "eth0"]) == []
