"""KV bytes per token per GPU (SGLang's `cell_size`), from a Hugging Face config.json.

Mirrors SGLang's model_runner / pool_configurator (docs/kv-pool-formula.md has the citations):
  MLA (DeepSeek-V3/R1, Kimi K2):  (kv_lora_rank + qk_rope_head_dim) * L * elem
      one latent vector serves K and V, and it is replicated on every attention-TP rank.
  MHA/GQA:  max(1, kv_heads // attn_tp) * (head_dim + v_head_dim) * L * elem
      attn_tp = tp / dp with DP attention; KV heads are replicated when tp > kv_heads.
  L is the layer count on one pipeline stage. A speculative draft's KV is added per release
  (releases.py): inside the cell in 0.5.23, beside the pool (out of the headroom) in 0.5.9.
"""

import math

from . import linear, sliding, sparse
from .architectures import GEMMA3, check_architecture, one_pool_over_windows
from .geometry import attn_tp_size, config_bound, has_asymmetric_kv, is_mla, text_config
from .refusals import check_launch, check_lora
from .releases import ELEM_BYTES, MODEL_FREE_ALGORITHMS, OWN_GEOMETRY_ALGORITHMS, RULES, first_release_with
from .rope import derived_context, scaled_window
from .spec import KVPlanError, gpu_is_sm100

# SGLang's dtype "auto" serves a float32 checkpoint (or one that names no dtype) as float16, bfloat16 for Gemma
# (0.5.9 and 0.5.23 configs/model_config.py _get_and_verify_dtype): the KV cache follows the served dtype.
_TORCH_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "half": 2, "float32": 2, "float": 2}


def _field(config, name, default=None, where="model_config"):
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


def check_config_types(config, where="model_config"):
    """The nested mappings the planner reads must be mappings (a string or a number there is a damaged file)."""
    for source in (config, text_config(config)):
        for key in ("quantization_config", "text_config", "dflash_config"):
            value = source.get(key)
            if value is not None and not isinstance(value, dict):
                raise KVPlanError("%s: %r in the model's config.json must be a mapping, got %r. Stage the "
                                  "checkpoint's config.json again, or remove the key if it is not the model's."
                                  % (where, key, value if len(repr(value)) <= 40 else repr(value)[:20] + "..."))


# config.json keys that mean an attention layout the pool formula here does not describe.
_UNSUPPORTED = (
    ("sliding_window", "sliding-window attention (a second, windowed pool)"),
    ("layer_types", "mixed layer types (sliding-window or linear attention layers)"),
    ("full_attention_interval", "hybrid linear attention (Mamba/GDN state pools)"),
    ("hybrid_override_pattern", "a hybrid Mamba model (state pools beside the KV pool)"),
    ("mamba_d_state", "a Mamba model (state pools beside the KV pool)"),
    ("index_topk", "DeepSeek sparse attention (an indexer cache, and 0.5.23 budgets MQA logits from "
                   "mem_fraction_static)"),
    ("attention_chunk_size", "chunked local attention"),
    ("linear_attn_config", "linear attention layers (KDA) with a state pool beside the KV pool"),
)


# The window keys: a second pool only where the release sizes the architecture as hybrid SWA.
_WINDOW_KEYS = ("sliding_window", "layer_types", "attention_chunk_size")


def _only_attention(layer_types):
    """True where layer_types names full and sliding-window attention only (no linear or Mamba layers)."""
    return isinstance(layer_types, list) and all(t in ("full_attention", "sliding_attention") for t in layer_types)


def _unsupported_layout(cfg, windows_in_one_pool=False):
    for key, what in _UNSUPPORTED:
        value = cfg.get(key)
        if windows_in_one_pool and key in _WINDOW_KEYS and (key != "layer_types" or _only_attention(value)):
            continue  # the release sizes these layers in one pool over every layer (architectures.py)
        if key == "sliding_window" and not cfg.get("use_sliding_window", "use_sliding_window" not in cfg):
            continue  # Qwen2/3 carry a sliding_window they do not use
        if key == "layer_types" and isinstance(value, list) and all(v == "full_attention" for v in value):
            continue
        if value:
            return key, what
    return None


