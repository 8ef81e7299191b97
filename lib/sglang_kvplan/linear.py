"""A hybrid linear-attention model's state pool (Qwen3-Next, Qwen3.5, Nemotron-H, Kimi-Linear), as SGLang 0.5.13+
sizes it.

Its Gated DeltaNet (Mamba2, KDA) layers keep no KV: each request holds one state per layer in a slot of a second
pool, sized before the KV pool from the same rest (0.5.23 mem_cache/kv_cache_configurator.py
_handle_max_mamba_cache :3230-3408; 0.5.15 model_executor/model_runner_kv_cache_mixin.py handle_max_mamba_cache;
releases/rules.json `state_pool`, read from each wheel):

    rest   = A - P x (1 - f)                                 (GiB, as for any model)
    budget = rest x m / (1 + m)                              (m = --mamba-full-memory-ratio, rules.json's 0.9)
    K      = int((budget - s) // s), state = (K + 1) x s     ('padded_slot', 0.5.17+: a padding slot)
    K      = int(budget // s),       state = K x s           ('plain', 0.5.13-0.5.16)
    pool   = floor((rest - state) / cell) // page x page     (the cell over the full-attention layers only:
                                                              0.5.23 model_executor/pool_configurator.py:227-236)

s is one request's state on one GPU: per state layer, the conv state (conv_dim / TP) x (kernel - 1) in bf16 and
the recurrent state (heads / TP) x head_dim x state_size in fp32 (configs/mamba_utils.py Mamba2StateShape.create
and mamba_cache_per_req, with conv_dim = intermediate + 2 x n_groups x state_size; each family's fields:
configs/qwen3_next.py and configs/nemotron_h.py mamba2_cache_params). A request holds up to 3 + 2 slots
(MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO and the extra buffer's tracking slots with the overlap schedule,
0.5.13-0.5.23), so --max-running-requests is planned at most K // 5: SGLang caps it at K // its own ratio
otherwise (resolve_max_num_reqs).

The state takes its share of the rest whatever --max-total-tokens says, so a pin frees only KV: the planner plans
these models unpinned (pool_policy fill or fraction). Not modelled, so refused by name: a speculative draft (it
reserves intermediate states per draft token), pipeline stages, DP attention, --disable-radix-cache and
--max-mamba-cache-size (the state pool then follows those instead), --mamba-ssm-dtype and mamba_ssm_dtype in the
checkpoint other than float32.
"""

import math

from .geometry import architecture, attn_tp_size, config_bound
from .kv_cell import own_cell
from .spec import SM100_MAJOR, KVPlanError, gpu_major

# The architectures this family sizes (families.py): architectures[0] -> (the model family, the SGLang 0.5.23
# EntryClass that serves it). A state pool of request slots beside the KV pool of the full-attention layers (0.5.23
# configs/hybrid_arch.py hybrid_gdn_config; mem_cache/kv_cache_configurator.py).
ARCHITECTURES = {
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
POOL_CLASSES = ("linear",)  # the class of releases/architectures.json its architectures carry
OWN_LAYOUT_KEYS = True  # layer_types, full_attention_interval, the Mamba keys are this family's (model.py)
PLANNED_AS = ("a KV pool of its full-attention layers and a state pool of request slots (`linear.py`), "
              "from 0.5.13")  # docs/planner.md's table

GIB = 1 << 30
SLOTS_PER_REQUEST = 5  # 3 + the extra buffer's 2 tracking slots with the overlap schedule (the most a request holds)
CONV_BYTES, STATE_BYTES = 2, 4  # bf16 conv state (SGLANG_MAMBA_CONV_DTYPE's default), fp32 recurrent state
# Each family's fields, and how they map onto SGLang's Mamba2StateShape.create(intermediate_size, n_groups,
# num_heads, head_dim, state_size, conv_kernel): Qwen3-Next's configs/qwen3_next.py and Nemotron-H's
# configs/nemotron_h.py mamba2_cache_params.
_GDN = {"intermediate": ("linear_value_head_dim", "linear_num_value_heads"), "n_groups": "linear_num_key_heads",
        "num_heads": "linear_num_value_heads", "head_dim": "linear_value_head_dim",
        "state_size": "linear_key_head_dim", "conv_kernel": "linear_conv_kernel_dim"}
_MAMBA2 = {"intermediate": ("mamba_head_dim", "mamba_num_heads"), "n_groups": "n_groups",
           "num_heads": "mamba_num_heads", "head_dim": "mamba_head_dim", "state_size": "ssm_state_size",
           "conv_kernel": "conv_kernel"}
# Kimi-Linear's KDA layers (configs/kimi_linear.py mamba2_cache_params, KimiLinearStateShape.create in
# configs/mamba_utils.py): conv (K - 1) x (q, k, v: 3 x heads x head_dim) and a (heads, head_dim, head_dim) state, the
# same shapes as Mamba2's with intermediate = heads x head_dim, n_groups = heads, state_size = head_dim; the fields
# live under linear_attn_config
_KDA = {"intermediate": ("head_dim", "num_heads"), "n_groups": "num_heads", "num_heads": "num_heads",
        "head_dim": "head_dim", "state_size": "head_dim", "conv_kernel": "short_conv_kernel_size"}
# Nemotron-H's layer letters (configs/nemotron_h.py _pattern_to_list): Mamba2, attention, MLP, MoE
_PATTERN = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}


