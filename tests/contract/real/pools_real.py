"""A sliding-window model's two pools as the REAL release sizes them (run inside driver.py, by the release's python).

After a case's launch resolves, the release's own ModelConfig is built from the resolved arguments (config.json's
layer_types, the window, the KV heads over TP: configs/model_config.py) and its own pool configurator is picked by
its own factory (create_memory_pool_configurator: the sliding-window one, or another where the release would pick
another) and asked for the pools of the memory the plan was made from. Only what a running server learns from its
GPUs and its process group is given by hand, each named below:
  - the KV budget: int((A - P x (1 - f)) x 2**30), the arithmetic of _profile_available_bytes (0.5.23
    mem_cache/kv_cache_configurator.py:2990-3060, 0.5.15 model_executor/model_runner_kv_cache_mixin.py), with P and
    A the plan's (the probe: A as the profile starts from it, less what the plan says is loaded or kept before it,
    a draft or 0.5.18+'s multimodal reserve, rules read from the wheels) and f the resolved --mem-fraction-static:
    the part the 19 real boot logs hold the planner to (docs/kv-pool-formula.md);
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

    def field(name):
        return values[name] if name in values else getattr(args, name)

    model_config = ModelConfig.from_server_args(args)
    page = field("page_size") or 1
    rest = probe["profile_avail_gib"] - probe["pre_load_avail_gib"] * (1 - field("mem_fraction_static"))
    if not model_config.is_hybrid_swa:
        return state_pools(args, field, model_config, rest, page)
    budget = int(rest * (1 << 30))
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
    config, configurator = _sized(args, field, runner, budget, page)
    return {"full": config.full_max_total_num_tokens, "sliding": config.swa_max_total_num_tokens,
            "configurator": type(configurator).__name__, "budget_bytes": budget}


def _runner(args, field, model_config, page):
    """The attributes a KV-cache configurator (0.5.22+) or a ModelRunner (0.5.15) reads, from the real config."""
    import types

    from sglang.srt.configs.model_config import AttentionArch
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    runner = types.SimpleNamespace(
        model_config=model_config, kv_cache_dtype=kv_dtype(model_config, field("kv_cache_dtype")),
        kv_cache_dtype_str=field("kv_cache_dtype"), is_hybrid_swa=False, is_draft_worker=False, page_size=page,
        pp_size=field("pp_size"), server_args=args, attn_dp_size=1, dp_size=field("dp_size"),
        fused_entry_bytes=lambda name: None, extra_mamba_cache_bytes_per_req=0,
        # as ModelRunner.__init__ sets it (0.5.23 model_executor/model_runner.py:406, 0.5.15 :414)
        use_mla_backend=model_config.attention_arch == AttentionArch.MLA,
        spec_algorithm=SpeculativeAlgorithm.from_string(field("speculative_algorithm")),
        start_layer=0, end_layer=model_config.num_hidden_layers, num_effective_layers=model_config.num_hidden_layers,
        layer_info=types.SimpleNamespace(start_layer=0, end_layer=model_config.num_hidden_layers,
                                         num_effective_layers=model_config.num_hidden_layers))
    return runner


def _spec_aux(args, runner):
    """The draft's layers as ModelRunner.init_spec_aux_hidden_state resolves them (0.5.23: the configurator reads
    spec_aux_config for an EAGLE-family draft; releases without it read the draft's layers another way)."""
    try:
        from sglang.srt.model_executor.model_runner_components.spec_aux_hidden_state import (
            resolve_spec_aux_hidden_state_config,
        )
    except ImportError:
        return
    runner.spec_aux_config = resolve_spec_aux_hidden_state_config(
        server_args=args, model_config=runner.model_config, spec_algorithm=runner.spec_algorithm,
        is_draft_worker=False)


def _sized(args, field, runner, budget, page, mixin=()):
    """(pool config, configurator) for `budget` bytes, by the release's own steps: 0.5.22+ the runtime context
    published and KVCacheConfigurator.config_from_budget; 0.5.15 ModelRunner._resolve_memory_pool_config's (the
    configurator's pool sizes, then _apply_token_constraints), with `mixin`: more of ModelRunnerKVCacheMixin's
    methods the configurator calls on the runner."""
    from sglang.srt.model_executor import pool_configurator as pc

    try:
        from sglang.srt import runtime_context
    except ImportError:
        runtime_context = None
    if runtime_context is not None and hasattr(runtime_context, "publish"):  # 0.5.22+
        from sglang.srt.mem_cache.kv_cache_configurator import KVCacheConfigurator

        runtime_context.publish(args, role="scheduler")
        if not hasattr(runner, "spec_aux_config"):
            _spec_aux(args, runner)
        for name in ("config_from_budget", "_apply_token_constraints"):
            setattr(runner, name, types.MethodType(getattr(KVCacheConfigurator, name), runner))
        return runner.config_from_budget(budget), pc.create_memory_pool_configurator(runner)
    from sglang.srt.layers.dp_attention import compute_dp_attention_world_info
    from sglang.srt.model_executor.model_runner_kv_cache_mixin import ModelRunnerKVCacheMixin

    attn_tp = compute_dp_attention_world_info(field("enable_dp_attention"), 0, field("tp_size"), field("dp_size"))[1]
    pc.get_attention_tp_size = lambda: attn_tp
    for name in ("_apply_token_constraints",) + tuple(mixin):
        setattr(runner, name, types.MethodType(getattr(ModelRunnerKVCacheMixin, name), runner))
    configurator = pc.create_memory_pool_configurator(runner)
    config = configurator.calculate_pool_sizes(budget, page)
    constrained = runner._apply_token_constraints(config.max_total_num_tokens)
    if constrained != config.max_total_num_tokens:
        config = configurator.calculate_pool_sizes_from_max_tokens(constrained, page)
    return config, configurator


