"""The model's geometry as every sizing file reads it: the language model's config.json, its architecture, its
attention kind, and the attention-TP size its heads split over.

A floor just above spec.py and below every attention family (families.py: plain.py, sliding.py, linear.py,
sparse.py), kv_cell.py, pages.py and model.py, so they share these readings without importing one another. It imports
only spec.py's KVPlanError (spec.py imports no planner file), so it can never close an import circle.
"""

from .spec import KVPlanError

MAX_CONFIG_INT = 1 << 31  # sizes, counts and windows of a config.json are int32 in every checkpoint format
# Tighter bounds where a larger value is no model (the largest published have 126 layers, 128 heads, head_dim 512,
# kv_lora_rank 512, hidden_size 25,600): a value past them is a damaged file, refused by name before it sizes a
# pool of nonsense (or, for a hybrid model, before a list of that many layers is built).
SANE_MAX = {"num_hidden_layers": 4096, "num_attention_heads": 16_384, "num_key_value_heads": 16_384,
            "head_dim": 65_536, "v_head_dim": 65_536, "kv_lora_rank": 65_536, "qk_rope_head_dim": 65_536,
            "hidden_size": 1 << 20}


def config_bound(name):
    """The largest value a config.json's positive integer `name` can sanely hold."""
    return SANE_MAX.get(name, MAX_CONFIG_INT)


def text_config(config):
    """The language model's config: multimodal checkpoints nest it under text_config."""
    nested = config.get("text_config")
    if isinstance(nested, dict) and nested.get("num_hidden_layers"):
        return nested
    return config


def architecture(config, where="model_config"):
    """config.json's architectures[0], or None where the config names none.

    None: a geometry written by hand (sglang_model_config without `architectures`, and the planner's unit tests).
    Every real config.json names its architecture (SGLang cannot load one that does not: configs/model_config.py
    reads hf_config.architectures), and every preset names one, so a config without it is not a checkpoint
    staged on a host; it is planned by its geometry under the key checks (model.py _unsupported_layout), as
    the operator who wrote it asked."""
    value = config.get("architectures")
    if value is None:
        return None
    if not isinstance(value, list) or not value or not isinstance(value[0], str) or not value[0]:
        raise KVPlanError("%s: 'architectures' in the model's config.json must be a list naming the model class "
                          "(e.g. [\"Qwen3ForCausalLM\"]), got %r. Stage the checkpoint's config.json again."
                          % (where, value if len(repr(value)) <= 60 else repr(value)[:40] + "..."))
    return value[0]


def is_mla(config):
    """Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): one latent row per token serves K and V."""
    return bool(text_config(config).get("kv_lora_rank"))


def has_asymmetric_kv(config):
    """K and V rows of different widths (v_head_dim != head_dim): trtllm_mha cannot serve them, fa4 can."""
    cfg = text_config(config)
    heads = cfg.get("num_attention_heads") or 1
    head_dim = cfg.get("head_dim") or (cfg.get("hidden_size") or 0) // heads
    return bool(cfg.get("v_head_dim")) and cfg.get("v_head_dim") != head_dim


def attn_tp_size(spec):
    """The attention-TP size: tp / dp with DP attention, else tp (SGLang's attn_tp_size)."""
    return spec["tp_size"] // spec["dp_size"] if spec["enable_dp_attention"] else spec["tp_size"]