def _positive(cfg, name):
    value = cfg.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise KVPlanError("model_config: %r must be a positive whole number in this hybrid linear-attention model's "
                          "config.json, got %r. Stage the checkpoint's config.json again." % (name, value))
    if value > config_bound(name):
        raise KVPlanError("model_config: %r is %s in this hybrid linear-attention model's config.json, more than any "
                          "model has (at most %s): the file is damaged. Stage the checkpoint's config.json again."
                          % (name, repr(value)[:20], format(config_bound(name), ",")))
    return value


def _family(arch):
    return ARCHITECTURES[arch][0].split()[0]


def _fields_of(arch, cfg):
    """(the family's field map, the dict that holds its fields)."""
    family = _family(arch)
    if family == "Kimi-Linear":
        sub = cfg.get("linear_attn_config")
        if not isinstance(sub, dict):
            raise KVPlanError("model_config: Kimi-Linear's linear_attn_config must be a mapping in config.json, got "
                              "%r. Stage the checkpoint's config.json again." % (sub,))
        return _KDA, sub
    return (_MAMBA2 if family == "Nemotron-H" else _GDN), cfg


def _kinds(arch, cfg):
    """(full-attention layers, state layers) as the release counts them."""
    if _family(arch) == "Kimi-Linear":
        # layer l (0-based) is KDA when l + 1 is in linear_attn_config's kda_layers (configs/kimi_linear.py)
        layers, kda = _positive(cfg, "num_hidden_layers"), cfg["linear_attn_config"].get("kda_layers")
        if not isinstance(kda, list) or not all(isinstance(n, int) and not isinstance(n, bool) for n in kda):
            raise KVPlanError("model_config: Kimi-Linear's linear_attn_config.kda_layers must list the KDA layers "
                              "(1-based), got %r. Stage the checkpoint's config.json again." % (kda,))
        linear = sum(1 for layer in range(layers) if layer + 1 in kda)
        return layers - linear, linear
    if _family(arch) == "Nemotron-H":
        # layers_block_type, else the hybrid_override_pattern's letters (configs/nemotron_h.py)
        kinds = cfg.get("layers_block_type")
        if kinds is None and isinstance(cfg.get("hybrid_override_pattern"), str):
            kinds = [_PATTERN.get(letter, letter) for letter in cfg["hybrid_override_pattern"]]
        if not isinstance(kinds, list) or not kinds or not set(kinds) <= set(_PATTERN.values()):
            raise KVPlanError("model_config: Nemotron-H's hybrid_override_pattern (letters %s) or layers_block_type "
                              "must list every layer, got %r. Stage the checkpoint's config.json again."
                              % ("".join(_PATTERN), cfg.get("hybrid_override_pattern", cfg.get("layers_block_type"))))
        return kinds.count("attention"), kinds.count("mamba")
    # Qwen3-Next's layers_block_type (configs/qwen3_next.py): layer l is full attention when (l + 1) % interval == 0
    layers, interval = _positive(cfg, "num_hidden_layers"), _positive(cfg, "full_attention_interval")
    full = sum(1 for layer in range(layers) if (layer + 1) % interval == 0)
    return full, layers - full