def plain_pools(args, field, runner, rest, page):
    """One pool (DeepSeek-V3.2's MLA rows and indexer keys): the release's own configurator from the same rest
    (0.5.22+ KVCacheConfigurator.config_from_budget, 0.5.15 the configurator with the ModelRunner's own
    calculate_mla_kv_cache_dim), after the release resolved the DSA kernels and the KV dtype."""
    config, configurator = _sized(args, field, runner, int(rest * (1 << 30)), page,
                                  mixin=("calculate_mla_kv_cache_dim",))
    return {"full": config.max_total_num_tokens, "configurator": type(configurator).__name__,
            "kv_cache_dtype": str(runner.kv_cache_dtype).replace("torch.", "")}


def state_pools(args, field, model_config, rest, page):
    """A hybrid linear-attention model: the state slots, the KV pool and the running requests, each by the release's
    own function (0.5.22+ KVCacheConfigurator._handle_max_mamba_cache, config_from_budget, resolve_max_num_reqs;
    0.5.15 ModelRunner handle_max_mamba_cache, its configurator and _resolve_max_num_reqs), from the rest
    A - P x (1 - f) as _profile_available_bytes computes it before it calls them."""
    import types

    from sglang.srt.model_executor import pool_configurator as pc

    runner = _runner(args, field, model_config, page)
    try:
        from sglang.srt.configs.hybrid_arch import mambaish_config
    except ImportError:  # 0.5.15: ModelRunner properties (Mamba2's, Gated DeltaNet's, KDA's)
        from sglang.srt.model_executor.model_runner import ModelRunner

        runner.is_draft_worker = False
        runner.mamba2_config = ModelRunner.mamba2_config.fget(runner)
        runner.hybrid_gdn_config = ModelRunner.hybrid_gdn_config.fget(runner)
        runner.kimi_linear_config = ModelRunner.kimi_linear_config.fget(runner)
        runner.mambaish_config = runner.mamba2_config or runner.hybrid_gdn_config or runner.kimi_linear_config
    else:
        runner.mambaish_config = mambaish_config(model_config)
    if runner.mambaish_config is None:
        return plain_pools(args, field, runner, rest, page)
    try:
        from sglang.srt import runtime_context
    except ImportError:
        runtime_context = None
    if runtime_context is not None and hasattr(runtime_context, "publish"):  # 0.5.22+
        from sglang.srt.configs import hybrid_arch
        from sglang.srt.mem_cache.kv_cache_configurator import KVCacheConfigurator

        runtime_context.publish(args, role="scheduler")
        if not hasattr(runner, "spec_aux_config"):
            _spec_aux(args, runner)
        runner.hybrid_gdn_config = hybrid_arch.hybrid_gdn_config(model_config)
        runner.hybrid_kda_config = hybrid_arch.hybrid_kda_config(model_config)
        for name in ("config_from_budget", "_apply_token_constraints", "_handle_max_mamba_cache",
                     "_calculate_mamba_ratio", "resolve_max_num_reqs"):
            setattr(runner, name, types.MethodType(getattr(KVCacheConfigurator, name), runner))
        kv_rest = runner._handle_max_mamba_cache(rest)
        config = runner.config_from_budget(int(kv_rest * (1 << 30)))
        running = runner.resolve_max_num_reqs(config.max_total_num_tokens)
        slots = runtime_context.get_schedule().max_mamba_cache_size
        configurator = pc.create_memory_pool_configurator(runner)
    else:  # 0.5.15
        from sglang.srt.layers.dp_attention import compute_dp_attention_world_info
        from sglang.srt.model_executor.model_runner_kv_cache_mixin import ModelRunnerKVCacheMixin

        attn_tp = compute_dp_attention_world_info(field("enable_dp_attention"), 0, field("tp_size"),
                                                  field("dp_size"))[1]
        pc.get_attention_tp_size = lambda: attn_tp
        import sglang.srt.configs.qwen3_next as qwen3_next_config

        if hasattr(qwen3_next_config, "get_attention_tp_size"):
            qwen3_next_config.get_attention_tp_size = lambda: attn_tp
        import sglang.srt.layers.dp_attention as dp_attention

        dp_attention.get_attention_tp_size = lambda: attn_tp
        runner.mem_fraction_static = field("mem_fraction_static")
        for name in ("handle_max_mamba_cache", "_apply_token_constraints", "_calculate_mamba_ratio",
                     "_resolve_max_num_reqs"):
            setattr(runner, name, types.MethodType(getattr(ModelRunnerKVCacheMixin, name), runner))
        kv_rest = runner.handle_max_mamba_cache(rest)
        configurator = pc.create_memory_pool_configurator(runner)
        config = configurator.calculate_pool_sizes(int(kv_rest * (1 << 30)), page)
        constrained = runner._apply_token_constraints(config.max_total_num_tokens)
        if constrained != config.max_total_num_tokens:
            config = configurator.calculate_pool_sizes_from_max_tokens(constrained, page)
        running = runner._resolve_max_num_reqs(config.max_total_num_tokens)
        slots = args.max_mamba_cache_size
    return {"full": config.max_total_num_tokens, "state_slots": slots, "running": running,
            "configurator": type(configurator).__name__, "kv_rest_gib": kv_rest}
