"""Every architecture a release registers is planned by its class (lib/sglang_kvplan/releases/architectures.json,
read from the wheel by tests/contract/extract_architectures.py), or refused by name with what SGLang does instead
(issue 46 items 1 and 5). The configs are the published config.json fields the pool reads."""

import pytest
import sglang_kvplan as kv
from sglang_kvplan import architectures

H200_TP8 = {"gpu_memory_mib": 143_771, "context_target": 32_768, "version": "0.5.23", "pool_policy": "target",
            "tp_size": 8}

# xai-org/grok-2 config.json (Grok1ForCausalLM): 64 layers, 8 KV heads of 128
GROK2 = {"architectures": ["Grok1ForCausalLM"], "torch_dtype": "bfloat16", "num_hidden_layers": 64,
         "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128, "hidden_size": 8192,
         "max_position_embeddings": 131_072}
# zai-org/GLM-4.6 config.json (Glm4MoeForCausalLM): 92 layers, 8 KV heads of 128
GLM46 = {"architectures": ["Glm4MoeForCausalLM"], "torch_dtype": "bfloat16", "num_hidden_layers": 92,
         "num_attention_heads": 96, "num_key_value_heads": 8, "head_dim": 128, "hidden_size": 5120,
         "max_position_embeddings": 202_752}
# google/gemma-2-27b config.json: windows on every other layer, which every release sizes in one pool
GEMMA2 = {"architectures": ["Gemma2ForCausalLM"], "torch_dtype": "bfloat16", "num_hidden_layers": 46,
          "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128, "hidden_size": 4608,
          "sliding_window": 4096, "max_position_embeddings": 8192}
# microsoft/phi-4 config.json (Phi3ForCausalLM): 10 KV heads
PHI4 = {"architectures": ["Phi3ForCausalLM"], "torch_dtype": "bfloat16", "num_hidden_layers": 40,
        "num_attention_heads": 40, "num_key_value_heads": 10, "hidden_size": 5120, "max_position_embeddings": 16_384}
