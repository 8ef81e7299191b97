"""One server across nodes: this host's place in sglang_nodes, the least inputs over the nodes, the node flags."""

import pytest
import sglang_kvplan as kv

GIB = 2**30
# Llama 3.1 70B at bf16, TP8: one KV head of 128 per GPU (8 heads over 8 ranks), K and V, 80 layers, 2 bytes.
LLAMA70_CELL = 1 * (128 + 128) * 80 * 2
TWO_NODES = {"nnodes": 2, "node_rank": 1, "dist_init_host": "10.0.0.1", "dist_init_port": 20000, "dist_timeout": 300}
BASE = {"model": "kimi-k2.6", "tp_size": 8, "pre_load_avail_gib": 85.334, "post_load_avail_gib": 19.419,
        "context_target": 200_000}


def node(name, gpu=None, pre=None, post=None, **extra):
    calibration = dict(extra, pre_load_avail_gib=pre, post_load_avail_gib=post) if pre is not None else {}
    return {"node": name, "gpu_memory_mib": gpu, "calibration": calibration}


# ---- node_placement ---------------------------------------------------------------------------------------

def test_a_host_on_its_own_is_one_node_of_rank_0():
    for nodes in ([], None, ["ct200"]):
        assert kv.node_placement(nodes, "ct200") == {"nnodes": 1, "node_rank": 0, "nodes": ["ct200"], "rank0": "ct200"}


def test_the_rank_is_the_index_in_sglang_nodes():
    placed = kv.node_placement(["ct400-a", "ct400-b", "ct400-c", "ct400-d"], "ct400-c", 8, 1)
    assert (placed["nnodes"], placed["node_rank"], placed["rank0"]) == (4, 2, "ct400-a")


@pytest.mark.parametrize("nodes, host, tp, pp, words", [
    (["a", "b", "a"], "a", None, None, ["sglang_nodes", "lists a more than once", "once"]),
    (["a", "b"], "c", None, None, ["sglang_nodes", "does not list this host (c)", "[]"]),
    ("a,b", "a", None, None, ["sglang_nodes", "'a,b'", "rank order"]),
    (["a", ""], "a", None, None, ["sglang_nodes", "rank order"]),
    (["a", "b", "c"], "a", 8, 1, ["sglang_nodes lists 3 nodes", "sglang_tp_size 8", "List 2, 4 or 8 nodes",
                                  "a multiple of 3"]),
    (["a", "b"], "a", 3, 1, ["sglang_tp_size 3", "List 3 nodes", "a multiple of 2", "e.g. 4: 2 GPU(s) per node"]),
])
def test_bad_node_lists_are_named(nodes, host, tp, pp, words):
    with pytest.raises(kv.KVPlanError) as error:
        kv.node_placement(nodes, host, tp, pp)
    for word in words:
        assert word in str(error.value)


def test_pipeline_stages_count_towards_the_split():
    # tp 2 x pp 2 = 4 GPUs: two per node on two nodes (SGLang checks tp_size * pp_size % nnodes).
    assert kv.node_placement(["a", "b"], "b", 2, 2)["node_rank"] == 1
    with pytest.raises(kv.KVPlanError, match="tp_size 3 x sglang_pp_size 1 = 3 GPUs"):
        kv.node_placement(["a", "b"], "b", 3, 1)


# ---- server_inputs ----------------------------------------------------------------------------------------

def test_one_node_passes_through_unchanged():
    entry = node("ct200", 97887, 85.334, 19.419, draft_weights_gib=0.6, measured_at="x")
    out = kv.server_inputs([entry])
    assert out == {"gpu_memory_mib": 97887, "calibration": entry["calibration"], "limiting_node": "ct200", "notes": []}


def test_the_least_p_and_a_over_the_nodes_and_the_node_with_the_least_a():
    out = kv.server_inputs([node("a", 97887, 85.3, 68.9, draft_weights_gib=0.5, pool_tokens=1),
                            node("b", 81559, 72.5, 56.0, draft_weights_gib=0.7, pool_tokens=2)])
    assert out["gpu_memory_mib"] == 81559
    assert out["calibration"]["pre_load_avail_gib"] == 72.5
    assert out["calibration"]["post_load_avail_gib"] == 56.0
    assert out["calibration"]["draft_weights_gib"] == 0.7  # the most any node's draft took
    assert out["calibration"]["pool_tokens"] == 2  # the rest of the entry is the limiting node's
    assert out["limiting_node"] == "b"
    assert out["notes"] == ["the nodes measured different P and A (a P 85.300 GiB, A 68.900 GiB; b P 72.500 GiB, "
                            "A 56.000 GiB): the plan takes the least P (node b) and the least A (node b), as "
                            "SGLang's MIN over every rank does"]


