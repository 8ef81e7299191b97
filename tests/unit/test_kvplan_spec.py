"""Bad input gets an error naming the knob, the value and the fix."""

import pytest
import sglang_kvplan as kv

BASE = {"model": "kimi-k2.6", "tp_size": 8, "gpu_memory_mib": 97_887, "context_target": 100_000}
GQA = {"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096,
       "max_position_embeddings": 131072}


@pytest.mark.parametrize("change, words", [
    ({"tp_size": "eight"}, ["'tp_size'", "sglang_tp_size", "'eight'", "positive whole number"]),
    ({"tp_size": 0}, ["sglang_tp_size", "positive whole number"]),
    ({"kv_cache_dtype": "int4"}, ["sglang_kv_cache_dtype", "'int4'", "fp8_e4m3"]),
    ({"model": "kimi-k9"}, ["sglang_model", "'kimi-k9'", "kimi-k2.6"]),
    ({"mem_fraction_static": 1.2}, ["sglang_mem_fraction_static", "between 0 and 1"]),
    ({"min_headroom_gib": -1}, ["sglang_min_headroom_gib", "at least 1.0"]),
    ({"min_headroom_gib": 0}, ["sglang_min_headroom_gib", "at least 1.0"]),
    ({"enable_dp_attention": "yes"}, ["sglang_enable_dp_attention", "true or false"]),
    ({"context_taget": 5}, ["unknown key", "context_taget"]),
    ({"pre_load_avail_gib": 80}, ["post_load_avail_gib"]),
    ({"pre_load_avail_gib": 20, "post_load_avail_gib": 80}, ["swapped"]),
    ({"tp_size": 8, "dp_size": 3, "enable_dp_attention": True}, ["multiple of"]),
    ({"model_config": [1, 2]}, ["sglang_model_config", "mapping"]),
    # issue 10: nonsense that used to plan silently or end in a Python error
    ({"kv_cache_dtype": "fp16"}, ["sglang_kv_cache_dtype", "'fp16'", "no fp16", "bf16"]),
    ({"model": "llama-3.1-8b", "tp_size": 3}, ["sglang_tp_size", "does not divide", "32 attention heads"]),
    ({"max_running_requests": 1_000_000}, ["sglang_max_running_requests", "request table", "Use at most"]),
    ({"model_config": dict(GQA, num_key_value_heads="8")}, ["num_key_value_heads", "a string"]),
    ({"model_config": dict(GQA, num_attention_heads=-4)}, ["num_attention_heads", "positive integer"]),
    ({"model_config": dict(GQA, head_dim=0)}, ["head_dim", "positive integer"]),
    ({"pre_load_avail_gib": 120, "post_load_avail_gib": 40}, ["sglang_calibration", "120", "more than the GPU"]),
    ({"model_config": dict(GQA, layer_types=["sliding_attention", "full_attention"])}, ["cannot size", "layer_types"]),
    ({"model_config": dict(GQA, full_attention_interval=4)}, ["Mamba", "cannot size"]),
    ({"model_config": dict(GQA, index_topk=2048)}, ["sparse attention", "cannot size"]),
    ({"pool_policy": "biggest"}, ["sglang_pool_policy", "'biggest'", "target"]),
    ({"version": "0.4.6"}, ["sglang_version", "older than 0.5.9"]),
    ({"pool_rules": "0.5.8"}, ["sglang_pool_rules", "0.5.9 to 0.5.23"]),
    # issue 19: a release whose wheel was never read is refused by name, not planned with a neighbour's rules
    ({"version": "0.6.0"}, ["sglang_version", "0.6.0", "newer than 0.5.23", "sglang_pool_rules"]),
    ({"version": "0.5.20.post7"}, ["sglang_version", "0.5.20.post7", "not a release in the table"]),
    ({"gpu_compute_capability": "Blackwell"}, ["sglang_gpu_compute_capability", "'Blackwell'", "10.0"]),
    ({"tp_size": 4, "pp_size": 100}, ["sglang_pp_size", "at most 61"]),
])
def test_bad_input_is_named(change, words):
    with pytest.raises(kv.KVPlanError) as error:
        kv.plan(dict(BASE, **change))
    for word in words:
        assert word in str(error.value)


def test_missing_memory_and_target_are_explained():
    with pytest.raises(kv.KVPlanError, match="gpu_memory_mib"):
        kv.plan({"model": "kimi-k2.6", "context_target": 1000})
    with pytest.raises(kv.KVPlanError, match="sglang_context_target"):
        kv.plan({"model": "kimi-k2.6", "gpu_memory_mib": 97_887})
    with pytest.raises(kv.KVPlanError, match="weights_gib_per_gpu or checkpoint_gib"):
        kv.plan({"model_config": {"num_hidden_layers": 2, "num_attention_heads": 2, "hidden_size": 8},
                 "gpu_memory_mib": 1000, "context_target": 10})


def test_weights_under_the_journals_resolution_are_a_calibration():
    """The real SGLang's CPU engine with a tiny model (molecule/real_server) logs the same free memory before and after
    its weights load: a calibration, not a swap."""
    tiny = {"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 64,
            "max_position_embeddings": 4096}
    plan = kv.plan({"model_config": tiny, "checkpoint_gib": 0.0002, "gpu_memory_mib": 24_000, "context_target": 2048,
                    "pre_load_avail_gib": 20.6, "post_load_avail_gib": 20.6, "pool_policy": "target"})
    assert plan["calibrated"] and plan["max_total_tokens"] >= 2048, plan


def test_numbers_given_as_strings_are_accepted():
    # group_vars and -e values arrive as strings; the planner takes them as the numbers they spell.
    plan = kv.plan(dict(BASE, tp_size="8", context_target="100000", min_headroom_gib="4"))
    assert plan["context_length"] == 100_000


def test_target_beyond_native_window_is_refused():
    said = r"native window \(40,960 tokens, as SGLang derives it from config.json\).*sglang_rope_scaling"
    with pytest.raises(kv.KVPlanError, match=said):
        kv.plan({"model": "qwen3-32b", "tp_size": 2, "gpu_memory_mib": 97_887, "context_target": 65_536})


def test_every_preset_has_a_config_and_a_checkpoint_size():
    for name, preset in kv.load_presets().items():
        assert preset["checkpoint_gib"] > 0, name
        assert kv.cell_bytes({"model": name, "gpu_compute_capability": "9.0"}) > 0


def test_no_plan_asks_for_a_fraction_of_0_99_or_more():
    for headroom in (1.0, 1.5, 4.0):
        for gpu in (24_576, 97_887, 143_771):
            plan = kv.plan(dict(BASE, gpu_memory_mib=gpu, min_headroom_gib=headroom, model="llama-3.1-8b",
                                tp_size=1, context_target=8_192))
            assert plan["mem_fraction_static"] < 0.99
