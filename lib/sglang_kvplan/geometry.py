"""The model's geometry as every sizing file reads it: the language model's config.json, its attention kind, and
the attention-TP size its heads split over.

A floor beside spec.py and below every attention family (sliding.py, linear.py, sparse.py), pages.py and model.py,
so they share these readings without importing one another. It imports nothing, so it can never close an import circle.
"""


def text_config(config):
    """The language model's config: multimodal checkpoints nest it under text_config."""
    nested = config.get("text_config")
    if isinstance(nested, dict) and nested.get("num_hidden_layers"):
        return nested
    return config


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
