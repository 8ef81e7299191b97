"""Hostile input never ends in a Python traceback: plan() either plans or raises KVPlanError (issue 20).

Values an inventory, a config.json or a calibration can really carry: YAML's .inf and .nan, 1e30, 10**400,
zero, negative, strings, lists, booleans, None, in every spec key and every config.json field the planner reads."""

import math

import pytest
import sglang_kvplan as kv
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

BASE = {"model": "llama-3.1-8b", "context_target": 50_000, "gpu_memory_mib": 97_887, "checkpoint_gib": 15.0}
MLA_CONFIG = kv.load_presets()["deepseek-v3"]["config"]
GQA_CONFIG = kv.load_presets()["llama-3.1-8b"]["config"]
SPEC_KEYS = ["tp_size", "pp_size", "dp_size", "enable_dp_attention", "kv_cache_dtype", "page_size", "version",
             "pool_rules", "pool_policy", "mem_fraction_static", "pre_load_avail_gib", "post_load_avail_gib",
             "gpu_memory_mib", "gpu_compute_capability", "weights_gib_per_gpu", "checkpoint_gib",
             "preload_overhead_gib", "context_target", "max_running_requests", "min_headroom_gib",
             "uncalibrated_margin", "nnodes", "node_rank", "dist_init_host", "dist_init_port", "dist_timeout",
             "limiting_node", "speculative", "model", "model_config", "chunked_prefill_size", "graph_gib"]
CONFIG_KEYS = ["num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "v_head_dim",
               "hidden_size", "max_position_embeddings", "kv_lora_rank", "qk_rope_head_dim", "torch_dtype",
               "quantization_config", "text_config", "architectures", "num_nextn_predict_layers",
               "sliding_window", "use_sliding_window", "layer_types", "auto_map", "language_model_only"]
HOSTILE = st.one_of(
    st.sampled_from([math.inf, -math.inf, math.nan, 1e30, -1e30, 10**400, -(10**400), 0, -1, 0.0, 1e-300, "",
                     "inf", "NaN", "1e30", "8", "eight", True, False, None, [], {}, [1, 2], {"a": 1}, "0.5.23",
                     "10.0", 2**63, 3.5]),
    st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
)


def plan_or_refuse(spec):
    try:
        kv.plan(spec)
    except kv.KVPlanError as error:
        assert str(error).strip(), "a KVPlanError must say something"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SPEC_KEYS), HOSTILE)
def test_a_hostile_spec_value_is_planned_or_refused(key, value):
    plan_or_refuse(dict(BASE, **{key: value}))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([GQA_CONFIG, MLA_CONFIG]), st.sampled_from(CONFIG_KEYS), HOSTILE)
def test_a_hostile_config_json_field_is_planned_or_refused(config, key, value):
    plan_or_refuse(dict(BASE, model=None, model_config=dict(config, **{key: value})))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(CONFIG_KEYS), HOSTILE)
def test_a_hostile_draft_config_is_planned_or_refused(key, value):
    draft = {"architectures": ["DFlashDraftModel"], "num_hidden_layers": 5, "num_attention_heads": 32,
             "num_key_value_heads": 8, "head_dim": 128, "hidden_size": 4096, key: value}
    speculative = {"algorithm": "DFLASH", "draft_model_path": "/d", "draft_model_config": draft}
    plan_or_refuse(dict(BASE, speculative=speculative))


@pytest.mark.parametrize("change, words", [
    ({"gpu_memory_mib": 1e30}, ["gpu_memory_mib", "1e+30", "at most"]),
    ({"page_size": 10**400}, ["page_size", "at most"]),
    ({"context_target": math.inf}, ["context_target", "inf"]),
    ({"tp_size": math.nan}, ["tp_size", "nan"]),
    ({"model": None, "model_config": dict(GQA_CONFIG, num_attention_heads=0)}, ["num_attention_heads", "0"]),
    ({"model": None, "model_config": {k: v for k, v in GQA_CONFIG.items() if k != "num_attention_heads"}},
     ["num_attention_heads", "None"]),
    ({"model": None, "model_config": dict(GQA_CONFIG, quantization_config="fp8")}, ["quantization_config", "'fp8'"]),
    ({"model": None, "model_config": dict(GQA_CONFIG, hidden_size=10**400)}, ["hidden_size", "at most"]),
])
def test_each_hostile_value_is_named_with_its_fix(change, words):
    with pytest.raises(kv.KVPlanError) as error:
        kv.plan(dict(BASE, **change))
    for word in words:
        assert word in str(error.value), (word, str(error.value))
