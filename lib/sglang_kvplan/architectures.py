"""The architectures the planner sizes, by config.json `architectures[0]`, and the families it refuses by name.

The planner's cell formula (model.py) is SGLang's plain pool: MHA/GQA or MLA, every layer full attention, or
the hybrid sliding-window split (sliding.py) for the architectures in SLIDING, and a state pool beside the KV
pool (linear.py) for those in LINEAR. A
checkpoint is planned only when its architecture is in KNOWN: a list of what is known, never a list of refused
keys, so a new layout (Kimi-Linear's KDA layers slipped past the keys) is refused instead of planned as another.
Each entry cites the SGLang 0.5.23 model file whose EntryClass serves it (sglang/srt/models/<file>:<line>).
"""

from .releases import RULES
from .spec import KVPlanError

# architectures[0] -> SGLang 0.5.23 model file:line of its EntryClass. Every entry is full attention on every
# layer (the plain formula is SGLang's: model_executor/pool_configurator.py:491-498 for MHA/GQA, the MLA branch
# above it), MoE or dense alike: experts change the weights, not the KV cell.
KNOWN = {
    "LlamaForCausalLM": "models/llama.py:968",
    "MistralForCausalLM": "models/mistral.py:191",
    "MixtralForCausalLM": "models/mixtral.py:482",
    "Qwen2ForCausalLM": "models/qwen2.py:797",  # an unused sliding_window: use_sliding_window false (model.py)
    "Qwen2MoeForCausalLM": "models/qwen2_moe.py:1436",
    "Qwen3ForCausalLM": "models/qwen3.py:808",
    "Qwen3MoeForCausalLM": "models/qwen3_moe.py:1298",
    "DeepseekV2ForCausalLM": "models/deepseek_v2.py:3595",  # MLA
    "DeepseekV3ForCausalLM": "models/deepseek_v2.py:3595",  # MLA: DeepSeek-V3/R1, Kimi K2
    "KimiK25ForConditionalGeneration": "models/kimi_k25.py:988",  # MLA text_config (DeepseekV3), Kimi K2.5/K2.6
    # GQA text model (its window attention is in the vision encoder only, which holds no KV), multimodal reserve
    "Qwen2_5_VLForConditionalGeneration": "models/qwen2_5_vl.py:1004",
    # A DFLASH draft (the kimi-k2.6-dflash preset): plain GQA, sized as 0.5.23 speculative/dflash_utils.py
    # dflash_draft_cell_size_per_token does; drafter.py checks it against its target.
    "DFlashDraftModel": "models/dflash.py:1317",
}

# Hybrid sliding-window models, sized by sliding.py: a full pool and a windowed one, split by
# --swa-full-tokens-ratio. SGLang 0.5.23 marks them hybrid SWA (configs/model_config.py SWA_SINK_ARCHS,
# is_hybrid_swa_model) and reads the full and sliding layers from config.json's layer_types (get_hybrid_layer_ids).
SLIDING = {
    "GptOssForCausalLM": ("gpt-oss", "models/gpt_oss.py:1446"),
}

# Hybrid linear-attention models, sized by linear.py: a state pool of request slots beside the KV pool of the
# full-attention layers (0.5.23 configs/hybrid_arch.py hybrid_gdn_config; mem_cache/kv_cache_configurator.py).
LINEAR = {
    "Qwen3NextForCausalLM": ("Qwen3-Next", "models/qwen3_next.py:1316"),
    # Qwen3.5's text model is Qwen3-Next's (configs/qwen3_5.py Qwen3_5TextConfig(Qwen3NextConfig)), under
    # text_config beside a vision encoder
    "Qwen3_5ForConditionalGeneration": ("Qwen3.5", "models/qwen3_5.py:3021"),
    "Qwen3_5MoeForConditionalGeneration": ("Qwen3.5 MoE", "models/qwen3_5.py:3021"),
    # Mamba2 layers and a few GQA attention layers, by hybrid_override_pattern (configs/nemotron_h.py)
    "NemotronHForCausalLM": ("Nemotron-H", "models/nemotron_h.py:1361"),
    # KDA layers and a few MLA layers, by linear_attn_config's kda_layers (configs/kimi_linear.py)
    "KimiLinearForCausalLM": ("Kimi-Linear", "models/kimi_linear.py:1017"),
}

# DeepSeek sparse attention, sized by sparse.py: the MLA row in the dtype the release picks and the indexer's keys,
# page 64 (0.5.15+).
SPARSE = {
    "DeepseekV32ForCausalLM": ("DeepSeek-V3.2", "models/deepseek_v2.py:3595"),
}

# Gemma 3: every release in releases/rules.json, 0.5.9 to 0.5.23, sets disable_hybrid_swa_memory for
# Gemma3ForConditionalGeneration and Gemma3ForCausalLM ("Disable hybrid SWA memory for ... as it is not yet
# supported"; the line of each release below). With it is_hybrid_swa is false (0.5.23 configs/model_config.py:1217)
# and the pool is the plain MHA pool over all layers (0.5.23 model_executor/pool_configurator.py:491-498:
# kv_heads per TP x (head_dim + v_head_dim) x layers x elem), head_dim as text_config gives it (128 for 27B).
# A release not listed here is refused by name.
GEMMA3 = frozenset(("Gemma3ForConditionalGeneration", "Gemma3ForCausalLM"))
_SERVER_ARGS, _OVERRIDES, _GEMMA_FILE = ("server_args.py:", "arg_groups/overrides.py:",
                                         "arg_groups/model_overrides/gemma2_gemma3.py:")
