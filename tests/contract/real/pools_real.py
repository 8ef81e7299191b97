"""A sliding-window model's two pools as the REAL release sizes them (run inside driver.py, by the release's python).

After a case's launch resolves, the release's own ModelConfig is built from the resolved arguments (config.json's
layer_types, the window, the KV heads over TP: configs/model_config.py) and its own pool configurator is picked by
its own factory (create_memory_pool_configurator: the sliding-window one, or another where the release would pick
another) and asked for the pools of the memory the plan was made from. Only what a running server learns from its
GPUs and its process group is given by hand, each named below:
  - the KV budget: int((A - P x (1 - f)) x 2**30), the arithmetic of _profile_available_bytes (0.5.23
    mem_cache/kv_cache_configurator.py:2990-3060, 0.5.15 model_executor/model_runner_kv_cache_mixin.py), with P and
    A the plan's (the probe) and f the resolved --mem-fraction-static: the part the 19 real boot logs hold the
    planner to (docs/kv-pool-formula.md);
  - the attention TP width a process group would report (0.5.15 get_attention_tp_size), from the release's own
    compute_dp_attention_world_info; 0.5.22+ reads it from the runtime context the release publishes itself.
The cap --max-total-tokens is then applied by the release's own _apply_token_constraints (and config_from_budget on
0.5.22+), as a boot does.
"""

import types


def kv_dtype(model_config, name):
    import torch

    if name in (None, "auto"):
        return model_config.dtype
    return {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp8_e4m3": torch.float8_e4m3fn,
            "fp8_e5m2": torch.float8_e5m2}[name]


def real_pools(args, values, probe):
    """{full, sliding, configurator} for the resolved launch `args` (values: its resolved fields)."""
    from sglang.srt.configs.model_config import ModelConfig
    from sglang.srt.model_executor import pool_configurator as pc

    def field(name):
        return values[name] if name in values else getattr(args, name)

    model_config = ModelConfig.from_server_args(args)
    if not model_config.is_hybrid_swa:
        return {"full": None, "sliding": None, "configurator": "not hybrid SWA"}
    page = field("page_size") or 1
    budget = int((probe["profile_avail_gib"] - probe["pre_load_avail_gib"] * (1 - field("mem_fraction_static")))
                 * (1 << 30))
    runner = types.SimpleNamespace(
        model_config=model_config, kv_cache_dtype=kv_dtype(model_config, field("kv_cache_dtype")),
        kv_cache_dtype_str=field("kv_cache_dtype"), is_hybrid_swa=True, is_draft_worker=False,
        sliding_window_size=model_config.sliding_window_size, page_size=page, pp_size=field("pp_size"),
        server_args=args, attn_dp_size=1, dp_size=field("dp_size"), fused_entry_bytes=lambda name: None,
        layer_info=types.SimpleNamespace(full_attention_layer_ids=model_config.full_attention_layer_ids,
                                         swa_attention_layer_ids=model_config.swa_attention_layer_ids,
                                         start_layer=0, end_layer=model_config.num_hidden_layers))
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    runner.spec_algorithm = SpeculativeAlgorithm.from_string(field("speculative_algorithm"))
    try:
        from sglang.srt import runtime_context
    except ImportError:
        runtime_context = None
    if runtime_context is not None and hasattr(runtime_context, "publish"):  # 0.5.22+
        from sglang.srt.mem_cache.kv_cache_configurator import KVCacheConfigurator

        runtime_context.publish(args, role="scheduler")
        for name in ("config_from_budget", "_apply_token_constraints"):
            setattr(runner, name, types.MethodType(getattr(KVCacheConfigurator, name), runner))
        config = runner.config_from_budget(budget)
        configurator = pc.create_memory_pool_configurator(runner)
    else:  # 0.5.15: ModelRunner._resolve_memory_pool_config's sizing steps, with the release's own functions
        from sglang.srt.layers.dp_attention import compute_dp_attention_world_info
        from sglang.srt.model_executor.model_runner_kv_cache_mixin import ModelRunnerKVCacheMixin

        attn_tp = compute_dp_attention_world_info(field("enable_dp_attention"), 0, field("tp_size"),
                                                  field("dp_size"))[1]
        pc.get_attention_tp_size = lambda: attn_tp
        runner._apply_token_constraints = types.MethodType(ModelRunnerKVCacheMixin._apply_token_constraints, runner)
        configurator = pc.create_memory_pool_configurator(runner)
        config = configurator.calculate_pool_sizes(budget, page)
        constrained = runner._apply_token_constraints(config.max_total_num_tokens)
        if constrained != config.max_total_num_tokens:
            config = configurator.calculate_pool_sizes_from_max_tokens(constrained, page)
    return {"full": config.full_max_total_num_tokens, "sliding": config.swa_max_total_num_tokens,
            "configurator": type(configurator).__name__, "budget_bytes": budget}
