"""The check phase's plain-Python parts (lib/sglang_checks): names, specs, release rules, serial, nodes, URLs."""

import os

import pytest
import sglang_kvplan
from sglang_checks import fleet, inputs, planspec, urls

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = inputs.roles_at(os.path.join(REPO, "roles"))
SERVER = ["sglang_servers"]


def refusals(variables, groups=SERVER):
    return inputs.host_refusals("ct200", variables, groups, ROLES, sglang_kvplan.rules_for)


def test_the_inventory_defaults_pass():
    assert refusals({"sglang_context_target": 200000, "sglang_tp_size": 8}) == []


@pytest.mark.parametrize("name, close", [
    ("sglang_context_targt", "sglang_context_target"),
    ("nvidia_driver_brnch", "nvidia_driver_branch"),
    ("cuda_versoin", "cuda_version"),
    ("preflight_weights_free", "preflight_weights_free_gib"),
    ("sglang_router_prot", "sglang_router_port"),
    ("sglang_rollback_too", "sglang_rollback_to"),
])
def test_a_misspelled_knob_of_every_prefix_is_refused_with_the_closest_name(name, close):
    (refusal,) = refusals({name: "1"})
    assert refusal.startswith("ct200: unknown variable %s" % name)
    assert "Did you mean %s?" % close in refusal


def test_a_name_far_from_every_knob_gets_no_guess():
    (refusal,) = refusals({"sglang_zzzzzz": 1})
    assert "Did you mean" not in refusal


def test_the_argument_specs_are_applied_per_role_with_the_variable_named():
    (refusal,) = refusals({"sglang_context_target": "lots"})
    assert "sglang_context_target" in refusal and "roles/sglang/meta/argument_specs.yml" in refusal
    (refusal,) = refusals({"nvidia_driver_flavour": "closed"})
    assert "nvidia_driver_flavour" in refusal and "open" in refusal
    # a router host's knobs are checked against the router role's specs
    assert any("(role sglang_router)" in r for r in refusals({"sglang_router_port": "x"}, groups=["sglang_routers"]))


def test_a_secret_is_never_quoted():
    for refusal in refusals({"sglang_api_keyy": "s3cret-value"}) + refusals({"sglang_api_key": ["s3cret-value"]}):
        assert "s3cret-value" not in refusal


@pytest.mark.parametrize("variables, words", [
    ({"nvidia_driver_branch": "570"}, ["nvidia_driver_branch is 570", "driver branch 580 or newer"]),
    ({"sglang_kernel_sources": [{"repo": "https://example.invalid/k.git"}], "cuda_version": "12.9"},
     ["cuda_version is 12.9", "CUDA 13.0"]),
    ({"sglang_nodes": ["a", "b"], "sglang_dist_timeout": 3600, "sglang_ready_timeout": 1800},
     ["sglang_dist_timeout (3600 s) must be shorter than sglang_ready_timeout (1800 s)"]),
])
def test_release_and_multinode_rules(variables, words):
    (refusal,) = refusals(variables)
    for word in words:
        assert word in refusal


def test_an_older_release_takes_an_older_driver():
    assert refusals({"sglang_version": "0.5.9", "nvidia_driver_branch": "575"}) == []


@pytest.mark.parametrize("serial, sizes", [
    (None, [[0, 1, 2, 3, 4]]),
    (1, [[0], [1], [2], [3], [4]]),
    ("2", [[0, 1], [2, 3], [4]]),
    ([2, 1], [[0, 1], [2], [3], [4]]),
    ("40%", [[0, 1], [2, 3], [4]]),
    (["10%", 3], [[0], [1, 2, 3], [4]]),
])
def test_batches_follow_ansibles_serial(serial, sizes):
    assert fleet.batches(list(range(5)), serial) == sizes


HOSTVARS = {"a": {}, "b": {}, "c": {}}


@pytest.mark.parametrize("serial", ["abc", -1, [], [1, "x"], {"a": 1}, True])
def test_a_serial_ansible_cannot_use_is_refused_with_the_form_to_use(serial):
    (refusal,) = fleet.serial_refusals(["a", "b", "c"], HOSTVARS, {"sglang_serial": serial})
    assert refusal.startswith("sglang_serial is %r: expected" % (serial,)) and "-e sglang_serial=1" in refusal


def test_serial_in_the_inventory_is_refused_and_on_the_command_line_accepted():
    hostvars = {"a": {"sglang_serial": 1}, "b": {"sglang_serial": 1}, "c": {}}
    (refusal,) = fleet.serial_refusals(["a", "b", "c"], hostvars, {})
    assert refusal.startswith("sglang_serial is set in the inventory (a, b)") and "-e sglang_serial=1" in refusal
    assert fleet.serial_refusals(["a", "b", "c"], hostvars, {"sglang_serial": 1}) == []


def test_a_batch_that_splits_a_server_is_refused():
    nodes = {"sglang_nodes": ["n0", "n1"]}
    hostvars = {"n0": nodes, "n1": nodes, "r": {}}
    assert fleet.serial_refusals(["n0", "n1", "r"], hostvars, {"sglang_serial": [2, 1]}) == []
    (refusal,) = fleet.serial_refusals(["r", "n0", "n1"], hostvars, {"sglang_serial": [2, 1]})
    assert "splits the server of n0 (nodes n0, n1)" in refusal


def test_nodes_must_be_inventory_hosts_in_this_run():
    nodes = {"sglang_nodes": ["n0", "n1"]}
    (refusal,) = fleet.node_refusals(["n1"], {"n1": nodes}, {"n1"})
    assert "names n0, which the inventory does not have" in refusal
    (refusal,) = fleet.node_refusals(["n1"], {"n1": nodes}, {"n0", "n1"})
    assert "n0 is not in this run" in refusal
    assert fleet.node_refusals(["n0", "n1"], {"n0": nodes, "n1": nodes}, {"n0", "n1"}) == []


