"""KV bytes per token per GPU (SGLang's `cell_size`), from a Hugging Face config.json.

Mirrors SGLang's model_runner / pool_configurator (docs/kv-pool-formula.md has the citations):
  MLA (DeepSeek-V3/R1, Kimi K2):  (kv_lora_rank + qk_rope_head_dim) * L * elem
      one latent vector serves K and V, and it is replicated on every attention-TP rank.
  MHA/GQA:  max(1, kv_heads // attn_tp) * (head_dim + v_head_dim) * L * elem
      attn_tp = tp / dp with DP attention; KV heads are replicated when tp > kv_heads.
  L is the layer count on one pipeline stage; speculative drafts add cell * D / L (SGLang 0.5.15+).
"""

import math

from .spec import KVPlanError

_ELEM_BYTES = {"bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1}
_TORCH_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4}


def text_config(config):
    """The language model's config: multimodal checkpoints nest it under text_config."""
    nested = config.get("text_config")
    if isinstance(nested, dict) and nested.get("num_hidden_layers"):
        return nested
    return config


def _field(config, name):
    value = config.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise KVPlanError("model_config: %r must be a positive integer in the model's config.json, "
                          "got %r. Is this a decoder-only checkpoint's config.json?" % (name, value))
    return value


def is_mla(config):
    return bool(text_config(config).get("kv_lora_rank"))


def kv_elem_bytes(config, kv_cache_dtype):
    """Bytes per KV element. 'auto' follows the checkpoint: FP8 if its quant config says so."""
    if kv_cache_dtype != "auto":
        return _ELEM_BYTES[kv_cache_dtype]
    cfg = text_config(config)
    for source in (cfg, config):
        quant = source.get("quantization_config") or {}
        if str(quant.get("kv_cache_quant_algo", "")).upper() == "FP8":
            return 1
    dtype = str(cfg.get("torch_dtype") or config.get("torch_dtype") or "bfloat16")
    return _TORCH_DTYPE_BYTES.get(dtype.replace("torch.", ""), 2)


def layers_per_stage(config, pp_size):
    """Layers on the fullest pipeline stage: the pool is the MIN over stages."""
    return math.ceil(_field(text_config(config), "num_hidden_layers") / pp_size)


def cell_bytes(spec):
    """KV bytes per token on one GPU for a normalised spec."""
    config = spec["model_config"]
    cfg = text_config(config)
    elem = kv_elem_bytes(config, spec["kv_cache_dtype"])
    layers = layers_per_stage(config, spec["pp_size"])
    if is_mla(config):
        cell = (_field(cfg, "kv_lora_rank") + _field(cfg, "qk_rope_head_dim")) * layers * elem
    else:
        heads = _field(cfg, "num_attention_heads")
        kv_heads = cfg.get("num_key_value_heads") or heads
        head_dim = cfg.get("head_dim") or _field(cfg, "hidden_size") // heads
        v_head_dim = cfg.get("v_head_dim") or head_dim
        attn_tp = spec["tp_size"] // spec["dp_size"] if spec["enable_dp_attention"] else spec["tp_size"]
        cell = max(1, kv_heads // attn_tp) * (head_dim + v_head_dim) * layers * elem
    draft = spec["speculative_draft_layers"]
    if draft:
        cell += int(cell * draft / layers)
    return cell


def describe_cell(spec):
    """A few words on where the cell size comes from, for explanations and errors."""
    config = spec["model_config"]
    elem = kv_elem_bytes(config, spec["kv_cache_dtype"])
    dtype = {1: "fp8", 2: "bf16", 4: "fp32"}[elem]
    if is_mla(config):
        return "%s MLA latent KV, replicated on each of %d TP ranks" % (dtype, spec["tp_size"])
    return "%s GQA/MHA KV, heads split over attention TP" % dtype


def native_context(config):
    return text_config(config).get("max_position_embeddings")
