"""The plain KV cell formula every attention family builds on, and the strict reading of config.json's integers.

One layer's KV bytes per token on one GPU (SGLang's `cell_size`, 0.5.23 model_executor/pool_configurator.py:491-498
for MHA/GQA, the MLA branch above it; docs/kv-pool-formula.md has the citations):
  MLA (DeepSeek-V3/R1, Kimi K2):  (kv_lora_rank + qk_rope_head_dim) x elem
      one latent vector serves K and V, and it is replicated on every attention-TP rank.
  MHA/GQA:  max(1, kv_heads // attn_tp) x (head_dim + v_head_dim) x elem
      attn_tp = tp / dp with DP attention; KV heads are replicated when tp > kv_heads.
times the layers that hold that KV: every layer on one pipeline stage (plain.py), the full-attention layers of a
hybrid (linear.py, sliding.py).

A floor below the families (families.py) and model.py: it imports geometry.py and spec.py only.
"""

import math

from .geometry import config_bound, is_mla, text_config
from .spec import KVPlanError


def config_field(config, name, default=None, where="model_config"):
    """A positive integer field of a config.json; `default` when absent (None: required)."""
    value = config.get(name)
    if value is None and default is not None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:20] + "..."
        raise KVPlanError("%s: %r must be a positive integer in the model's config.json, got %s%s. Is this "
                          "a decoder-only checkpoint's config.json?"
                          % (where, name, shown, " (a string)" if isinstance(value, str) else ""))
    if value > config_bound(name):
        raise KVPlanError("%s: %r is %s in the model's config.json, more than any model has (at most %s): the file "
                          "is damaged or not a model's config.json. Stage the checkpoint again."
                          % (where, name, repr(value)[:20] + ("..." if len(repr(value)) > 20 else ""),
                             format(config_bound(name), ",")))
    return value


def layers_per_stage(config, pp_size):
    """Layers on the fullest pipeline stage: the pool is the MIN over stages."""
    return math.ceil(config_field(text_config(config), "num_hidden_layers") / pp_size)


def own_cell(config, kv_elem, attn_tp, layers):
    """KV bytes per token of `layers` layers with this config's attention on one GPU."""
    cfg = text_config(config)
    if is_mla(cfg):
        return (config_field(cfg, "kv_lora_rank") + config_field(cfg, "qk_rope_head_dim")) * layers * kv_elem
    heads = config_field(cfg, "num_attention_heads")
    kv_heads = config_field(cfg, "num_key_value_heads", heads)
    head_dim = config_field(cfg, "head_dim", config_field(cfg, "hidden_size") // heads)
    v_head_dim = config_field(cfg, "v_head_dim", head_dim)
    return max(1, kv_heads // attn_tp) * (head_dim + v_head_dim) * layers * kv_elem