@pytest.mark.parametrize("listen, local", [
    ("127.0.0.1", "127.0.0.1"), ("0.0.0.0", "127.0.0.1"), ("", "127.0.0.1"), ("::1", "[::1]"), ("::", "[::1]"),
    ("fe80::1%eth0", "[fe80::1%eth0]"), ("localhost", "localhost"), ("[::1]", "[::1]"),
])
def test_local_addresses_are_ready_for_a_url(listen, local):
    assert urls.local_host(listen) == local


def test_worker_urls_bracket_ipv6_only():
    assert urls.http_url("10.0.0.1", 30000) == "http://10.0.0.1:30000"
    assert urls.http_url("2001:db8::5", 30000) == "http://[2001:db8::5]:30000"
    assert urls.http_url("ct200", "30001") == "http://ct200:30001"


@pytest.mark.parametrize("tp, pp, dp, dp_attention, nodes, gpus", [
    (8, 1, 1, False, 1, 8), (8, 1, 2, False, 1, 16), (8, 1, 8, True, 1, 8), (16, 1, 1, False, 2, 8),
    (4, 2, 2, False, 2, 8),
])
def test_gpus_per_node_counts_data_parallel_ranks_unless_dp_attention(tp, pp, dp, dp_attention, nodes, gpus):
    # SGLang 0.5.23 managers/data_parallel_controller.py: each DP rank starts tp x pp GPUs further on
    assert planspec.gpus_per_node(tp, pp, dp, dp_attention, nodes) == gpus


@pytest.mark.parametrize("extra, gpus", [([], 8), (["--device", "cpu"], 0), (["--enable-metrics", "--device=cpu"], 0),
                                         (["--device", "cuda"], 8), (["--device"], 8), (["--chat-template", "cpu"], 8)])
def test_sglang_s_cpu_engine_takes_no_gpu(extra, gpus):
    """molecule/real_server boots the real SGLang with --device cpu: its runtime check and the check phase's GPU count
    ask for none; any other device, or 'cpu' as another flag's value, takes tp x pp."""
    assert planspec.gpus_per_node(8, 1, 1, False, 1, extra) == gpus
    assert planspec.gpus_needed({"sglang_tp_size": 8, "sglang_extra_args": extra}) == gpus


@pytest.mark.parametrize("items, value", [
    (["--mm-feature-transport", "cuda_ipc"], "cuda_ipc"),
    (["--mm-feature-transport=cuda_vmm"], "cuda_vmm"),
    (["--mm-feature-trans", "cuda_ipc"], "cuda_ipc"),  # argparse's abbreviation
    (["--mm-feature-transport", "cpu", "--enable-metrics", "--mm-feature-transport", "cuda_ipc"], "cuda_ipc"),
    (["--enable-metrics"], None),
    (["--", "--mm-feature-transport", "cuda_ipc"], None),
])
def test_the_planner_reads_mm_feature_transport_from_the_extra_args(items, value):
    knobs = {"sglang_version": "0.5.23", "sglang_extra_args": items}
    assert planspec.mm_feature_transport(knobs) == value


def test_a_release_without_mm_feature_transport_reads_none():
    assert planspec.mm_feature_transport({"sglang_version": "0.5.9",
                                          "sglang_extra_args": ["--mm-feature-transport", "cuda_ipc"]}) is None


def test_the_spec_carries_the_transport_to_the_planner():
    knobs = {name: None for name in planspec.KNOBS}
    knobs.update(sglang_model="kimi-k2.6", sglang_tp_size=8, sglang_version="0.5.23", sglang_context_target=100_000,
                 sglang_gpu_memory_mib=97_887, sglang_extra_args=["--mm-feature-transport", "cuda_ipc"],
                 sglang_pool_policy="target")  # pinned, so the reserve shows in the headroom (fill's pool takes it)
    per_node = [planspec.node_inputs("h", knobs)]
    spec, server, _ = planspec.spec("h", knobs, per_node, "h")
    assert spec["mm_feature_transport"] == "cuda_ipc"
    plain = planspec.plan(dict(spec, mm_feature_transport=None), server)
    assert plain["headroom_gib"] - planspec.plan(spec, server)["headroom_gib"] == pytest.approx(1.0, abs=0.0011)


def _rope_knobs(**extra):
    knobs = {name: None for name in planspec.KNOBS}
    knobs.update(sglang_model="qwen3-32b", sglang_tp_size=4, sglang_version="0.5.23", sglang_context_target=131_072,
                 sglang_gpu_memory_mib=81_559, **extra)
    return knobs


def test_the_spec_carries_sglang_rope_scaling_to_the_plan():
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    knobs = _rope_knobs(sglang_rope_scaling=yarn)
    spec, server, _ = planspec.spec("h", knobs, [planspec.node_inputs("h", knobs)], "h")
    assert "--json-model-override-args" in planspec.plan(spec, server)["args"]
    # the operator's own --json-model-override-args beside it: SGLang takes one, so the two are refused together
    knobs = _rope_knobs(sglang_rope_scaling=yarn, sglang_extra_args=["--json-model-override-args", "{}"])
    with pytest.raises(sglang_kvplan.KVPlanError, match="sglang_rope_scaling and --json-model-override-args"):
        planspec.spec("h", knobs, [planspec.node_inputs("h", knobs)], "h")


def test_sglang_rope_scaling_misspelt_or_of_the_wrong_kind_is_refused_by_name():
    assert any("sglang_rope_scaling" in r for r in refusals({"sglang_rope_scalng": {}}))
    assert any("sglang_rope_scaling" in r for r in refusals({"sglang_rope_scaling": [4.0]}))
