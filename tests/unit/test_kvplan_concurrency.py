"""The third lever: --max-running-requests planned from the pool and the headroom, its costs printed."""

import pytest
import sglang_kvplan as kv
from sglang_checks import planspec
from sglang_kvplan import concurrency, memory

GIB = 2**30
# ct200 as the repository's inventory has it: Kimi K2.6, TP8, bf16 KV, calibrated, 0.5.23's rules.
CT200 = {"model": "kimi-k2.6", "tp_size": 8, "pre_load_avail_gib": 85.334, "post_load_avail_gib": 19.419,
         "gpu_memory_mib": 97_887, "context_target": 200_000, "pool_policy": "target"}
HIDDEN = 7168  # Kimi K2's hidden_size


def table_gib(running, context, extra=4):
    return (running + 1) * (context + extra) * 4 / GIB  # (rows + padding row) x (context + 4) int32


def test_request_table_is_sglangs_req_to_token_pool():
    # 0.5.23 memory_pool.py: torch.zeros((size + 1, context_len + 4), int32): 7.2 MB at 8 x 200k, 51 MB at 64
    assert memory.request_table_gib(8, 200_000) * GIB == 9 * 200_004 * 4 == 7_200_144
    assert memory.request_table_gib(64, 200_000) * GIB == 65 * 200_004 * 4
    assert memory.request_table_gib(8, 200_000, draft_tokens=16) * GIB == 9 * 200_020 * 4


def test_ct200_runs_eight_with_the_pool_still_pinned_at_the_target():
    plan = kv.plan(CT200)
    pool = plan["predicted_pool_tokens"]
    assert pool >= 200_000 and plan["max_total_tokens"] == pool
    assert plan["args"][plan["args"].index("--max-running-requests") + 1] == "8"
    assert plan["running_requests_reason"] == "the planner's floor of 8 for short requests"
    assert "seed" not in " ".join(plan["tradeoff"])  # a reader has no seed
    lines = "\n".join(plan["tradeoff"])
    assert "longest request: 200,000 tokens" in lines
    assert "8 requests at once, up to %s tokens each (pool / 8)" % format(pool // 8, ",") in lines
    assert "SGLang queues" in lines
    parts = plan["headroom_parts"]
    assert parts["request_table_gib"] == pytest.approx(table_gib(8, 200_000), abs=1e-4)
    assert parts["chunked_prefill_size"] == 8192  # 0.5.23's default for a 96 GiB GPU (under 160 GiB)
    assert parts["activations_gib"] == pytest.approx(8192 * HIDDEN * 2 * 8 / GIB, abs=1e-3)
    assert parts["cuda_graphs_gib"] == pytest.approx(8 * 2 / 1024, abs=1e-3) and not parts["cuda_graphs_measured"]
    assert parts["left_gib"] == pytest.approx(plan["headroom_gib"] - table_gib(8, 200_000) - 8 * 2 / 1024
                                              - 8192 * HIDDEN * 2 * 8 / GIB, abs=2e-3)
    assert any(line.startswith("instead: fp8_e4m3 KV") for line in plan["tradeoff"])


def test_a_pool_of_many_full_length_requests_keeps_them_all():
    plan = kv.plan(dict(CT200, context_target=8_192, pool_policy="max"))  # the pool widened to what fits
    assert plan["max_running_requests"] == plan["predicted_pool_tokens"] // 8_192 > 8


def test_measured_graphs_replace_the_estimate_and_can_lower_the_number():
    headroom = kv.plan(CT200)["headroom_gib"]
    activations = 8192 * HIDDEN * 2 * 8 / GIB
    # graphs measured so large that only 3 rows of the table fit in what is left
    graphs = headroom - activations - table_gib(3, 200_000) - 1e-6
    plan = kv.plan(dict(CT200, graph_gib=graphs))
    assert plan["max_running_requests"] == 3
    assert "affords the request table and the CUDA graphs of no more" in plan["running_requests_reason"]
    assert plan["headroom_parts"]["cuda_graphs_measured"] is True


def test_an_operator_number_the_headroom_cannot_afford_is_refused_with_the_largest():
    headroom = kv.plan(CT200)["headroom_gib"]
    budget = headroom - 8192 * HIDDEN * 2 * 8 / GIB - 1.0  # graphs measured at 1 GiB
    largest = int(budget * GIB // (200_004 * 4)) - 1
    with pytest.raises(kv.KVPlanError) as error:
        kv.plan(dict(CT200, graph_gib=1.0, max_running_requests=largest + 1))
    message = str(error.value)
    assert "sglang_max_running_requests" in message and "Use at most %s" % format(largest, ",") in message
    assert kv.plan(dict(CT200, graph_gib=1.0, max_running_requests=largest))["max_running_requests"] == largest


def test_chunked_prefill_size_from_the_extra_args_sizes_the_activations():
    knobs = {"sglang_version": "0.5.23", "sglang_extra_args": ["--chunked-prefill-size", "2048"]}
    assert planspec.chunked_prefill_size(knobs) == 2048
    assert planspec.chunked_prefill_size({"sglang_version": "0.5.23", "sglang_extra_args": []}) is None
    assert planspec.chunked_prefill_size({"sglang_version": "0.5.23",
                                          "sglang_extra_args": ["--chunked-prefill-size=-1"]}) == 0
    parts = kv.plan(dict(CT200, chunked_prefill_size=2048))["headroom_parts"]
    assert parts["chunked_prefill_size"] == 2048
    assert parts["activations_gib"] == pytest.approx(2048 * HIDDEN * 2 * 8 / GIB, abs=1e-3)


@pytest.mark.parametrize("mib, tokens", [(16_000, 2048), (40_000, 4096), (81_559, 8192), (97_887, 8192),
                                         (183_359, 16384), (None, 4096)])
def test_default_chunked_prefill_follows_the_releases_tiers(mib, tokens):
    spec = {"gpu_memory_mib": mib, "chunked_prefill_size": None}
    assert memory.chunked_prefill_tokens(spec) == tokens


def test_calibration_keeps_the_graphs_measured_at_boot():
    boot = {"pre_load_avail_gib": 85.334, "post_load_avail_gib": 19.419, "mem_fraction_static": 0.958,
            "pool_tokens": 200_064, "max_total_tokens": 200_064, "pool_end_avail_gib": 5.97,
            "after_graph_avail_gib": 5.22}
    calibration = kv.calibrate({"model": "kimi-k2.6", "tp_size": 8}, boot)
    assert calibration["graph_gib"] == pytest.approx(0.75)
    assert "graph_gib" not in kv.calibrate({"model": "kimi-k2.6", "tp_size": 8},
                                           dict(boot, after_graph_avail_gib=None))


def test_attention_dp_sizes_one_table_per_group():
    spec = dict(CT200, context_target=100_000, dp_size=8, enable_dp_attention=True)
    plan = kv.plan(spec)
    assert plan["max_running_requests"] % 8 == 0
    per_group = plan["max_running_requests"] // 8
    assert plan["headroom_parts"]["request_table_gib"] == pytest.approx(table_gib(per_group, 100_000), abs=1e-4)
    assert concurrency.attn_dp(kv.normalize_spec(spec)) == 8
