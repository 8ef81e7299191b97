"""A hybrid linear-attention model (Qwen3-Next) is planned with its state pool (issue 35 item 1; linear.py).

SGLang's sizing is written out here apart from the planner, from 0.5.23 mem_cache/kv_cache_configurator.py
(_handle_max_mamba_cache :3230-3408, 'padded_slot') and 0.5.15 model_executor/model_runner_kv_cache_mixin.py
(handle_max_mamba_cache, 'plain'), configs/qwen3_next.py (mamba2_cache_params, layers_block_type) and
model_executor/pool_configurator.py (DefaultPoolConfigurator over the full-attention layers). The real code of both
releases is called on the same plans by the real contract (tests/contract/real/pools_real.py).
"""

import pytest
import sglang_kvplan as kv
from sglang_checks import planspec
from sglang_kvplan import linear

QWEN3_NEXT = kv.load_presets()["qwen3-next-80b-a3b"]["config"]
# Qwen3.5 MoE: Qwen3-Next's hybrid text model under text_config beside a vision encoder (40 layers, 10 of them full
# attention; the geometry published Qwen3.5 MoE configs give)
QWEN3_5_MOE = {"architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
               "text_config": dict({k: v for k, v in QWEN3_NEXT.items() if k != "architectures"},
                                   num_hidden_layers=40, model_type="qwen3_5_moe_text"),
               "vision_config": {"depth": 27}}
H200 = {"gpu_memory_mib": 143_771, "gpu_compute_capability": "9.0"}
B200 = {"gpu_memory_mib": 183_359, "gpu_compute_capability": "10.0"}


