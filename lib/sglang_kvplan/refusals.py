"""The speculative x parallel combinations a release refuses at argument resolution, refused by the plan instead.

SGLang checks them when it resolves its arguments, so a plan that passed the check phase would write the unit,
boot, and exit before loading anything. Which combinations each release refuses, and in which words, is read from
its wheel (releases/rules.json `launch_refusals`, tests/contract/extract_rules.py LAUNCH_REFUSALS; each entry has
the sentence and its file:line); docs/sglang-releases.md lists them. Here each kind gets the test of the spec that
triggers it and the fix to name.
"""

from .releases import RULES
from .spec import KVPlanError


def dp_attention_on(spec, how):
    """Whether the release sees DP attention: 'flag' (0.5.9-0.5.21: --enable-dp-attention given) or
    'attn_dp_size' (0.5.22+: the flag becomes --attn-dp-size = --dp-size, on when wider than 1)."""
    if how == "flag":
        return bool(spec["enable_dp_attention"])
    return bool(spec["enable_dp_attention"]) and spec["dp_size"] > 1


def _first_with(kind):
    return next((name for name, rules in RULES.items() if kind in rules["launch_refusals"]), None)


def _algorithm(spec):
    return (spec["speculative"] or {}).get("algorithm")


def _dp_fix(spec, allowed_from=None):
    text = "set sglang_enable_dp_attention: false"
    if allowed_from:
        text += (" (SGLang %s and newer run it with DP attention given --enable-dp-lm-head in sglang_extra_args)"
                 % allowed_from)
    return text


# kind -> (does this spec trigger it, the fix). `on` is the entry's dp_attention_on where it has one.
_TRIGGERS = {
    "dflash_pp": (lambda s, on: _algorithm(s) == "DFLASH" and s["pp_size"] > 1,
                  lambda s: "set sglang_pp_size: 1 (spread the model with sglang_tp_size, or more nodes)"),
    "dflash_dp_attention": (lambda s, on: _algorithm(s) == "DFLASH" and on,
                            lambda s: _dp_fix(s, _first_with("dflash_dp_attention_needs_dp_lm_head"))),
    "dflash_dp_attention_needs_dp_lm_head": (
        lambda s, on: _algorithm(s) == "DFLASH" and on and not s["enable_dp_lm_head"],
        lambda s: "add --enable-dp-lm-head to sglang_extra_args (with SGLANG_ENABLE_DP_SPEC_PREFILL_COORDINATION "
                  "left at 0, its default), or " + _dp_fix(s)),
    "dspark_pp": (lambda s, on: _algorithm(s) == "DSPARK" and s["pp_size"] > 1,
                  lambda s: "set sglang_pp_size: 1"),
    "dspark_dp_attention_needs_dp_lm_head": (
        lambda s, on: _algorithm(s) == "DSPARK" and on and not s["enable_dp_lm_head"],
        lambda s: "add --enable-dp-lm-head to sglang_extra_args, or " + _dp_fix(s)),
    "standalone_dp_attention": (lambda s, on: _algorithm(s) == "STANDALONE" and on, _dp_fix),
    "ngram_dp_attention": (lambda s, on: _algorithm(s) == "NGRAM" and on, _dp_fix),
}


def check_launch(spec):
    """Raise KVPlanError, in the release's own words, for a combination the release refuses at launch."""
    refusals = spec["_rules"].get("launch_refusals") or {}
    for kind, (triggered, fix) in _TRIGGERS.items():
        entry = refusals.get(kind)
        if entry is None:
            continue
        on = dp_attention_on(spec, entry["dp_attention_on"]) if "dp_attention_on" in entry else None
        if triggered(spec, on):
            raise KVPlanError("sglang_speculative: SGLang %s refuses %s when it starts: %r (%s). Fix: %s."
                              % (spec["_release"], entry["refuses"], entry["message"], entry["source"], fix(spec)))
    if _algorithm(spec) == "UNO":
        _refuse_uno(spec, refusals)


def _refuse_uno(spec, refusals):
    """UNO (0.5.20+) reuses the target model with a LoRA adapter: no draft path, --uno-lora-path, TP = PP = 1,
    FA3 attention, no draft KV and num_draft_tokens + 1 reserved slots (0.5.23 arg_groups/speculative_hook.py
    _handle_uno, mem_cache/allocation_sizing.py). The planner does not model it yet, so it is refused by name."""
    said = "; ".join("%r (%s)" % (refusals[k]["message"], refusals[k]["source"])
                     for k in ("uno_draft_path", "uno_lora_path", "uno_tp_pp") if k in refusals)
    raise KVPlanError("sglang_speculative.algorithm: UNO is not planned yet. SGLang %s runs it without a draft model "
                      "(the target with an --uno-lora-path adapter), on one GPU with FA3 attention, and sizes its "
                      "pool without draft KV%s; the planner does not model that pool, and the role renders no "
                      "--uno-lora-path. Use EAGLE3, NEXTN or DFLASH, or no speculative decoding."
                      % (spec["_release"], (": " + said) if said else ""))


def check_lora(spec):
    """LoRA serving (--enable-lora, --lora-paths in sglang_extra_args) allocates the adapters' buffers, and for MoE
    models the LoRA CUDA-graph buffers, before it profiles the pool (0.5.12 model_executor/model_runner.py:730-749,
    0.5.23 :733 maybe_init_lora_manager -> :1450-1464): memory the planner does not model, so a plan for it would
    promise a pool the server does not reach. Refused until it is modelled."""
    if spec.get("lora_option"):
        raise KVPlanError("sglang_extra_args: %s turns on LoRA serving, whose adapter buffers SGLang %s allocates "
                          "before it sizes the KV pool (model_executor/model_runner.py init_lora_manager); the "
                          "planner does not size them yet, so the pool it would promise is not the one the server "
                          "gets. Remove it from sglang_extra_args (serve merged weights instead)."
                          % (spec["lora_option"], spec["_release"]))