def layout(config):
    """{full, linear: layer counts, and the state's geometry as Mamba2StateShape.create takes it} for an
    architecture of this family (ARCHITECTURES), else None."""
    arch = architecture(config)
    if arch not in ARCHITECTURES:
        return None
    cfg = _text(config)
    fields, holder = _fields_of(arch, cfg)
    out = {key: _positive(holder, name) for key, name in fields.items() if key != "intermediate"}
    out["intermediate"] = _positive(holder, fields["intermediate"][0]) * _positive(holder, fields["intermediate"][1])
    out["fields"] = fields
    if out["conv_kernel"] < 2:
        raise KVPlanError("model_config: %s %d keeps no conv state; stage the checkpoint's config.json again."
                          % (fields["conv_kernel"], out["conv_kernel"]))
    out["full"], out["linear"] = _kinds(arch, cfg)
    if not out["full"] or not out["linear"]:
        raise KVPlanError("model_config: its layers are %d full-attention and %d linear layers; the planner sizes a "
                          "model with both." % (out["full"], out["linear"]))
    return out


def check_release(_arch, _release, _where="model_config"):
    """Nothing before the config is checked: the release's rules for this family are check's, with the rest."""


def claims(config):
    """True for an architecture of this family (damaged state fields are refused by name)."""
    return layout(config) is not None


def kv_cell(spec, elem):
    """KV bytes per token on one GPU: only the full-attention layers hold KV (kv_cell.py's formula over them)."""
    return own_cell(spec["model_config"], elem, attn_tp_size(spec), layout(spec["model_config"])["full"])


def describe(spec, dtype):
    """The cell's words: the full layers' KV, the linear layers' state beside it."""
    geo = layout(spec["model_config"])
    return ("%s GQA KV of the %d full-attention layers (the %d linear-attention layers keep a state per request "
            "instead), heads split over attention TP" % (dtype, geo["full"], geo["linear"]))


# The Qwen3-Next family gets triton on SM100 from its own override, which keeps the page (0.5.23
# arg_groups/model_overrides/qwen3_5.py:17-50, registered for these three; 0.5.13+ alike). Nemotron-H's own override
# picks flashinfer there up to 0.5.18, which keeps the page too, and trtllm_mha from 0.5.19, which forces its own
# (rules.json nemotron_h_sm100, read from each wheel; pages.py). The real 0.5.23 and 0.5.15 resolvers agree on a B200.
# Kimi-Linear's MLA layers get the release's default MLA backend, flashinfer on SM100 (0.5.10-0.5.23: the MLA branch of
# the default backend; only the DeepSeek family's own override picks trtllm_mla), which keeps the page too.
TRITON_ON_SM100 = ("Qwen3NextForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration")
NEMOTRON_H = "NemotronHForCausalLM"
KEEPS_PAGE = TRITON_ON_SM100 + ("KimiLinearForCausalLM",)


def keeps_page(spec):
    """Whether the release keeps the page asked for on every GPU for this model (its own SM100 override picks a
    backend that keeps it)."""
    arch = architecture(spec["model_config"])
    if arch == NEMOTRON_H:
        return spec["_rules"].get("nemotron_h_sm100") == "flashinfer"
    return arch in KEEPS_PAGE


def _text(config):
    """The language model's config: text_config where the checkpoint nests it (Qwen3.5), else the config."""
    return config["text_config"] if isinstance(config.get("text_config"), dict) else config


