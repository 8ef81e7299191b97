"""How the impersonated release resolves the attention layout before anything loads, for the TEST DOUBLE:
DP attention, the default attention backend on the simulated GPU, and the page size that backend forces.
Written from the wheels, independently of the repository's planner (lib/sglang_kvplan/pages.py).

DP attention. 0.5.23 arg_groups/parallel_hook.py handle_deprecated_dp_attention: `--dp-size N
--enable-dp-attention` becomes attn_dp_size=N, dp_size=1 (when --attn-dp-size was left at 1), before
check_server_args, so a multi-node DP-attention launch passes its "multi-node data-parallel replicas" check.
0.5.9 has no --attn-dp-size: attention DP is dp_size when --enable-dp-attention. Attention TP = tp / attn DP.

Backend and page, on SM100 (the simulated GPU's compute_cap major 10; is_sm100_supported, 0.5.9
utils/common.py device_capability_majors=[10]) with no --attention-backend:
- GQA/MHA: trtllm_mha (0.5.9 server_args.py _handle_attention_backend_compatibility; 0.5.23
  arg_groups/model_override_base.py), unless a speculative draft tree (eagle_topk > 1, or, in 0.5.9, a draft
  with --speculative-eagle-topk unset); 0.5.23 picks fa4 instead for asymmetric K/V (v_head_dim != head_dim).
  trtllm_mha keeps page sizes 16/32/64 (0.5.9) or 16/32/64/128 (0.5.23) and turns any other into 64; fa4 on
  SM100 forces 128 (0.5.23 arg_groups/overrides.py _fa4_page_constraint).
- MLA of the DeepSeek family (0.5.9 server_args.py model_arch list; 0.5.23 model_overrides/deepseek_v2.py):
  trtllm_mla, which keeps 32/64 and turns any other page into 64; other MLA models get flashinfer (page kept).
- The Qwen3-Next family (hybrid Gated DeltaNet): triton by its own override, page kept (0.5.13 server_args.py,
  0.5.23 arg_groups/model_overrides/qwen3_5.py:17-50 `sm100_default_attn_backend = "triton"`; the real 0.5.23 and
  0.5.15 resolvers pick it on a B200 with the defaults).
- Nemotron-H: its own override's pick with no draft, flashinfer (page kept) up to 0.5.18, trtllm_mha from 0.5.19
  (0.5.15 arg_groups/overrides.py:781, 0.5.23 arg_groups/model_overrides/nemotron_h.py:148; rules.json
  nemotron_h_sm100).
Elsewhere (SM90, SM120, ...) the page asked for is kept.
"""

from sglang import _double_gpu as sim

HYBRID_GDN = ("Qwen3NextForCausalLM", "Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForConditionalGeneration")

DEEPSEEK_FAMILY = {
    "0.5.9": ("DeepseekV3ForCausalLM", "KimiK25ForConditionalGeneration", "MistralLarge3ForCausalLM",
              "PixtralForConditionalGeneration", "GlmMoeDsaForCausalLM"),
    "0.5.23": ("DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "KimiK25ForConditionalGeneration",
               "MistralLarge3ForCausalLM", "PixtralForConditionalGeneration", "GlmMoeDsaForCausalLM",
               "Glm5NextForConditionalGeneration", "HYV4ForCausalLM", "HYV4ForCausalLMNextN",
               "LongcatFlashForCausalLM", "LongcatFlashForCausalLMNextN", "Dots3NoteForCausalLM"),
}


def resolve_dp_attention(args, has_attn_dp_size):
    """0.5.22+ handle_deprecated_dp_attention (releases whose parser has --attn-dp-size); older ones keep the
    flags as given."""
    if has_attn_dp_size and args.enable_dp_attention:
        if (args.attn_dp_size or 1) == 1:
            args.attn_dp_size, args.dp_size = args.dp_size, 1
        args.enable_dp_attention = False
    return args


def attn_dp_size(args):
    return args.attn_dp_size or (args.dp_size if args.enable_dp_attention else 1)


def _is_sm100(gpu):
    cap = str(gpu.get("compute_cap") or "12.0")
    return cap.split(".")[0] == "10"