def check_geometry(spec):
    """Refuse configs and parallelism the formula cannot size, with the knob to change."""
    check_config_types(spec["model_config"])
    check_lora(spec)
    if spec.get("max_total_tokens") is not None:
        return  # a pool sized by hand (hand_pool.py): the layout is the operator's, the planner sizes no cell
    cfg = text_config(spec["model_config"])
    # The architecture decides first (architectures.py): an unknown one is refused, never planned as another.
    # Gemma 3 carries sliding_window/layer_types that the releases it is known on turn off (one plain pool).
    arch = check_architecture(spec["model_config"], spec["_release"])
    # A sliding-window architecture the planner sizes (sliding.py) carries the keys below by design.
    planned_hybrid = (sliding.layout(spec["model_config"]) or linear.layout(spec["model_config"])
                      or sparse.is_sparse(spec["model_config"]))
    windows_in_one_pool = one_pool_over_windows(spec["model_config"], spec["_release"])
    unsupported = None if arch in GEMMA3 or planned_hybrid else _unsupported_layout(cfg, windows_in_one_pool)
    if windows_in_one_pool:  # the windows are not sized, but a damaged one is still refused by name
        for name in ("sliding_window", "attention_chunk_size"):
            if cfg.get(name) is not None:
                _field(cfg, name)
    if unsupported:
        raise KVPlanError("model_config: this checkpoint uses %s (config.json has %r), which the planner cannot "
                          "size: its plan would be wrong. Size it by hand with --max-total-tokens, or choose a "
                          "model with full attention (MLA or GQA)." % (unsupported[1], unsupported[0]))
    heads = _field(cfg, "num_attention_heads")
    _field(cfg, "num_hidden_layers")
    for name in ("num_key_value_heads", "head_dim", "v_head_dim", "kv_lora_rank", "qk_rope_head_dim",
                 "hidden_size", "max_position_embeddings"):
        if cfg.get(name) is not None:
            _field(cfg, name)
    if not is_mla(cfg) and cfg.get("head_dim") is None and _field(cfg, "hidden_size") // heads < 1:
        raise KVPlanError("model_config: hidden_size %s is smaller than num_attention_heads %s and there is no "
                          "head_dim, so a head would have no dimension: check sglang_model_config (config.json), or "
                          "give head_dim." % (cfg.get("hidden_size"), heads))
    attn_tp = spec["tp_size"] // spec["dp_size"] if spec["enable_dp_attention"] else spec["tp_size"]
    knob = "sglang_tp_size" + (" / sglang_dp_size" if spec["enable_dp_attention"] else "")
    if heads % attn_tp:
        raise KVPlanError("%s: attention TP %d does not divide the model's %d attention heads, which SGLang "
                          "requires; use a divisor of %d." % (knob, attn_tp, heads, heads))
    kv_heads = cfg.get("num_key_value_heads") or heads
    if not is_mla(cfg) and kv_heads % attn_tp and attn_tp % kv_heads:
        raise KVPlanError("%s: attention TP %d and the model's %d KV heads must divide one another (SGLang "
                          "splits or replicates KV heads); use a divisor or a multiple of %d."
                          % (knob, attn_tp, kv_heads, kv_heads))
    if spec["pp_size"] > _field(cfg, "num_hidden_layers"):
        raise KVPlanError("sglang_pp_size: %d pipeline stages for %d layers; use at most %d."
                          % (spec["pp_size"], cfg["num_hidden_layers"], cfg["num_hidden_layers"]))
    check_speculative(spec)
    sliding.check(spec)
    linear.check(spec)
    sparse.check(spec, cfg)


def kv_elem_bytes(config, kv_cache_dtype):
    """Bytes per KV element. 'auto' follows the checkpoint: FP8 if its quant config says so."""
    if kv_cache_dtype != "auto":
        return ELEM_BYTES[kv_cache_dtype]
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