def sglang_state_per_request(tp):
    """configs/qwen3_next.py: 36 linear layers x (conv (16x128x2 + 32x128) / tp x 3 bf16 + (32 / tp) x 128 x 128 fp32).
    At TP 2 the real 0.5.23 ModelConfig gives 38,633,472 (its mamba2_cache_params.mamba_cache_per_req)."""
    return 36 * ((2 * 16 * 128 + 32 * 128) // tp * 3 * 2 + 32 // tp * 128 * 128 * 4)


def sglang_pools(pre, post, fraction, tp, rule="padded_slot", ratio=0.9, page=1):
    """(KV tokens, state slots) as the release sizes them from P, A and f."""
    rest = post - pre * (1 - fraction)  # _profile_available_bytes
    per_req = sglang_state_per_request(tp)
    budget = rest * ratio / (1 + ratio) * (1 << 30)
    if rule == "padded_slot":  # 0.5.17+
        slots = int((budget - per_req) // per_req)
        state = (slots + 1) * per_req / (1 << 30)
    else:  # 0.5.13-0.5.16
        slots = int(budget // per_req)
        state = slots * per_req / (1 << 30)
    cell = 12 * max(1, 2 // tp) * (256 + 256) * 2  # 12 full-attention layers of GQA KV, bf16
    return int(int((rest - state) * (1 << 30)) // cell) // page * page, slots


def plan(gpu=H200, **more):
    spec = dict(gpu, model="qwen3-next-80b-a3b", context_target=262_144, version="0.5.23", tp_size=2)
    spec.update(more)
    return kv.plan(spec)


def test_one_requests_state_is_the_releases():
    assert sglang_state_per_request(2) == 38_633_472
    assert linear.state_bytes(QWEN3_NEXT, 2) == 38_633_472 and linear.state_bytes(QWEN3_NEXT, 4) == 19_316_736
    # only the 12 full-attention layers hold KV (every 4th layer: (l + 1) % 4 == 0)
    assert kv.cell_bytes(dict(H200, model="qwen3-next-80b-a3b", tp_size=2)) == 12 * 1 * 512 * 2


@pytest.mark.parametrize("version, rule", [("0.5.23", "padded_slot"), ("0.5.15", "plain")])
@pytest.mark.parametrize("gpu, tp", [(H200, 2), (H200, 4), (B200, 4), (B200, 8)])
def test_the_kv_pool_and_the_state_slots_are_the_ones_sglang_sizes(version, rule, gpu, tp):
    pre = gpu["gpu_memory_mib"] / 1024 - 1.3
    post = pre - 148.5 / tp - 0.6
    got = plan(gpu, tp_size=tp, version=version, pre_load_avail_gib=pre, post_load_avail_gib=post)
    tokens, slots = sglang_pools(pre, post, got["mem_fraction_static"], tp, rule)
    assert (got["predicted_pool_tokens"], got["state_slots"]) == (tokens, slots)
    assert got["max_total_tokens"] is None and tokens >= 262_144
    # the headroom is what SGLang leaves outside both pools: at least the one asked
    assert got["headroom_gib"] >= 4.0
    # SGLang keeps --max-running-requests only up to slots // its ratio (at most 5 slots a request)
    assert got["max_running_requests"] <= slots // 5
    assert any(line.startswith("state pool: 36 linear-attention layers") for line in got["tradeoff"])


def test_the_running_requests_are_capped_by_the_state_slots():
    # a small ratio leaves few slots: the running requests follow them, with the reason
    got = plan(context_target=8_192, mamba_full_memory_ratio=0.01)
    assert got["max_running_requests"] == got["state_slots"] // 5
    assert "state pool's" in got["running_requests_reason"]


def test_fraction_policy_plans_the_smallest_fraction_with_the_state_pool():
    got = plan(pool_policy="fraction", context_target=131_072, pre_load_avail_gib=139.0, post_load_avail_gib=63.5)
    tokens, slots = sglang_pools(139.0, 63.5, got["mem_fraction_static"], 2)
    assert got["predicted_pool_tokens"] == tokens >= 131_072
    below, _ = sglang_pools(139.0, 63.5, round(got["mem_fraction_static"] - 0.001, 3), 2)
    assert below < 131_072  # one step lower would not hold it


def test_a_calibration_from_a_boot_gives_back_the_profile_it_had():
    spec = dict(H200, model="qwen3-next-80b-a3b", context_target=262_144, version="0.5.23", tp_size=2)
    pre, post, fraction = 139.1, 64.3, 0.965
    tokens, _ = sglang_pools(pre, post, fraction, 2)
    got = kv.calibrate(spec, {"pre_load_avail_gib": pre, "post_load_avail_gib": round(post, 2),
                              "mem_fraction_static": fraction, "pool_tokens": tokens})
    assert abs(got["post_load_avail_gib"] - post) < 1e-4  # the state's share added back, A as it was


def _spec(extra_args, **knobs):
    values = {name: None for name in planspec.KNOBS}
    values.update(sglang_model="qwen3-next-80b-a3b", sglang_context_target=262_144, sglang_version="0.5.23",
                  sglang_tp_size=2, sglang_gpu_memory_mib=143_771, sglang_extra_args=extra_args, **knobs)
    return planspec.spec("h", values, [planspec.node_inputs("h", values)], "h")


def test_the_ratio_comes_from_sglang_extra_args():
    spec, server, _ = _spec(["--mamba-full-memory-ratio", "0.5"])
    assert spec["mamba_full_memory_ratio"] == 0.5
    got = planspec.plan(spec, server)
    assert any("--mamba-full-memory-ratio 0.5" in line for line in got["tradeoff"])
    assert got["state_slots"] < plan()["state_slots"]


def refusal(**more):
    with pytest.raises(kv.KVPlanError) as caught:
        plan(**more)
    return str(caught.value)


@pytest.mark.parametrize("more, words", [
    ({"version": "0.5.12"}, "Qwen3-Next"),
    ({"pool_policy": "target"}, "sglang_pool_policy"),
    ({"pool_policy": "max"}, "sglang_pool_policy"),
    ({"speculative": {"algorithm": "NGRAM"}}, "sglang_speculative"),
    ({"pp_size": 2}, "sglang_pp_size"),
    ({"tp_size": 4, "dp_size": 2, "enable_dp_attention": True}, "DP attention"),
    ({"disable_radix_cache": True}, "--disable-radix-cache"),
    ({"mamba_option": "--max-mamba-cache-size"}, "--max-mamba-cache-size"),
    ({"page_size": 64}, "sglang_page_size"),
    ({"model": None, "model_config": dict(QWEN3_NEXT, mamba_ssm_dtype="bfloat16")}, "mamba_ssm_dtype"),
    ({"model": None, "model_config": dict(QWEN3_NEXT, linear_num_key_heads=12), "tp_size": 8}, "linear_num_key"),
    ({"model": None, "model_config": dict(QWEN3_NEXT, full_attention_interval=None)}, "full_attention_interval"),
    ({"model": None, "model_config": dict(QWEN3_NEXT, full_attention_interval=1)}, "full-attention and 0 linear"),
])
def test_what_the_state_formula_does_not_describe_is_refused_with_the_knob(more, words):
    assert words in refusal(**more)


def test_a_target_that_fits_only_pinned_is_refused_not_pinned():
    # a pin would not free the state pool's share: a tight host is refused with the knobs that help
    message = refusal(gpu_memory_mib=81_559, tp_size=2, context_target=262_144)
    assert "not pinned" in message and "--mamba-full-memory-ratio" in message and "sglang_context_target" in message


def test_qwen3_5_is_planned_from_its_text_config_with_the_multimodal_reserve():
    spec = dict(H200, model_config=QWEN3_5_MOE, checkpoint_gib=67.0, context_target=262_144, version="0.5.23",
                tp_size=2)
    assert linear.state_bytes(QWEN3_5_MOE, 2) == 30 * sglang_state_per_request(2) // 36  # 30 linear layers
    got = kv.plan(spec)
    assert got["state_slots"] > 0 and any("30 linear-attention layers" in line for line in got["tradeoff"])
    # 0.5.23 keeps 100 MiB out of a multimodal checkpoint's profile (releases/rules.json mm_reserve_mib); 0.5.15 not
    older = kv.plan(dict(spec, version="0.5.15", pre_load_avail_gib=got["pre_load_avail_gib"],
                         post_load_avail_gib=got["post_load_avail_gib"]))
    newer = kv.plan(dict(spec, pre_load_avail_gib=got["pre_load_avail_gib"],
                         post_load_avail_gib=got["post_load_avail_gib"]))
    assert older["predicted_pool_tokens"] > newer["predicted_pool_tokens"]


# nvidia/Nemotron-H-8B-Base-8K (the fields configs/nemotron_h.py reads): 24 Mamba2 layers and 4 attention layers by
# hybrid_override_pattern; the same config is put to the real releases (tests/contract/real/cases.py)
NEMOTRON_H = {"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h",
              "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
              "hidden_size": 4096, "num_hidden_layers": 52, "num_attention_heads": 32, "num_key_value_heads": 8,
              "head_dim": 128, "ssm_state_size": 128, "mamba_num_heads": 128, "mamba_head_dim": 64, "n_groups": 8,
              "conv_kernel": 4, "expand": 2, "intermediate_size": 21504, "vocab_size": 131072,
              "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}


def nemotron(gpu=H200, **more):
    spec = dict(gpu, model_config=NEMOTRON_H, checkpoint_gib=15.2, context_target=8192, version="0.5.23", tp_size=1)
    spec.update(more)
    return spec


def test_nemotron_h_keeps_state_for_its_mamba_layers_and_kv_for_its_attention_layers():
    # configs/nemotron_h.py mamba2_cache_params: conv (64 x 128 + 2 x 8 x 128) x 3 bf16, ssm 128 x 64 x 128 fp32,
    # per Mamba2 layer ('M'); KV only in the 4 attention layers ('*'), GQA 8 x 128, bf16
    per_layer = (64 * 128 + 2 * 8 * 128) * 3 * 2 + 128 * 64 * 128 * 4
    assert linear.state_bytes(NEMOTRON_H, 1) == 24 * per_layer
    assert kv.cell_bytes(nemotron()) == 4 * 8 * 128 * 2 * 2
    got = kv.plan(nemotron())
    assert got["state_slots"] > 0 and got["max_total_tokens"] is None


@pytest.mark.parametrize("version, page", [("0.5.15", 1), ("0.5.23", 64)])
def test_nemotron_h_on_sm100_gets_the_page_of_the_backend_its_release_picks(version, page):
    # flashinfer keeps the page up to 0.5.18, trtllm_mha forces 64 from 0.5.19 (rules.json nemotron_h_sm100); the
    # real 0.5.15 and 0.5.23 resolvers resolve the same on a B200 (nemotron-h-tp2-fill-b200)
    from sglang_kvplan import pages

    spec = nemotron(B200, version=version, tp_size=2)
    assert pages.pool_page(kv.normalize_spec(spec)) == page
    assert kv.plan(spec)["predicted_pool_tokens"] % page == 0


def test_nemotron_h_on_sm100_is_refused_where_the_releases_pick_was_not_read(monkeypatch):
    from sglang_kvplan import releases

    monkeypatch.setitem(releases.RULES, "0.5.23", dict(releases.RULES["0.5.23"], nemotron_h_sm100=None))
    with pytest.raises(kv.KVPlanError, match="sglang_gpu_compute_capability"):
        kv.plan(nemotron(B200, tp_size=2))
    with pytest.raises(kv.KVPlanError, match="sglang_gpu_compute_capability: not known"):
        kv.plan(nemotron(dict(B200, gpu_compute_capability=None), tp_size=2))
    assert kv.plan(nemotron())["state_slots"] > 0  # an H200 keeps the page asked for in any case