def test_p_and_a_are_each_the_least_even_from_different_nodes():
    # SGLang all-reduces P (before the weights) and A (at the profile) separately: each is the MIN over ranks.
    out = kv.server_inputs([node("a", 97887, 80.0, 60.0), node("b", 97887, 90.0, 55.0), node("c", 97887, 85.0, 58.0)])
    assert (out["calibration"]["pre_load_avail_gib"], out["calibration"]["post_load_avail_gib"]) == (80.0, 55.0)
    assert out["limiting_node"] == "b"
    assert "least P (node a) and the least A (node b)" in out["notes"][0]


def test_equal_nodes_say_nothing_and_rank_0_is_named():
    out = kv.server_inputs([node("a", 97887, 85.0, 60.0), node("b", 97887, 85.0, 60.0)])
    assert (out["limiting_node"], out["notes"]) == ("a", [])


def test_numbers_as_strings_are_taken():
    out = kv.server_inputs([node("a", "97887", "85.0", "60.0"), node("b", 97887, 85.0, "59.5")])
    assert out["calibration"]["post_load_avail_gib"] == 59.5 and out["limiting_node"] == "b"


def test_a_node_without_calibration_makes_the_server_an_estimate_from_the_least_gpu():
    out = kv.server_inputs([node("a", 97887, 85.0, 60.0), node("b", 81559)])
    assert out["calibration"] == {}
    assert (out["gpu_memory_mib"], out["limiting_node"]) == (81559, "b")
    assert "no calibration on node(s) b" in out["notes"][0]
    assert "GPU memory differs over the nodes (a 97887 MiB; b 81559 MiB): the estimate uses the least, node b" \
        in out["notes"][1]


def test_an_unknown_gpu_is_said():
    out = kv.server_inputs([node("a", None, 85.0, 60.0), node("b", 81559, 70.0, 50.0)])
    assert out["gpu_memory_mib"] == 81559
    assert out["notes"][0] == "GPU memory unknown on node(s) a: the least over the others is 81559 MiB (node b)"
    none_known = kv.server_inputs([node("a"), node("b")])
    assert (none_known["gpu_memory_mib"], none_known["limiting_node"]) == (None, "a")


@pytest.mark.parametrize("entries, words", [
    ([node("a", 97887, 85.0, 60.0), node("b", 81559, 85.0, 60.0)], ["node b", "85.0 GiB is more than its GPU has"]),
    ([node("a", 97887, 60.0, 85.0), node("b", 97887, 85.0, 60.0)], ["node a", "post_load_avail_gib 85.0 > "]),
    ([node("a", "lots", 85.0, 60.0), node("b", 97887)], ["node a", "gpu_memory_mib", "'lots'"]),
    ([node("a", 97887, -1, 60.0), node("b", 97887)], ["node a", "pre_load_avail_gib", "-1"]),
    ([], ["one {node, gpu_memory_mib, calibration} per node"]),
    ([{"gpu_memory_mib": 1}], ["per node"]),
])
def test_bad_node_inputs_are_named(entries, words):
    with pytest.raises(kv.KVPlanError) as error:
        kv.server_inputs(entries)
    for word in words:
        assert word in str(error.value)