GEMMA3_PLAIN_POOL = {
    "0.5.9": _SERVER_ARGS + "1476-1487", "0.5.10": _SERVER_ARGS + "1866-1877",
    "0.5.10.post1": _SERVER_ARGS + "1866-1877", "0.5.11": _SERVER_ARGS + "2075-2086",
    "0.5.12": _SERVER_ARGS + "2212-2223", "0.5.12.post1": _SERVER_ARGS + "2212-2223",
    "0.5.13": _SERVER_ARGS + "2353-2364", "0.5.13.post1": _SERVER_ARGS + "2353-2364",
    "0.5.14": _SERVER_ARGS + "4045-4056", "0.5.15": _OVERRIDES + "450-462", "0.5.15.post1": _OVERRIDES + "450-462",
    "0.5.16": _OVERRIDES + "552-564", "0.5.17": _OVERRIDES + "849-861", "0.5.18": _OVERRIDES + "902-914",
    "0.5.19": _GEMMA_FILE + "16-29", "0.5.20": _GEMMA_FILE + "16-29", "0.5.21": _GEMMA_FILE + "13-26",
    "0.5.22": _GEMMA_FILE + "13-26", "0.5.23": _GEMMA_FILE + "13-26",
}
GEMMA3_PLAIN_POOL_RELEASES = frozenset(GEMMA3_PLAIN_POOL)


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


def check_architecture(config, release, where="model_config"):
    """Refuse an architecture the planner does not know, or knows it cannot size; return it (or None)."""
    arch = architecture(config, where)
    if arch is None or arch in KNOWN:
        return arch
    if arch in LINEAR or arch in SPARSE:
        return arch  # the release's rule is checked with the rest of the family's (linear.check, sparse.check)
    if arch in SLIDING:
        rule = RULES[release]["swa_pool"]
        if rule != "ratio_cell":
            raise KVPlanError("%s: %s (architectures %s) has sliding-window layers, and SGLang %s splits its pool "
                              "after --max-total-tokens caps a count over every layer (%s, rule %r), which the "
                              "planner does not model. Use SGLang 0.5.11 or newer, or size it by hand with "
                              "--max-total-tokens." % (where, SLIDING[arch][0], arch, release,
                                                       RULES[release]["swa_pool_source"], rule))
        return arch
    if arch in GEMMA3:
        if release in GEMMA3_PLAIN_POOL_RELEASES:
            return arch
        raise KVPlanError("%s: Gemma 3 (architectures %s) has sliding-window layers; SGLang %s is not one of the "
                          "releases known to disable hybrid SWA memory for it (0.5.9-0.5.23, "
                          "arg_groups/model_overrides/gemma2_gemma3.py in 0.5.23), so its pool split cannot be "
                          "sized. Use one of those releases, or size it by hand with --max-total-tokens."
                          % (where, arch, release))
    raise KVPlanError("%s: architectures %s is not one the planner knows, so it cannot tell its attention layout "
                      "(it sizes full-attention GQA/MHA and MLA models: %s). Size it by hand with "
                      "--max-total-tokens, or choose a known model." % (where, arch, _known_short()))


def _known_short():
    return ("Llama, Mistral/Mixtral, Qwen2/Qwen3 (MoE too), DeepSeek-V2/V3/R1, Kimi K2/K2.5/K2.6, Gemma 3, gpt-oss, "
            "Qwen3-Next, Qwen3.5, Nemotron-H, Kimi-Linear, DeepSeek-V3.2")


def markdown():
    """docs/planner.md's table of architectures, from the tables above (a test keeps the two equal)."""
    rows = ["| config.json `architectures[0]` | planned as | SGLang 0.5.23 |", "|---|---|---|"]
    rows += ["| `%s` | one pool, every layer full attention | `%s` |" % (arch, where) for arch, where in KNOWN.items()]
    rows += ["| `%s` | one pool over every layer: 0.5.9-0.5.23 turn its sliding-window split off | `%s` |"
             % (arch, GEMMA3_PLAIN_POOL["0.5.23"]) for arch in sorted(GEMMA3)]
    rows += ["| `%s` | two pools, full and sliding-window (`sliding.py`), from 0.5.11 | `%s` |" % (arch, where)
             for arch, (_family, where) in SLIDING.items()]
    rows += ["| `%s` | a KV pool of its full-attention layers and a state pool of request slots (`linear.py`), "
             "from 0.5.13 | `%s` |" % (arch, where) for arch, (_family, where) in LINEAR.items()]
    rows += ["| `%s` | one MLA pool with its sparse-attention indexer keys, in the KV dtype and page 64 the release "
             "picks (`sparse.py`), from 0.5.15 | `%s` |" % (arch, where) for arch, (_family, where) in SPARSE.items()]
    return "\n".join(rows) + "\n"
