"""KV bytes per token per GPU (SGLang's `cell_size`), from a Hugging Face config.json.

Mirrors SGLang's model_runner / pool_configurator (docs/kv-pool-formula.md has the citations). The target model's
cell is its attention family's (families.py: plain.py's MLA or MHA/GQA formula of kv_cell.py over the layers of one
pipeline stage, or sliding.py's, linear.py's, sparse.py's), found through the registry; this file holds what every
family shares: the checks of the config and the parallelism, the KV element, and the speculative draft, whose KV is
added per release (releases.py): inside the cell in 0.5.23, beside the pool (out of the headroom) in 0.5.9.
"""

from .architectures import GEMMA3, check_architecture, one_pool_over_windows
from .families import family_of
from .geometry import attn_tp_size, has_asymmetric_kv, is_mla, text_config
from .kv_cell import config_field, layers_per_stage, own_cell
from .refusals import check_launch, check_lora
from .releases import ELEM_BYTES, MODEL_FREE_ALGORITHMS, OWN_GEOMETRY_ALGORITHMS, RULES, first_release_with
from .rope import scaled_window
from .spec import KVPlanError, gpu_is_sm100

# SGLang's dtype "auto" serves a float32 checkpoint (or one that names no dtype) as float16, bfloat16 for Gemma
# (0.5.9 and 0.5.23 configs/model_config.py _get_and_verify_dtype): the KV cache follows the served dtype.
_TORCH_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "half": 2, "float32": 2, "float": 2}


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
    # A hybrid or sparse family (families.py) reads the keys below by design; its claim refuses a damaged layout.
    family = family_of(spec["model_config"])
    windows_in_one_pool = one_pool_over_windows(spec["model_config"], spec["_release"])
    unsupported = (None if arch in GEMMA3 or family.OWN_LAYOUT_KEYS
                   else _unsupported_layout(cfg, windows_in_one_pool))
    if windows_in_one_pool:  # the windows are not sized, but a damaged one is still refused by name
        for name in ("sliding_window", "attention_chunk_size"):
            if cfg.get(name) is not None:
                config_field(cfg, name)
    if unsupported:
        raise KVPlanError("model_config: this checkpoint uses %s (config.json has %r), which the planner cannot "
                          "size: its plan would be wrong. Size it by hand with --max-total-tokens, or choose a "
                          "model with full attention (MLA or GQA)." % (unsupported[1], unsupported[0]))
    heads = config_field(cfg, "num_attention_heads")
    config_field(cfg, "num_hidden_layers")
    for name in ("num_key_value_heads", "head_dim", "v_head_dim", "kv_lora_rank", "qk_rope_head_dim",
                 "hidden_size", "max_position_embeddings"):
        if cfg.get(name) is not None:
            config_field(cfg, name)
    if not is_mla(cfg) and cfg.get("head_dim") is None and config_field(cfg, "hidden_size") // heads < 1:
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
    if spec["pp_size"] > config_field(cfg, "num_hidden_layers"):
        raise KVPlanError("sglang_pp_size: %d pipeline stages for %d layers; use at most %d."
                          % (spec["pp_size"], cfg["num_hidden_layers"], cfg["num_hidden_layers"]))
    check_speculative(spec)
    family.check(spec)


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


def target_cell_bytes(spec):
    """The target model's KV bytes per token on one GPU (no draft), as its family sizes it (families.py); for a
    sliding-window model, per token of its full pool (sliding.py)."""
    config = spec["model_config"]
    return family_of(config).kv_cell(spec, kv_elem_bytes(config, spec["kv_cache_dtype"]))


def draft_layers(spec):
    """Layers of the speculative draft, by algorithm: its own config's, or the target's MTP layers."""
    spec_cfg = spec["speculative"]
    algorithm = spec_cfg["algorithm"]
    if algorithm in MODEL_FREE_ALGORITHMS:
        return 0
    if algorithm == "NEXTN" or spec_cfg["draft_model_config"] is None:
        return config_field(text_config(spec["model_config"]), "num_nextn_predict_layers", 1)
    return config_field(text_config(spec_cfg["draft_model_config"]), "num_hidden_layers",
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
    return own_cell(draft_config, elem, attn_tp_size(spec), draft_layers(spec))


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
    return family_of(config).describe(spec, dtype) or "%s GQA/MHA KV, heads split over attention TP" % dtype


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
