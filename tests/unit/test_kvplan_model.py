"""KV bytes per token per GPU, for the shapes SGLang distinguishes."""

import pytest
import sglang_kvplan as kv

GQA = {"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096}


def cell(config, **spec):
    return kv.cell_bytes(dict(spec, model_config=config))


@pytest.mark.parametrize("preset, expected", [
    ("llama-3.1-8b", 8 * 256 * 32 * 2),
    ("llama-3.1-70b", 8 * 256 * 80 * 2),
    ("qwen3-32b", 8 * 256 * 64 * 2),
    ("qwen3-235b-a22b", 4 * 256 * 94 * 2),
    ("deepseek-v3", 576 * 61 * 2),
    ("deepseek-r1", 576 * 61 * 2),
    ("kimi-k2", 576 * 61 * 2),
    ("kimi-k2.5", 576 * 61 * 2),
    ("kimi-k2.6", 576 * 61 * 2),
])
def test_presets_at_tp1(preset, expected):
    assert kv.cell_bytes({"model": preset}) == expected


def test_gqa_heads_split_over_tp_then_replicated():
    assert cell(GQA, tp_size=2) == 4 * 256 * 32 * 2
    assert cell(GQA, tp_size=8) == 1 * 256 * 32 * 2
    assert cell(GQA, tp_size=16) == 1 * 256 * 32 * 2  # max(1, 8 // 16): heads replicated


def test_mla_is_replicated_not_split_over_tp():
    assert kv.cell_bytes({"model": "kimi-k2.6", "tp_size": 8}) == kv.cell_bytes({"model": "kimi-k2.6"})


def test_dp_attention_divides_attention_tp():
    assert cell(GQA, tp_size=8, dp_size=4, enable_dp_attention=True) == 4 * 256 * 32 * 2
    assert cell(GQA, tp_size=8, dp_size=4) == 1 * 256 * 32 * 2  # without DP attention, dp is ignored


def test_pipeline_sizes_the_fullest_stage():
    assert cell(dict(GQA, num_hidden_layers=61), pp_size=2) == 8 * 256 * 31 * 2


def test_head_dim_falls_back_to_hidden_over_heads_and_mha_without_kv_heads():
    config = {"num_hidden_layers": 2, "num_attention_heads": 16, "hidden_size": 2048}
    assert cell(config) == 16 * (128 + 128) * 2 * 2


def test_fp8_dtypes_and_checkpoint_kv_quant():
    assert cell(GQA, kv_cache_dtype="fp8_e5m2") == 8 * 256 * 32
    quantized = dict(GQA, quantization_config={"quant_method": "fp8", "kv_cache_quant_algo": "FP8"})
    assert cell(quantized) == 8 * 256 * 32
    # --dtype auto serves float32 as float16 (configs/model_config.py _get_and_verify_dtype): a 2-byte KV cache
    assert cell(dict(GQA, torch_dtype="float32")) == 8 * 256 * 32 * 2


def test_multimodal_text_config_is_used():
    # A multimodal class the planner knows (an invented "Vlm" is refused now: architectures.py)
    wrapped = {"architectures": ["Gemma3ForConditionalGeneration"], "text_config": dict(GQA),
               "vision_config": {"num_hidden_layers": 27}}
    assert cell(wrapped) == cell(GQA)


def test_nextn_draft_layers_inflate_the_cell_in_0_5_23_only():
    # 0.5.23 pool_configurator.py: cell += int(cell * D / L); DeepSeek MTP (1 NextN layer): 70,272 -> 71,424
    spec = {"model": "deepseek-v3", "speculative": {"algorithm": "NEXTN"}}
    assert kv.cell_bytes(dict(spec, version="0.5.23")) == 71_424
    # 0.5.9: the draft's pool is separate (out of the headroom); the profile divides by the target cell
    assert kv.cell_bytes(dict(spec, version="0.5.9")) == 70_272


def test_non_decoder_config_is_refused_by_name():
    with pytest.raises(kv.KVPlanError, match="num_attention_heads"):
        cell({"model_type": "bert"})