def _own_cell(config, kv_elem, attn_tp, layers):
    """KV bytes per token of `layers` layers with this config's attention on one GPU."""
    cfg = text_config(config)
    if is_mla(cfg):
        return (_field(cfg, "kv_lora_rank") + _field(cfg, "qk_rope_head_dim")) * layers * kv_elem
    heads = _field(cfg, "num_attention_heads")
    kv_heads = _field(cfg, "num_key_value_heads", heads)
    head_dim = _field(cfg, "head_dim", _field(cfg, "hidden_size") // heads)
    v_head_dim = _field(cfg, "v_head_dim", head_dim)
    return max(1, kv_heads // attn_tp) * (head_dim + v_head_dim) * layers * kv_elem


def target_cell_bytes(spec):
    """The target model's KV bytes per token on one GPU (no draft); for a sliding-window model, per token of its
    full pool (sliding.py)."""
    config = spec["model_config"]
    elem, attn_tp = kv_elem_bytes(config, spec["kv_cache_dtype"]), attn_tp_size(spec)
    if sliding.layout(config):
        return sliding.cell(spec, _own_cell(config, elem, attn_tp, 1), _sliding_layer_bytes(config, elem, attn_tp))
    if linear.layout(config):  # only the full-attention layers hold KV (linear.py)
        return _own_cell(config, elem, attn_tp, linear.layout(config)["full"])
    if sparse.is_sparse(config):  # the release's dtype and row, and the indexer's keys (sparse.py)
        return sparse.cell_bytes(spec, text_config(config), layers_per_stage(config, spec["pp_size"]))
    return _own_cell(config, elem, attn_tp, layers_per_stage(config, spec["pp_size"]))


def _sliding_layer_bytes(config, elem, attn_tp):
    """One sliding layer's KV bytes per token: its own heads and dims where config.json gives them, else the full
    layers' (0.5.23 configs/model_config.py get_swa_num_kv_heads, and swa_head_dim/swa_v_head_dim :1357-1365)."""
    cfg = text_config(config)
    heads = _field(cfg, "num_attention_heads")
    kv_heads = _field(cfg, "swa_num_key_value_heads", _field(cfg, "num_key_value_heads", heads))
    head_dim = _field(cfg, "swa_head_dim", _field(cfg, "head_dim", _field(cfg, "hidden_size") // heads))
    v_head_dim = _field(cfg, "swa_v_head_dim", head_dim)
    return max(1, kv_heads // attn_tp) * (head_dim + v_head_dim) * elem


def draft_layers(spec):
    """Layers of the speculative draft, by algorithm: its own config's, or the target's MTP layers."""
    spec_cfg = spec["speculative"]
    algorithm = spec_cfg["algorithm"]
    if algorithm in MODEL_FREE_ALGORITHMS:
        return 0
    if algorithm == "NEXTN" or spec_cfg["draft_model_config"] is None:
        return _field(text_config(spec["model_config"]), "num_nextn_predict_layers", 1)
    return _field(text_config(spec_cfg["draft_model_config"]), "num_hidden_layers",
                  where="speculative.draft_model_config")


def draft_cell_bytes(spec):
    """The draft's own KV bytes per token on one GPU (its heads split over the attention TP, as
    dflash_utils.dflash_draft_cell_size_per_token in 0.5.23 and the 0.5.9 draft runner do)."""
    spec_cfg = spec["speculative"]
    if not spec_cfg or not draft_layers(spec):
        return 0
    if spec_cfg["algorithm"] == "NEXTN" or spec_cfg["draft_model_config"] is None:
        draft_config = spec["model_config"]  # MTP layers live in the target checkpoint
        elem = kv_elem_bytes(draft_config, spec["kv_cache_dtype"])
    else:
        draft_config = spec_cfg["draft_model_config"]
        elem = kv_elem_bytes(draft_config, spec["kv_cache_dtype"])
        if spec_cfg["algorithm"] == "DFLASH" and dflash_draft_on_fa4(spec):
            elem = max(elem, model_dtype_bytes(draft_config))
    return _own_cell(draft_config, elem, attn_tp_size(spec), draft_layers(spec))


def model_dtype_bytes(config):
    """The served dtype's element size (what an unquantized KV pool of this model holds)."""
    cfg = text_config(config)
    dtype = str(cfg.get("torch_dtype") or config.get("torch_dtype") or "bfloat16")
    return _TORCH_DTYPE_BYTES.get(dtype.replace("torch.", ""), 2)


def _draft_is_causal_or_sliding(draft_config):
    """SGLang keeps trtllm_mha for a DFLASH draft only when every layer is sliding or the draft says
    `is_causal: true` (0.5.23 arg_groups/speculative_hook.py:945-966, get_dflash_layer_types)."""
    cfg = text_config(draft_config)
    nested = draft_config.get("dflash_config") if isinstance(draft_config.get("dflash_config"), dict) else {}
    types = nested.get("layer_types") or cfg.get("layer_types") or draft_config.get("layer_types")
    all_sliding = (isinstance(types, list) and len(types) == cfg.get("num_hidden_layers")
                   and set(types) == {"sliding_attention"})
    return bool(all_sliding or cfg.get("is_causal") is True)


def dflash_draft_on_fa4(spec):
    """Whether the DFLASH draft's attention runs on fa4, which keeps its KV in the model dtype whatever
    --kv-cache-dtype says ("DFLASH fa4 draft: overriding KV cache dtype", mem_cache/kv_cache_dtype.py, 0.5.16+;
    the budget sizes the draft cell with it, mem_cache/draft_kv_budget.py). The draft inherits the target's
    backend. On SM100 a DFLASH target gets the GQA default (fa4 for asymmetric K/V, else trtllm_mha) only where
    the release keeps it for DFLASH (rules.json sm100_default_with_dflash, 0.5.23: before, its topk is unset
    when the default is picked, so it gets flashinfer, which reads fp8); 0.5.23 swaps a trtllm_mha draft for fa4
    when the drafter is neither all-sliding nor causal (dflash_draft_backend 'sm100_fa4'). GPU family unknown:
    as on SM100, so the pin holds on every GPU."""
    rule = spec["_rules"].get("dflash_draft_backend")
    if (rule is None or not spec["_rules"].get("sm100_default_with_dflash") or gpu_is_sm100(spec) is False
            or is_mla(spec["model_config"])):
        return False
    if has_asymmetric_kv(spec["model_config"]) and "sm100_mha_asymmetric_kv" in spec["_rules"]["forced_pages"]:
        return True
    draft = spec["speculative"]["draft_model_config"] or {}
    return rule == "sm100_fa4" and not _draft_is_causal_or_sliding(draft)


def cell_bytes(spec):
    """KV bytes per token on one GPU as the release's profile divides by (the draft inside or not)."""
    cell = target_cell_bytes(spec)
    spec_cfg = spec["speculative"]
    if not spec_cfg or not draft_layers(spec):
        return cell
    rules = spec["_rules"]
    layers = layers_per_stage(spec["model_config"], spec["pp_size"])
    if spec_cfg["algorithm"] in OWN_GEOMETRY_ALGORITHMS:
        if rules["dflash_cell"] is None:  # a fork carrying DFLASH on rules without it: its draft pool is beside
            return cell
        if rules["dflash_cell"] == "draft_cell":  # target cell + the draft's own (dflash_utils.py)
            return cell + draft_cell_bytes(spec)
        # 0.5.11-0.5.17 scale_kv_cell_size_per_token_for_dflash by layers only: ceil(cell x (L + Ld) / L)
        return (cell * (layers + draft_layers(spec)) + layers - 1) // layers
    if rules["eagle_cell"] == "scaled_product":  # 0.5.14-0.5.21: int(cell * (1 + Ld / L))
        return int(cell * (1 + draft_layers(spec) / layers))
    if rules["eagle_cell"] == "scaled_sum":  # 0.5.22+: cell + int(cell * Ld / L)
        return cell + int(cell * draft_layers(spec) / layers)
    return cell  # 'separate': the draft runner's own pool, beside this one (separate_draft_cell_bytes)


def separate_draft_cell_bytes(spec):
    """Draft KV bytes per token allocated beside the pool (an EAGLE-family draft's own pool where the release's
    cell has no draft term: 0.5.9-0.5.13), else 0."""
    spec_cfg = spec["speculative"]
    if not spec_cfg:
        return 0
    if spec_cfg["algorithm"] in OWN_GEOMETRY_ALGORITHMS:  # beside only on rules without DFLASH (a fork, 0.5.9)
        return draft_cell_bytes(spec) if spec["_rules"]["dflash_cell"] is None else 0
    return draft_cell_bytes(spec) if spec["_rules"]["eagle_cell"] == "separate" else 0


def check_speculative(spec):
    """The algorithm exists in the release, and the draft it needs is described."""
    spec_cfg = spec["speculative"]
    name, rules = spec["_release"], spec["_rules"]
    if not spec_cfg:
        return
    algorithm = spec_cfg["algorithm"]
    known = set().union(*(r["speculative_algorithms"] for r in RULES.values()))
    # A fork (pool_rules named outright) may carry an algorithm its base release lacks, if any release has it.
    allowed = known if spec["pool_rules"] is not None else rules["speculative_algorithms"]
    if algorithm not in allowed:
        since = first_release_with(algorithm)
        raise KVPlanError("sglang_speculative.algorithm: %s is not a --speculative-algorithm of SGLang %s "
                          "(its choices: %s). Use one of those, or a release that has it%s."
                          % (algorithm, name, ", ".join(rules["speculative_algorithms"]),
                             " (%s: %s and newer)" % (algorithm, since) if since else ""))
    check_launch(spec)  # what the release refuses when it starts (refusals.py), and UNO by name
    needs_draft = algorithm not in MODEL_FREE_ALGORITHMS and algorithm != "NEXTN"
    if needs_draft and not spec_cfg["draft_model_path"]:
        raise KVPlanError("sglang_speculative.draft_model_path: %s needs a draft model; set draft_model_path "
                          "(and draft_model_hf_repo to fetch it)." % algorithm)
    if algorithm in OWN_GEOMETRY_ALGORITHMS and spec_cfg["draft_model_config"] is None:
        raise KVPlanError("sglang_speculative: %s sizes the draft's KV from the draft's config.json, which was "
                          "not read (draft_model_config is empty): stage the draft at draft_model_path." % algorithm)
    if spec_cfg["draft_model_config"] is not None:
        check_config_types(spec_cfg["draft_model_config"], "speculative.draft_model_config")
    if spec_cfg["draft_model_config"] is not None and draft_layers(spec):
        unsupported = _unsupported_layout(text_config(spec_cfg["draft_model_config"]))
        if unsupported:
            raise KVPlanError("sglang_speculative: the draft model uses %s, which the planner cannot size."
                              % unsupported[1])
        draft_cell_bytes(spec)


def describe_cell(spec):
    """A few words on where the cell size comes from, for explanations and errors."""
    config = spec["model_config"]
    elem = kv_elem_bytes(config, spec["kv_cache_dtype"])
    dtype = {1: "fp8", 2: "bf16", 4: "fp32"}[elem]
    if is_mla(config):
        return "%s MLA latent KV, replicated on each of %d TP ranks" % (dtype, spec["tp_size"])
    if linear.layout(config):
        return ("%s GQA KV of the %d full-attention layers (the %d linear-attention layers keep a state per request "
                "instead), heads split over attention TP" % (dtype, linear.layout(config)["full"],
                                                             linear.layout(config)["linear"]))
    if sliding.layout(config):
        full, layers, _window = sliding.layout(config)
        return ("%s GQA KV of %d full-attention layers + --swa-full-tokens-ratio %s x %d sliding-window layers, heads "
                "split over attention TP" % (dtype, full, sliding.ratio(spec), layers))
    return "%s GQA/MHA KV, heads split over attention TP" % dtype


def native_context(config):
    """The window SGLang derives from the checkpoint's config.json (rope.py)."""
    return derived_context(text_config(config))


def context_window(spec):
    """(the window a --context-length may reach, --json-model-override-args or None): the model's own, or the one
    sglang_rope_scaling gives it. A multimodal checkpoint keeps its RoPE in text_config, which SGLang's top-level
    override does not reach: refused there."""
    config, scaling = spec["model_config"], spec.get("rope_scaling")
    if scaling and text_config(config) is not config:
        raise KVPlanError("sglang_rope_scaling: this checkpoint keeps its language model's settings under "
                          "text_config, which --json-model-override-args does not reach; leave sglang_rope_scaling "
                          "empty (the plan cannot widen this model's window).")
    return scaled_window(text_config(config), scaling)


def mtp_head_gib(spec):
    """GiB of the checkpoint that is its own MTP head (NEXTN without a draft checkpoint of its own, and no measured
    draft weight): the head's layers' share of checkpoint_gib. SGLang loads it as the draft (before the pool from
    0.5.14, managers/scheduler.py init_model_worker), all of it on the last pipeline stage, its weights over TP."""
    spec_cfg = spec["speculative"]
    if (not spec_cfg or spec_cfg["algorithm"] != "NEXTN" or spec_cfg["draft_model_config"] is not None
            or spec_cfg["draft_weights_gib"] is not None or spec_cfg["draft_checkpoint_gib"] is not None
            or spec["checkpoint_gib"] is None or spec["weights_gib_per_gpu"] is not None):
        return 0.0
    layers = draft_layers(spec)
    return spec["checkpoint_gib"] * layers / (layers + layers_of(spec))


def mtp_head_weights(spec):
    """(GiB per GPU, note) of the MTP head as the draft's weights (mtp_head_gib over TP)."""
    weights = mtp_head_gib(spec) / spec["tp_size"]
    return weights, ("draft weights %.2f GiB per GPU: the checkpoint's MTP head, %d of its %d layers' share of "
                     "checkpoint_gib over TP %d (an estimate until a boot measures it)"
                     % (weights, draft_layers(spec), draft_layers(spec) + layers_of(spec), spec["tp_size"]))


def layers_of(spec):
    return text_config(spec["model_config"])["num_hidden_layers"]
