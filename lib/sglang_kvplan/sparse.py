"""DeepSeek-V3.2's KV pool (DeepSeek sparse attention, DSA), as SGLang 0.5.15-0.5.23 size it.

Its MLA layers keep the latent row of DeepSeek-V3, and beside each an indexer keeps a key per token; the release
picks the KV dtype, the DSA kernels and the page itself (releases/rules.json `dsa_layout`, read from each wheel;
0.5.23 arg_groups/overrides.py _dsa_kv_cache_dtype_default, _dsa_split_backend_resolution,
arg_groups/model_overrides/deepseek_v2.py; model_executor/pool_configurator.py _compute_cell_size :340-409):

    dtype  = --kv-cache-dtype, 'auto' being fp8_e4m3 on SM100+ and bfloat16 below
    row    = kv_lora_rank + rope x elem                   (bf16 x 2; fp8 raw on SM100+: the trtllm kernels)
           = kv_lora_rank + kv_lora_rank / 128 x 4 + rope x 2   (fp8 below SM100: flashmla_kv's scaled row)
    cell   = row x L + (index_head_dim + index_head_dim / 128 x 4) x L      (bytes; the indexer in fp8 + scales)
    page   = 64, whatever --page-size says

So the fp8 row is 576 B on a B200 and 656 B on an H200, the bf16 one 1,152 B, and the indexer 132 B per layer.
The indexer's logits scratch is chunked by SGLang to a fifth of the free memory (SGLANG_DSA_MQA_LOGITS_FREE_MEM_
FRACTION, 0.5.13+), so it slows a long prefill in a small headroom rather than failing it; it is not planned.

Not modelled, so refused by name: releases whose rules read otherwise (0.5.9-0.5.14 give fp8 flashmla_kv on SM100
too), fp8 below SM100 on 0.5.15-0.5.16 (their configurator counts the tokens by the raw row while flashmla_kv
allocates the scaled one: 'v32_raw_sized'; the real 0.5.15 code, given an H200 fp8 plan, counts 11 % more tokens),
a GPU family not known with the dtype left to 'auto', another KV dtype, DSA kernels named in sglang_extra_args,
HiSparse, a draft other than NEXTN on 0.5.17+ (its own indexer rows; NEXTN's MTP layer is the release's per-layer
scaling of this cell, one MLA row and one indexer row), pipeline stages, DP attention, and checkpoints whose
indexer is shared or pooled (indexer_types, index_kpool) or that carry learnable attention sinks.
"""

from .geometry import architecture, text_config
from .kv_cell import layers_per_stage
from .spec import SM100_MAJOR, KVPlanError, gpu_major

# The architectures this family sizes (families.py): architectures[0] -> (the model family, the SGLang 0.5.23
# EntryClass that serves it).
ARCHITECTURES = {
    "DeepseekV32ForCausalLM": ("DeepSeek-V3.2", "models/deepseek_v2.py:3595"),
}
POOL_CLASSES = ("sparse",)  # the class of releases/architectures.json its architectures carry
OWN_LAYOUT_KEYS = True  # index_topk is this family's to read, not a refusal (model.py)
PLANNED_AS = ("one MLA pool with its sparse-attention indexer keys, in the KV dtype and page 64 the release picks "
              "(`sparse.py`), from 0.5.15")  # docs/planner.md's table
PAGE = 64
QUANT_BLOCK = 128  # DSATokenToKVPool.quant_block_size: one fp32 scale per 128 fp8 values
_DTYPES = {"auto": None, "bf16": "bfloat16", "bfloat16": "bfloat16", "fp8_e4m3": "fp8_e4m3"}


def is_sparse(config):
    return architecture(config) in ARCHITECTURES


def check_release(_arch, _release, _where="model_config"):
    """Nothing before the config is checked: the release's rules for this family are check's, with the rest."""


def claims(config):
    """True for an architecture of this family (its fields are checked by check)."""
    return is_sparse(config)


def kv_cell(spec, _elem):
    """KV + indexer bytes per token on one GPU over the fullest pipeline stage's layers; the release picks the
    dtype (kv_dtype), so the element model.py reads from --kv-cache-dtype is not this cell's."""
    config = spec["model_config"]
    return cell_bytes(spec, text_config(config), layers_per_stage(config, spec["pp_size"]))


def describe(_spec, _dtype):
    """None: model.py's MLA words hold (the indexer's keys are in the trade-off line)."""


def _sm100_or_newer(spec):
    """SGLang's `major >= 10` (the DSA rules say SM100 and newer, not SM100 alone); None when not known."""
    major = gpu_major(spec)
    return None if major is None else major >= SM100_MAJOR


def kv_dtype(spec):
    """The KV dtype the release resolves ('bfloat16' or 'fp8_e4m3')."""
    asked = _DTYPES.get(spec["kv_cache_dtype"], spec["kv_cache_dtype"])
    if asked is not None:
        return asked
    return "fp8_e4m3" if _sm100_or_newer(spec) else "bfloat16"