def default_backend(args, config, gpu, release, rules):
    """The attention backend the release picks when none is given, or None where the double does not need it.
    The SM100 GQA default is decided before the speculative parameters are resolved, so an EAGLE draft with
    --speculative-eagle-topk unset does not get trtllm_mha in any release (0.5.12 server_args.py:2610-2620 runs
    at :936, before :976; 0.5.23 arg_groups/model_override_base.py:311-325, pipeline.py:242 before :306), nor
    DFLASH before 0.5.23 (rules.json sm100_default_with_dflash); fa4 for asymmetric K/V from 0.5.17 (rules.json
    forced_pages sm100_mha_asymmetric_kv)."""
    if args.attention_backend is not None or not _is_sm100(gpu):
        return args.attention_backend
    cfg = sim.language_config(config)
    if (config.get("architectures") or [None])[0] in HYBRID_GDN and not args.speculative_algorithm:
        return "triton"
    if (config.get("architectures") or [None])[0] == "NemotronHForCausalLM" and not args.speculative_algorithm \
            and rules.get("nemotron_h_sm100"):
        return rules["nemotron_h_sm100"]
    if cfg.get("kv_lora_rank"):
        arch = (config.get("architectures") or [None])[0]
        return "trtllm_mla" if arch in DEEPSEEK_FAMILY[release] else "flashinfer"
    topk = args.speculative_eagle_topk
    if args.speculative_algorithm and (topk or 0) > 1:
        return "flashinfer"
    dflash = (args.speculative_algorithm or "").upper() == "DFLASH"
    if args.speculative_algorithm and topk is None and not (dflash and rules.get("sm100_default_with_dflash")):
        return "flashinfer"
    _, head_dim, v_head_dim = sim.mha_geometry(config)
    if head_dim != v_head_dim and "sm100_mha_asymmetric_kv" in rules["forced_pages"]:
        return "fa4"
    return "trtllm_mha"


def dflash_draft_backend(target_backend, draft_config, gpu, rules):
    """The DFLASH draft's backend (0.5.23 arg_groups/speculative_hook.py:930-986): the target's; trtllm_mha only
    for an all-sliding or `is_causal: true` drafter, else the fallback, fa4 on SM100 where the release says so
    (rules.json dflash_draft_backend 'sm100_fa4'), flashinfer before."""
    if target_backend != "trtllm_mha":
        return target_backend
    cfg = sim.language_config(draft_config)
    types = cfg.get("layer_types") or (draft_config.get("dflash_config") or {}).get("layer_types")
    sliding = isinstance(types, list) and len(types) == cfg.get("num_hidden_layers") and set(types) == {
        "sliding_attention"}
    if sliding or cfg.get("is_causal") is True:
        return target_backend
    return "fa4" if rules.get("dflash_draft_backend") == "sm100_fa4" and _is_sm100(gpu) else "flashinfer"


def _resolve_dsa(args, gpu, log):
    """DeepSeek-V3.2 (0.5.15+, rules.json dsa_layout; 0.5.23 arg_groups/overrides.py _dsa_kv_cache_dtype_default,
    _dsa_split_backend_resolution, model_overrides/deepseek_v2.py): the dsa backend, page 64, 'auto' KV as fp8_e4m3
    from SM100 and bfloat16 below, and the DSA kernels that decide the row's layout."""
    major = int(str(gpu.get("compute_cap") or "12.0").split(".")[0])
    log("Use dsa attention backend for DeepSeek with DSA.")
    log("Setting page size to 64 for DeepSeek DSA.")
    if args.kv_cache_dtype == "auto":
        args.kv_cache_dtype = "fp8_e4m3" if major >= 10 else "bfloat16"
        log("Setting KV cache dtype to %s for DeepSeek DSA on SM%d device." % (args.kv_cache_dtype, major))
    if args.kv_cache_dtype == "bf16":
        args.kv_cache_dtype = "bfloat16"
    if args.kv_cache_dtype == "fp8_e4m3":
        args.dsa_prefill_backend = args.dsa_decode_backend = "trtllm" if major >= 10 else "flashmla_kv"
    else:
        args.dsa_prefill_backend, args.dsa_decode_backend = "flashmla_sparse", "trtllm" if major >= 10 else "fa3"
    args.page_size = 64
    return "dsa"


def resolve_page_size(args, config, gpu, release, log, rules):
    """Set args.page_size as the backend forces it, with the release's warning; returns the backend."""
    if (config.get("architectures") or [None])[0] == "DeepseekV32ForCausalLM" and rules.get("dsa_layout") \
            and args.attention_backend is None:
        return _resolve_dsa(args, gpu, log)
    backend = default_backend(args, config, gpu, release, rules)
    keeps = tuple(rules["forced_pages"]["sm100_mha"]["keeps"])  # 16/32/64, and 128 from 0.5.17
    page = args.page_size or 1
    forced = page
    if backend == "trtllm_mla" and page not in (32, 64):
        forced = 64
        log("TensorRT-LLM MLA only supports page_size of 32 or 64, changing page_size from %d to 64." % page)
    elif backend == "trtllm_mha" and page not in keeps:
        forced = 64
        log("TensorRT-LLM MHA only supports page_size of %s or %d, changing page_size from %d to 64."
            % (", ".join(str(k) for k in keeps[:-1]), keeps[-1], page))
    elif backend == "fa4" and _is_sm100(gpu) and not sim.language_config(config).get("kv_lora_rank"):
        forced = 128
        log("FA4 backend only supports page size 128 for non-MLA model architectures, changing page_size from "
            "%d to 128." % page)
    args.page_size = forced
    return backend