def state_bytes(config, attn_tp):
    """One request's state on one GPU, over every state layer (SGLang's mamba_cache_per_req: Mamba2StateShape.create,
    conv_dim = intermediate + 2 x n_groups x state_size, in bf16; the state (heads / TP, head_dim, state_size) in
    fp32)."""
    geo = layout(config)
    conv_dim = geo["intermediate"] + 2 * geo["n_groups"] * geo["state_size"]
    conv = conv_dim // attn_tp * (geo["conv_kernel"] - 1) * CONV_BYTES
    state = geo["num_heads"] // attn_tp * geo["head_dim"] * geo["state_size"] * STATE_BYTES
    return (conv + state) * geo["linear"]


class StatePool:
    """The state pool of one GPU: per-request bytes, --mamba-full-memory-ratio and the release's slot rule."""

    def __init__(self, per_request, ratio, rule):
        self.per_request, self.ratio, self.rule = per_request, ratio, rule

    def slots(self, rest_gib):
        """K, the state slots SGLang makes of `rest_gib` (0 or less: it refuses to start)."""
        budget = rest_gib * self.ratio / (1 + self.ratio) * GIB
        if self.rule == "padded_slot":
            return int((budget - self.per_request) // self.per_request)
        return int(budget // self.per_request)

    def gib(self, rest_gib):
        """GiB the state pool takes out of `rest_gib`; all of it where SGLang would make no slot (no KV pool)."""
        slots = self.slots(rest_gib)
        if slots <= 0:
            return max(rest_gib, 0.0)
        return (slots + (1 if self.rule == "padded_slot" else 0)) * self.per_request / GIB


def state_pool(spec):
    """The spec's StatePool, or None for a model without one."""
    if layout(spec["model_config"]) is None:
        return None
    return StatePool(state_bytes(spec["model_config"], attn_tp_size(spec)), ratio(spec), spec["_rules"]["state_pool"])


def ratio(spec):
    given = spec.get("mamba_full_memory_ratio")
    return given if given is not None else spec["_rules"]["mamba_full_memory_ratio"]


def running_cap(state, rest_gib):
    """The most --max-running-requests SGLang keeps whatever its slot ratio: K // SLOTS_PER_REQUEST."""
    return max(state.slots(rest_gib), 0) // SLOTS_PER_REQUEST


def cap_running(state, rest_gib, running, why):
    """(running, why) within the state slots: SGLang would lower a larger --max-running-requests itself."""
    cap = running_cap(state, rest_gib)
    if cap < 1:
        raise KVPlanError("the state pool holds %d slots, fewer than one request's %d: SGLang would serve nothing. "
                          "Raise --mamba-full-memory-ratio in sglang_extra_args, or use more GPUs."
                          % (max(state.slots(rest_gib), 0), SLOTS_PER_REQUEST))
    if running <= cap:
        return running, why
    return cap, ("the state pool's %s slots over the %d a request may hold (SGLang would lower more itself); %s"
                 % (format(state.slots(rest_gib), ","), SLOTS_PER_REQUEST, why))


def check(spec):
    """Refuse what the state formula does not describe, naming the knob."""
    geo = layout(spec["model_config"])
    if geo is None:
        return
    arch = architecture(spec["model_config"])
    major = gpu_major(spec)
    if spec["_rules"]["state_pool"] is None:
        raise KVPlanError("model_config: %s (architectures %s) keeps a state pool that SGLang %s sizes another way "
                          "than 0.5.13 and newer (%s), which the planner does not model. Use SGLang 0.5.13 or newer, "
                          "or size it by hand with --max-total-tokens."
                          % (ARCHITECTURES[arch][0], arch, spec["_release"], spec["_rules"]["state_pool_source"]))
    refusals = (
        (spec["speculative"], "sglang_speculative: a draft beside a hybrid linear-attention model reserves "
                              "intermediate states per draft token, which the planner does not model; leave "
                              "sglang_speculative empty for this model."),
        (spec["pp_size"] > 1, "sglang_pp_size: pipeline stages split a hybrid linear-attention model's state layers "
                              "unevenly, which the planner does not model; use sglang_pp_size 1."),
        (spec["enable_dp_attention"], "sglang_enable_dp_attention: DP attention splits the state pool per "
                                      "attention-DP worker, which the planner does not model; turn it off for "
                                      "this model."),
        (spec["disable_radix_cache"], "sglang_extra_args: --disable-radix-cache makes SGLang size the state pool "
                                      "from --max-running-requests, which the planner does not model; remove it "
                                      "for this model."),
        (spec["mamba_option"], "sglang_extra_args: %s changes the state pool (its slots or their dtype), which the "
                               "planner does not model; remove it for this model." % spec["mamba_option"]),
        (spec["page_size"] != 1 and arch in TRITON_ON_SM100,
         "sglang_page_size: %d; SGLang picks this model's attention backend, and with it the page, by its own "
         "override on SM100 (0.5.23 arg_groups/model_overrides/qwen3_5.py:17-50), which the planner does not model "
         "past page 1; use sglang_page_size 1." % spec["page_size"]),
        (arch == NEMOTRON_H and spec["_rules"].get("nemotron_h_sm100") is None and major in (None, SM100_MAJOR),
         "sglang_gpu_compute_capability: %s; SGLang %s picks Nemotron-H's attention backend on SM100 (B200, GB200, "
         "B300) by a rule the planner has not read; plan it for another GPU, or use SGLang 0.5.13 or newer."
         % (spec["gpu_compute_capability"] or "not known (it may be SM100)", spec["_release"])),
        (spec["pool_policy"] in ("target", "max"),
         "sglang_pool_policy: %s pins the pool with --max-total-tokens, but a hybrid linear-attention model's state "
         "pool takes its share of the memory whatever the pin, so a pin would not leave the memory it promises; use "
         "fill (the default) or fraction." % spec["pool_policy"]),
    )
    for refused, message in refusals:
        if refused:
            raise KVPlanError(message)
    dtype = str(_text(spec["model_config"]).get("mamba_ssm_dtype") or spec["model_config"].get("mamba_ssm_dtype")
                or "float32")
    if dtype != "float32":
        raise KVPlanError("model_config: mamba_ssm_dtype %r halves the recurrent state, which the planner does not "
                          "model (it sizes float32, SGLang's default); size it by hand with --max-total-tokens."
                          % dtype)
    attn_tp = spec["tp_size"]
    for key in ("n_groups", "num_heads"):
        if geo[key] % attn_tp:
            raise KVPlanError("sglang_tp_size: %d does not divide the model's %s (%d), so SGLang widens the state's "
                              "shards, which the planner does not model; use a divisor of %d."
                              % (attn_tp, geo["fields"][key], geo[key], math.gcd(geo["n_groups"], geo["num_heads"])))


def tradeoff(spec, state, rest_gib, running):
    """The plan's line on the state pool: its slots, its GiB, and what --mamba-full-memory-ratio trades."""
    if state is None:
        return []
    geo = layout(spec["model_config"])
    slots = state.slots(rest_gib)
    return ["state pool: %d linear-attention layers keep %s MiB per request, %s slots (%.2f GiB per GPU, "
            "--mamba-full-memory-ratio %s%s) beside the KV pool of %d full-attention layers; up to %d requests at "
            "once hold their states (a request may take %d slots): a lower ratio buys KV tokens with requests"
            % (geo["linear"], format(round(state.per_request / (1 << 20), 1), ","), format(slots, ","),
               state.gib(rest_gib), state.ratio, "" if spec.get("mamba_full_memory_ratio") is not None else
               ", SGLang %s's default" % spec["_release"], geo["full"], running, SLOTS_PER_REQUEST)]


def kv_rest_before_state(state, kv_rest_gib):
    """The rest a profile had when the KV pool was given `kv_rest_gib` after the state pool took its share: the
    inverse of rest - state.gib(rest), found by fixed-point steps (each closes the gap by m / (1 + m) or better)."""
    rest = kv_rest_gib * (1 + state.ratio)
    for _step in range(60):
        rest = kv_rest_gib + state.gib(rest)
    return rest