def cell_bytes(spec, cfg, layers):
    """KV + indexer bytes per token on one GPU (the MLA row is not split over TP)."""
    rank, rope, index = cfg["kv_lora_rank"], cfg["qk_rope_head_dim"], cfg["index_head_dim"]
    if kv_dtype(spec) == "bfloat16":
        row = (rank + rope) * 2
    elif _sm100_or_newer(spec):
        row = rank + rope
    else:
        row = rank + rank // QUANT_BLOCK * 4 + rope * 2
    return (row + index + index // QUANT_BLOCK * 4) * layers


def _draft_name(spec):
    return "a %s draft" % spec["speculative"]["algorithm"] if spec["speculative"] else "a draft"


def _unmodelled_draft(spec):
    """A draft the planner does not size beside DSA: all but NEXTN (its MTP layer, scaled into the cell per layer,
    as 0.5.17+ sizes it: dsa_layout 'v32_by_major')."""
    spec_cfg = spec["speculative"]
    if not spec_cfg:
        return False
    return spec_cfg["algorithm"] != "NEXTN" or spec["_rules"].get("dsa_layout") != "v32_by_major"


def check(spec):
    """Refuse what the formula does not describe, naming the knob."""
    if not is_sparse(spec["model_config"]):
        return
    cfg, rules = text_config(spec["model_config"]), spec["_rules"]
    if rules.get("dsa_layout") not in ("v32_by_major", "v32_raw_sized"):
        raise KVPlanError("sglang_version: SGLang %s picks DeepSeek-V3.2's KV dtype and DSA kernels by rules the "
                          "planner has not read (0.5.9-0.5.14 keep fp8 on flashmla_kv on SM100 too); use SGLang "
                          "0.5.15 or newer, or size it by hand with --max-total-tokens." % spec["_release"])
    if spec["kv_cache_dtype"] not in _DTYPES:
        raise KVPlanError("sglang_kv_cache_dtype: %s; DeepSeek DSA only supports bf16/bfloat16 or fp8_e4m3 "
                          "kv_cache_dtype (SGLang's words); use one of them or auto." % spec["kv_cache_dtype"])
    if rules["dsa_layout"] == "v32_raw_sized" and kv_dtype(spec) == "fp8_e4m3" and _sm100_or_newer(spec) is not True:
        raise KVPlanError("sglang_kv_cache_dtype: fp8_e4m3 below SM100 allocates DeepSeek-V3.2's scaled row (656 B a "
                          "layer) while SGLang %s counts the pool's tokens by the raw one (576 B; its configurator "
                          "has no calculate_mla_kv_cache_dim before 0.5.17), so the pool would overrun the memory "
                          "planned for it; use bfloat16 (or auto) here, or SGLang 0.5.17 or newer." % spec["_release"])
    if spec["kv_cache_dtype"] == "auto" and _sm100_or_newer(spec) is None:
        raise KVPlanError("sglang_gpu_compute_capability: not known, and DeepSeek-V3.2's KV dtype follows it "
                          "(fp8_e4m3 on SM100 and newer, bfloat16 below); set sglang_gpu_compute_capability "
                          "(nvidia-smi --query-gpu=compute_cap) or sglang_kv_cache_dtype.")
    refusals = (
        (spec["dsa_option"], "sglang_extra_args: %s changes DeepSeek-V3.2's KV layout, which the planner does not "
                             "model; remove it for this model." % spec["dsa_option"]),
        (_unmodelled_draft(spec), "sglang_speculative: %s beside DeepSeek-V3.2 keeps indexer rows of its own, which "
                                  "the planner models for its NEXTN draft on SGLang 0.5.17 and newer only (the "
                                  "release's per-layer draft scaling of the cell: one MLA row and one indexer row, "
                                  "checked against the real configurator); use NEXTN there, or leave "
                                  "sglang_speculative empty." % _draft_name(spec)),
        (spec["pp_size"] > 1, "sglang_pp_size: pipeline stages of DeepSeek-V3.2 are not modelled; use 1."),
        (spec["enable_dp_attention"], "sglang_enable_dp_attention: DP attention splits DeepSeek-V3.2's indexer per "
                                      "attention-DP worker, which the planner does not model; turn it off."),
        (cfg.get("indexer_types") is not None or cfg.get("index_kpool", 1) != 1,
         "model_config: a shared or pooled indexer (indexer_types, index_kpool) changes the indexer's rows and the "
         "page; the planner sizes DeepSeek-V3.2's own; size this one by hand with --max-total-tokens."),
        (cfg.get("learnable_sink"), "model_config: learnable attention sinks make SGLang keep a bf16 KV cache on "
                                    "other kernels, which the planner does not model; size it by hand."),
    )
    for refused, message in refusals:
        if refused:
            raise KVPlanError(message)
    for name in ("kv_lora_rank", "qk_rope_head_dim", "index_head_dim"):
        value = cfg.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value % 2:
            raise KVPlanError("model_config: DeepSeek-V3.2's %s must be a positive even whole number in config.json, "
                              "got %r. Stage the checkpoint's config.json again." % (name, value))


def tradeoff(spec):
    """The plan's line on what the pool holds per token; [] for other models."""
    if not is_sparse(spec["model_config"]):
        return []
    cfg = spec["model_config"]  # a flat config.json: DeepSeek-V3.2 nests no text_config
    layers = cfg["num_hidden_layers"]
    index = cfg["index_head_dim"] + cfg["index_head_dim"] // QUANT_BLOCK * 4
    return ["sparse attention: %s B a token on each GPU, the MLA row in %s and %d B of indexer keys, over %d layers; "
            "SGLang %s picks that KV dtype and page %d for this GPU (rules.json dsa_layout, %s)"
            % (format(cell_bytes(spec, cfg, layers), ","), kv_dtype(spec), index, layers, spec["_release"], PAGE,
               spec["_rules"]["dsa_layout_source"])]