# a Llama-3.1-8B reward model (LlamaForSequenceClassification): the generator's pool
REWARD = {"architectures": ["LlamaForSequenceClassification"], "torch_dtype": "bfloat16", "num_hidden_layers": 32,
          "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096, "max_position_embeddings": 131_072}
GQA = {"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096,
       "max_position_embeddings": 131_072, "torch_dtype": "bfloat16"}


def cell(config, **spec):
    return kv.cell_bytes(dict(H200_TP8, model_config=config, **spec))


def refusal(config, **spec):
    with pytest.raises(kv.KVPlanError) as err:
        kv.plan(dict(H200_TP8, model_config=config, checkpoint_gib=100.0, **spec))
    return str(err.value)


def test_grok2_and_glm46_are_planned_by_the_plain_formula():
    # 0.5.23 pool_configurator.py:491-498: kv_heads/TP x (head_dim + v_head_dim) x layers x 2
    assert cell(GROK2) == 1 * 256 * 64 * 2 == 32_768
    assert cell(GLM46) == 1 * 256 * 92 * 2 == 47_104
    assert kv.plan(dict(H200_TP8, model_config=GLM46, checkpoint_gib=665.0))["max_total_tokens"] == 32_768


def test_gemma2_windows_are_one_pool_as_the_release_override_says():
    assert architectures.pool_class("Gemma2ForCausalLM", "0.5.23") == "window_one_pool"
    assert cell(GEMMA2, context_target=8192) == 2 * 256 * 46 * 2


def test_a_window_on_a_registered_full_class_is_one_pool_unless_the_config_opts_in():
    # SGLang 0.5.23 splits a pool only for its hybrid SWA list or a config with is_hybrid_swa (model_config.py
    # is_hybrid_swa_model): a window elsewhere is one pool over every layer, as the real configurator sizes
    # Starcoder2's (tests/contract/real/cases.py starcoder2-15b-tp8-h200)
    assert cell(dict(GROK2, sliding_window=4096)) == cell(GROK2)
    assert "sliding-window" in refusal(dict(GROK2, sliding_window=4096, is_hybrid_swa=True))
    # the Transformers fallback's layout is the config's alone: a window there is refused
    assert "sliding-window" in refusal(dict(GROK2, architectures=["FancyNewForCausalLM"], sliding_window=4096))


def test_the_reward_model_is_planned_like_its_generator():
    assert architectures.pool_class("LlamaForSequenceClassification", "0.5.23") == "reward"
    assert cell(REWARD, tp_size=1) == 8 * 256 * 32 * 2


def test_phi4_at_tp8_is_refused_for_its_10_kv_heads():
    message = refusal(PHI4, context_target=16_384)
    assert "10 KV heads" in message and "sglang_tp_size" in message
    assert cell(PHI4, tp_size=2, context_target=16_384) == 5 * 256 * 40 * 2


def test_a_multimodal_wrapper_is_planned_by_its_text_model():
    wrapped = {"architectures": ["Mistral3ForConditionalGeneration"], "text_config": dict(GQA),
               "vision_config": {"num_hidden_layers": 24}}
    assert architectures.pool_class("Mistral3ForConditionalGeneration", "0.5.23") == "full"
    assert cell(wrapped) == cell(dict(GQA, architectures=["MistralForCausalLM"]))


@pytest.mark.parametrize("arch, extra, words", [
    ("ChatGLMModel", {"multi_query_group_num": 2}, "multi_query_group_num"),
    ("GPTBigCodeForCausalLM", {}, "'multi_query'"),
    ("DeciLMForCausalLM", {}, "'block_configs'"),
    ("LongcatFlashForCausalLM", {}, "more attention layers than num_hidden_layers"),
    ("Llama4ForConditionalGeneration", {}, "attention_chunk_size"),
    ("MiMoV2FlashForCausalLM", {}, "sliding-window pool"),
    ("FalconH1ForCausalLM", {}, "state pool"),
    ("MiniMaxM3SparseForCausalLM", {}, "sparse-attention pool"),
    ("BertModel", {}, "encoder"),
    ("DeepseekV3ForCausalLMNextN", {}, "draft head"),
])
def test_a_class_the_planner_cannot_size_is_refused_by_name_with_the_hand_sizing(arch, extra, words):
    message = refusal(dict(GQA, architectures=[arch], **extra))
    assert arch in message and words in message and "sglang_max_total_tokens" in message, message


def test_deepseek_v3_with_an_indexer_is_sparse_attention_and_refused():
    mla = dict(GQA, architectures=["DeepseekV3ForCausalLM"], kv_lora_rank=512, qk_rope_head_dim=64,
               num_attention_heads=128, num_key_value_heads=128, num_hidden_layers=61)
    assert cell(mla) == (512 + 64) * 61 * 2
    message = refusal(dict(mla, index_topk=2048))
    assert "index_topk" in message and "DeepseekV32ForCausalLM" in message


def test_a_release_without_a_table_is_refused_naming_the_table(monkeypatch):
    monkeypatch.setattr(architectures, "release_table", lambda release: None)
    message = refusal(GROK2)
    assert "no architecture table" in message and "architectures.json" in message


def test_the_table_is_read_for_the_spec_release():
    # SarvamMLAForCausalLM is MLA from the release that registers it; an older release does not register it and
    # plans it as the Transformers fallback
    assert architectures.pool_class("SarvamMLAForCausalLM", "0.5.23") == "mla"
    assert architectures.pool_class("SarvamMLAForCausalLM", "0.5.9") == "unregistered"
    assert architectures.pool_class("Grok1ForCausalLM", "0.5.1") is None


def test_a_request_share_is_never_offered_above_the_context_length():
    # gpt-oss said "up to 134,164 tokens each (pool / 25)" above its --context-length 131,072 (issue 46)
    from sglang_kvplan.concurrency import _at_once
    assert _at_once(3_354_100, 131_072, 25) == ("25 requests at once, up to 131,072 tokens each (--context-length; "
                                                "pool / 25 is 134,164)")
    assert _at_once(262_144, 32_768, 8) == "8 requests at once, up to 32,768 tokens each (pool / 8)"


# Qwen/Qwen3-VL-235B-A22B-Instruct config.json: the text model under text_config
QWEN3_VL = {"architectures": ["Qwen3VLMoeForConditionalGeneration"], "model_type": "qwen3_vl_moe",
            "text_config": {"model_type": "qwen3_vl_moe_text", "num_hidden_layers": 94, "num_attention_heads": 64,
                            "num_key_value_heads": 4, "head_dim": 128, "hidden_size": 4096,
                            "max_position_embeddings": 262_144, "torch_dtype": "bfloat16"},
            "vision_config": {"depth": 27}}


def _reserve(**spec):
    from sglang_kvplan.memory import mm_reserve_gib
    return mm_reserve_gib(kv.normalize_spec(dict(H200_TP8, model_config=QWEN3_VL, checkpoint_gib=438.0, **spec)))


def test_qwen3_vl_on_a_large_hopper_gpu_keeps_the_feature_pools_its_override_turns_on():
    # 0.5.23 qwen3_vl.py: embedding cache 0, cuda_ipc on: SGLANG_MM_FEATURE_CACHE_MB 1 GiB, 3 GiB at >= 400 requests
    assert _reserve(gpu_compute_capability="9.0") == 1.0
    assert _reserve(gpu_compute_capability="9.0", max_running_requests=400) == 3.0
    assert _reserve(gpu_compute_capability="10.0") == 100 / 1024  # not Hopper: the 100 MiB embedding cache
    assert _reserve(gpu_compute_capability="9.0", mm_feature_transport="cpu") == 100 / 1024
    plan = kv.plan(dict(H200_TP8, model_config=QWEN3_VL, checkpoint_gib=438.0, gpu_compute_capability="9.0"))
    assert any("qwen3_vl.py:85" in line and "1 GiB" in line for line in plan["assumptions"]), plan["assumptions"]
    assert plan["max_running_requests"] < 400 and plan["kv_bytes_per_token"] == 1 * 256 * 94 * 2


def test_a_nextn_draft_says_the_running_requests_sglang_would_default_to():
    mla = {"architectures": ["DeepseekV3ForCausalLM"], "torch_dtype": "bfloat16", "num_hidden_layers": 61,
           "num_attention_heads": 128, "num_key_value_heads": 128, "hidden_size": 7168, "kv_lora_rank": 512,
           "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "num_nextn_predict_layers": 1,
           "max_position_embeddings": 163_840}
    plan = kv.plan(dict(H200_TP8, model_config=mla, checkpoint_gib=642.0,
                        speculative={"algorithm": "NEXTN", "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4}))
    assert any("--max-running-requests 48 when none is given" in line for line in plan["assumptions"])


CHATGLM = {"architectures": ["ChatGLMModel"], "torch_dtype": "bfloat16", "num_layers": 40, "num_attention_heads": 32,
           "multi_query_group_num": 2, "kv_channels": 128, "hidden_size": 4096, "seq_length": 131_072}


def test_a_refused_model_is_planned_with_a_hand_set_pool():
    plan = kv.plan(dict(H200_TP8, model_config=CHATGLM, checkpoint_gib=18.0, max_total_tokens=200_001, page_size=64))
    assert plan["max_total_tokens"] == 200_064 and plan["pool_policy"] == "by_hand"  # rounded up to page 64
    args = plan["args"]
    assert args[args.index("--max-total-tokens") + 1] == "200064"
    # the 'target' policy's fraction: (1 - f) x the whole GPU keeps min_headroom_gib 4.0
    assert plan["mem_fraction_static"] == pytest.approx(0.971, abs=0.0005)
    assert args[args.index("--mem-fraction-static") + 1] == "%.3f" % plan["mem_fraction_static"]
    assert plan["max_running_requests"] == 200_064 // 32_768
    assert any("sized by hand" in line for line in plan["assumptions"])


def test_a_hand_set_pool_below_the_context_target_is_refused():
    message = refusal(CHATGLM, max_total_tokens=16_000)
    assert "sglang_max_total_tokens 16,000 is less than context_target 32,768" in message


@pytest.mark.parametrize("value", [0, -5, "many", 1.5, True, float("nan"), float("inf"), 10**12, "1e12", None])
def test_absurd_hand_set_pools_are_refused_naming_the_key(value):
    if value is None:  # unset: the planner sizes the pool, and ChatGLM stays refused by name
        assert "multi_query_group_num" in refusal(CHATGLM)
        return
    message = refusal(CHATGLM, max_total_tokens=value)
    assert "max_total_tokens" in message


@pytest.mark.parametrize("key, value", [
    ("num_hidden_layers", 1_000_000), ("num_attention_heads", 10**6), ("num_key_value_heads", 10**6),
    ("head_dim", 10**6), ("hidden_size", 10**9), ("num_hidden_layers", 1e12), ("head_dim", float("nan")),
    ("num_key_value_heads", 0), ("num_hidden_layers", -3), ("head_dim", "128"), ("hidden_size", float("inf")),
])
def test_absurd_config_fields_of_a_class_planned_are_refused_by_name(key, value):
    message = refusal(dict(GROK2, **{key: value}))
    assert repr(key) in message and "config.json" in message, message


@pytest.mark.parametrize("value", [0, -4096, float("nan"), "4096", 1e12, 10**12])
def test_absurd_windows_of_a_one_pool_class_are_refused_by_name(value):
    message = refusal(dict(GEMMA2, sliding_window=value), context_target=8192)
    assert "'sliding_window'" in message, message


def test_linear_layers_on_a_registered_full_class_are_still_refused():
    layers = ["linear_attention", "full_attention"] * 32
    assert "mixed layer types" in refusal(dict(GROK2, layer_types=layers))


def test_a_wrapper_over_decoders_of_several_classes_is_planned_by_its_config_keys():
    # MiniCPM-V's module serves Llama, Qwen2, Qwen3 and Qwen3.5 backbones: the release's table says by_config
    assert architectures.pool_class("MiniCPMV", "0.5.23") == "by_config"
    minicpm_v = dict(GQA, architectures=["MiniCPMV"], model_type="minicpmv")
    assert cell(minicpm_v) == cell(dict(GQA, architectures=["LlamaForCausalLM"]))
    assert "mixed layer types" in refusal(dict(minicpm_v, layer_types=["linear_attention", "full_attention"] * 16))
    assert "linear_attn_config" in refusal(dict(minicpm_v, linear_attn_config={"kda_layers": [1]}))