def test_the_plan_of_a_server_is_set_by_its_least_node():
    """Through the planner: pool policy max pins the pool to what A leaves above the headroom,
    floor((A - reserve) x 2^30 / cell) (docs/kv-pool-formula.md), here with node b's A; the reserve is SGLang's
    (1 - f) x the GPU at the 3-decimal fraction when that is over min_headroom_gib."""
    inputs = kv.server_inputs([node("a", 97887, 85.334, 68.9), node("b", 81559, 72.5, 56.0)])
    spec = dict(TWO_NODES, model="llama-3.1-70b", tp_size=8, context_target=100_000, pool_policy="max",
                gpu_memory_mib=inputs["gpu_memory_mib"], limiting_node=inputs["limiting_node"],
                **{k: inputs["calibration"][k] for k in ("pre_load_avail_gib", "post_load_avail_gib")})
    result = kv.plan(spec)
    # No GPU facts: the pin is a whole number of trtllm_mha's 64-token pages, so it holds on a B200 too.
    reserve = (1 - 0.949) * 81559 / 1024  # 4.062 GiB: 0.949 is 1 - 4 / 79.65 floored
    assert result["predicted_pool_tokens"] == int((56.0 - reserve) * GIB // LLAMA70_CELL) // 64 * 64 == 1_361_472
    assert result["limiting_node"] == "b" and result["explanation"].endswith(", limited by node b")
    assert result["mem_fraction_static"] == 0.949  # 1 - 4 GiB / node b's 79.65 GiB GPU, rounded down


# ---- the node flags ---------------------------------------------------------------------------------------

def test_the_node_flags_only_for_a_server_across_nodes():
    single = kv.plan(BASE)
    assert not {"--nnodes", "--node-rank", "--dist-init-addr", "--dist-timeout"} & set(single["args"])
    assert not {"nnodes", "node_rank", "limiting_node"} & set(single)  # a one-node plan is the dict it always was
    # A one-node server ignores the rendezvous knobs: its flags and its text are a plain host's.
    alone = kv.plan(dict(BASE, nnodes=1, node_rank=0, dist_init_host="10.0.0.1", dist_init_port=20000,
                         dist_timeout=300, limiting_node="ct200"))
    assert (alone["args"], alone["explanation"], alone["flags_summary"]) == (
        single["args"], single["explanation"], single["flags_summary"])
    multi = kv.plan(dict(BASE, limiting_node="ct400-b", **TWO_NODES))
    assert multi["args"][-8:] == ["--nnodes", "2", "--node-rank", "1", "--dist-init-addr", "10.0.0.1:20000",
                                  "--dist-timeout", "300"]
    assert multi["explanation"].endswith("calibrated (P 85.334 GiB, A 19.419 GiB), limited by node ct400-b")
    assert multi["flags_summary"].endswith(", node 1 of 2")
    assert (multi["nnodes"], multi["node_rank"], multi["limiting_node"]) == (2, 1, "ct400-b")


def test_ipv6_rank_0_goes_in_brackets_and_no_timeout_leaves_sglangs_own():
    args = kv.plan(dict(BASE, **dict(TWO_NODES, dist_init_host="fd00::1", dist_timeout=None)))["args"]
    assert args[-6:] == ["--nnodes", "2", "--node-rank", "1", "--dist-init-addr", "[fd00::1]:20000"]


def test_dp_attention_may_span_nodes():
    args = kv.plan(dict(BASE, dp_size=2, enable_dp_attention=True, **TWO_NODES))["args"]
    assert "--nnodes" in args


@pytest.mark.parametrize("change, words", [
    ({"nnodes": 3}, ["sglang_nodes lists 3 nodes", "sglang_tp_size 8", "List 2, 4 or 8 nodes"]),
    ({"node_rank": 2}, ["'node_rank'", "this host's index in sglang_nodes", "is 2", "2 node(s)"]),
    ({"dist_init_host": None}, ["sglang_dist_init_host", "not set", "--dist-init-addr"]),
    ({"dist_init_port": None}, ["sglang_dist_init_port", "not set", "20000"]),
    ({"dist_init_port": 70000}, ["sglang_dist_init_port", "1 and 65535", "70000"]),
    ({"dist_init_host": "10.0.0.1 10.0.0.2"}, ["sglang_dist_init_host", "host name or address"]),
    ({"dist_timeout": 0}, ["sglang_dist_timeout", "positive whole number"]),
    ({"nnodes": 0}, ["'nnodes'", "the number of hosts in sglang_nodes", "positive whole number"]),
    ({"dp_size": 2}, ["sglang_dp_size 2 with 2 nodes", "sglang_enable_dp_attention: true"]),
])
def test_bad_multi_node_input_is_named(change, words):
    with pytest.raises(kv.KVPlanError) as error:
        kv.plan(dict(BASE, **dict(TWO_NODES, **change)))
    for word in words:
        assert word in str(error.value)


def test_a_target_that_does_not_fit_names_the_node_that_limits_it():
    with pytest.raises(kv.KVPlanError, match=r"calibrated on node ct400-b, the least free\)"):
        kv.plan(dict(BASE, context_target=400_000, limiting_node="ct400-b", **TWO_NODES))
