"""From a context target to SGLang's four levers: permission, capacity, ceiling, concurrency.

  --context-length        permission: the longest request the server accepts (the target);
  --max-total-tokens      capacity: the pool, pinned. SGLang allocates min(profiled, cap) tokens and
                          nothing more (0.5.9 init_memory_pool, 0.5.23 _apply_token_constraints), so a
                          pinned pool is exact on the first boot whatever P and A turn out to be;
  --mem-fraction-static   the ceiling the profile may use: high enough that the profile reaches the
                          cap, and such that (1 - f) x P, what is left if it does not, is at most the
                          headroom asked for, never 0.99 or more;
  --max-running-requests  concurrency: how many requests decode at once, side by side in the shared pool
                          (concurrency.py: at least 8, fewer when the headroom cannot afford them).

Pool policies (`pool_policy`): 'fill' (the role's default, fill.py) guarantees the target and gives the pool the
rest of the memory within the headroom rule, exact on the first boot and kept on the next runs; 'target' pins the
pool to the target (for GPUs shared with other work); 'max' pins it to the most the calibrated headroom allows
(applied only from a calibration); 'fraction' is the older scheme, no pin, the smallest fraction whose profile
reaches the target (plus a margin while P and A are estimates).
"""

import math

from . import concurrency, fill, linear, sliding, sparse
from .architectures import fallback_note
from .hand_pool import plan_by_hand
from .linear import state_pool
from .memory import (
    GIB,
    HOPPER_MM_WAVE,
    draft_weights,
    fraction_ceiling,
    memory,
    mm_reserve_gib,
    pool_tokens,
    profile_post,
    transport_override,
)
from .model import (
    cell_bytes,
    context_window,
    describe_cell,
    draft_cell_bytes,
    separate_draft_cell_bytes,
    target_cell_bytes,
)
from .normalize import normalize_spec
from .pages import page_note, pin_granule, pool_page
from .rope import quality_note
from .server import dist_init_addr, parallel_args
from .spec import KVPlanError, load_presets


def _fmt(number):
    return f"{number:,}"


def smallest_fraction(pre, post, cell, page_size, tokens, ceiling, state=None):
    """Smallest 3-decimal fraction whose profiled pool holds `tokens`, or None above `ceiling`."""
    need_gib = tokens * cell / GIB
    # with a state pool the KV gets about rest / (1 + m): start there, the loop below finds the exact step
    need_gib *= 1 + state.ratio if state is not None else 1
    raw = 1 - (post - need_gib) / pre
    fraction = max(math.ceil(round(raw * 1000, 6)) / 1000, 0.001)
    # The float formula can land a hair short after rounding; step up until SGLang's own sum agrees.
    while fraction <= ceiling and pool_tokens(pre, post, fraction, cell, page_size, state) < tokens:
        fraction = round(fraction + 0.001, 3)
    return fraction if fraction <= ceiling else None


def _round_up(tokens, page):
    return math.ceil(tokens / page) * page


def _draft_extra_tokens(spec):
    """Slots a full-length request needs beyond its context while verifying drafts: SGLang widens the
    request table by --speculative-num-draft-tokens (0.5.9 model_runner_kv_cache_mixin.py,
    extra_max_context_len); the pool gets the same slack so one request at full length still fits.
    Unset for DFLASH, 0.5.23 takes the drafter's block size (speculative_hook.py _handle_dflash); unset for
    NGRAM, every release takes 12 (NGRAM_DEFAULT_DRAFT_TOKENS)."""
    spec_cfg = spec["speculative"]
    if not spec_cfg:
        return 0
    if spec_cfg["algorithm"] in EAGLE_FAMILY:
        return eagle_params(spec)[2]
    if spec_cfg["num_draft_tokens"]:
        return spec_cfg["num_draft_tokens"]
    draft = spec_cfg["draft_model_config"] or {}
    if spec_cfg["algorithm"] in ("DFLASH", "DSPARK"):
        return dflash_block_size(draft)
    if spec_cfg["algorithm"] == "NGRAM":
        return NGRAM_DEFAULT_DRAFT_TOKENS
    return 0


# NGRAM with --speculative-num-draft-tokens unset: SGLang sets 12 ("speculative_num_draft_tokens is set to 12 by
# default for ngram speculative decoding": 0.5.23 arg_groups/speculative_hook.py:1314-1323 _handle_ngram, 0.5.15
# :478-483; 0.5.9 server_args.py:2476-2479 takes --speculative-ngram-max-match-window-size, default 12, :485) and
# widens the request table by it like any draft (0.5.23 mem_cache/allocation_sizing.py:105 `4 +
# max_speculative_num_draft_tokens()`, used at kv_cache_configurator.py:1572; 0.5.15 mem_cache/common.py:259, the
# same sum, used at model_executor/model_runner_kv_cache_mixin.py:534). Seen in the real 0.5.23 and 0.5.15 resolvers
# (tests/fixtures/sglang_real/resolver-*.json, cases llama-ngram-*: speculative_num_draft_tokens 12).
NGRAM_DEFAULT_DRAFT_TOKENS = 12


def dflash_block_size(draft):
    """The draft tokens SGLang infers for DFLASH when none is given: the draft config's block_size, from its
    dflash_config when that has the key (even as null), else the top level (0.5.23 speculative/dflash_utils.py
    parse_dflash_draft_config:608-617, _get_dflash_config:445-458; 0.5.11 :333-340), as int(); absent, null,
    not a number or under 1 -> 16, with a warning ("speculative_num_draft_tokens is not set; defaulting to 16
    for DFLASH", or "Failed to infer DFLASH block_size ...": 0.5.11 server_args.py:3383-3420, 0.5.23
    arg_groups/speculative_hook.py:389-420)."""
    nested = draft.get("dflash_config")
    nested = nested if isinstance(nested, dict) else {}
    raw = nested.get("block_size", draft.get("block_size"))
    try:
        block = None if raw is None else int(raw)
    except (TypeError, ValueError, OverflowError):
        block = None
    return block if block is not None and block >= 1 else DFLASH_DEFAULT_BLOCK


DFLASH_DEFAULT_BLOCK = 16
# Algorithms whose --speculative-num-steps/-eagle-topk/-num-draft-tokens SGLang resolves itself (0.5.9
# server_args.py:2355, 2422-2450; 0.5.23 speculative/spec_info.py:262-264 is_eagle() or is_standalone()).
EAGLE_FAMILY = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE")
WIDE_EAGLE_ARCHS = ("LlamaForCausalLM", "Grok1ForCausalLM", "Grok1VForCausalLM")  # (5, 4, 8); every other: (3, 1, 4)


def eagle_params(spec):
    """(num_steps, eagle_topk, num_draft_tokens) as SGLang resolves them: num_steps unset -> all three by architecture,
    (5, 4, 8) for LlamaForCausalLM and Grok-1 (not STANDALONE), else (3, 1, 4) (0.5.9 server_args.py
    auto_choose_speculative_params:5741-5775, 0.5.23 arg_groups/speculative_hook.py:1430-1461, the same in
    every release); topk 1 -> num_draft_tokens = num_steps + 1 (0.5.9 :2443-2450, 0.5.23 :1255-1266)."""
    spec_cfg = spec["speculative"]
    steps, topk, tokens = spec_cfg["num_steps"], spec_cfg["eagle_topk"], spec_cfg["num_draft_tokens"]
    if steps is None and (topk is not None or tokens is not None):
        # SGLang chooses all three only when num_steps is unset, and asserts the other two are unset too
        # (0.5.23 arg_groups/speculative_hook.py:1159-1163, 0.5.9 server_args.py:2422-2426): it would not start.
        raise KVPlanError("sglang_speculative sets %s without num_steps: SGLang then stops at launch (it chooses "
                          "num_steps, eagle_topk and num_draft_tokens together). Set num_steps too, or none of the "
                          "three." % " and ".join(k for k, v in (("eagle_topk", topk), ("num_draft_tokens", tokens))
                                                  if v is not None))
    if steps is None:
        arch = ((spec["model_config"] or {}).get("architectures") or [""])[0]
        wide = spec_cfg["algorithm"] != "STANDALONE" and arch in WIDE_EAGLE_ARCHS
        steps, topk, tokens = (5, 4, 8) if wide else (3, 1, 4)
    if topk == 1 and steps:
        tokens = steps + 1
    return steps, topk, tokens or 0


def _beyond_native_window(spec, window):
    """SGLang refuses a context past the window it derives from the config (rope.py), unless told to extend it."""
    if spec["context_target"] <= window:
        return ""
    scaling = spec["rope_scaling"]
    what = ("the model's native window as sglang_rope_scaling widens it (factor %s x %s = %s tokens)"
            % (scaling["factor"], _fmt(scaling["original_max_position_embeddings"]), _fmt(window)) if scaling
            else "the model's native window (%s tokens, as SGLang derives it from config.json)" % _fmt(window))
    fix = "" if scaling else (", or, where the model card documents a RoPE scaling (YaRN), name it in "
                              "sglang_rope_scaling")
    return ("context_target %s is beyond %s: SGLang refuses it (SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 would "
            "lift its check for any length, and quality past the trained window is not assured). Lower "
            "sglang_context_target to at most %s%s." % (_fmt(spec["context_target"]), what, _fmt(window), fix))


class Budget:
    """Where one GPU's memory goes after the weights load: A = pool + draft extras + headroom."""

    def __init__(self, spec, post, pre=None):
        self.spec = spec
        self.post = post
        self.pre = pre  # P: a state pool's share depends on the fraction's rest (linear.py)
        self.profile_post = profile_post(spec, post)  # what the profile starts from
        self.cell = cell_bytes(spec)
        self.side_cell = separate_draft_cell_bytes(spec)
        self.draft_weights, self.draft_note = draft_weights(spec)
        self.mm_reserve = mm_reserve_gib(spec)  # 0.5.23's multimodal embedding cache, allocated after the pool
        self.state = state_pool(spec)  # a hybrid linear-attention model's state slots, else None

    def rest(self, fraction):
        """What SGLang profiles at `fraction`: A - (1 - f) x P, less what is loaded or kept before it."""
        return self.profile_post - self.pre * (1 - fraction)

    def state_gib(self, fraction):
        """GiB of the state pool at `fraction` (0 without one)."""
        return self.state.gib(self.rest(fraction)) if self.state is not None else 0.0

    def pool(self, fraction):
        """SGLang's unpinned pool at `fraction`."""
        return pool_tokens(self.pre, self.profile_post, fraction, self.cell, pool_page(self.spec), self.state)

    def headroom(self, pool, fraction=None):
        """GiB left outside everything SGLang allocates for `pool` tokens (graphs, activations, NCCL); with a state
        pool, at the fraction that sizes it (its share does not follow the pool)."""
        if self.state is not None and fraction is None:
            raise KVPlanError("planner defect: the headroom of a model with a state pool needs its fraction")
        return (self.post - pool * (self.cell + self.side_cell) / GIB - self.draft_weights - self.mm_reserve
                - self.state_gib(fraction))

    def most_tokens(self, headroom):
        """The largest pool that leaves `headroom` GiB (unpinned where a state pool is sized from the rest)."""
        if self.state is not None:
            return self.pool(fraction_ceiling(self.pre, headroom))
        spare = self.post - self.draft_weights - self.mm_reserve - headroom
        page = pool_page(self.spec)
        return max(int(spare * GIB // (self.cell + self.side_cell)) // page * page, 0)


def _wider(spec):
    """Twice the GPUs, as the fix to suggest: PP doubled, or TP where the release refuses that PP at launch
    (DFLASH needs pp_size 1: refusals.py), so the planner never proposes a plan SGLang would refuse; (None, None)
    when it refuses both. One rule with the printed alternatives (concurrency.wider)."""
    return concurrency.wider(spec)


def _infeasible(spec, budget, pre, required, calibrated, native_note):
    target = spec["context_target"]
    headroom = spec["min_headroom_gib"]
    # The most that fits: within the headroom, and within what the profile reaches at the highest fraction.
    ceiling = pinned_fraction(spec, pre, headroom)
    profiled = pool_tokens(pre, budget.profile_post, ceiling, budget.cell, pool_page(spec), budget.state) \
        if ceiling > 0 else 0
    reserve = headroom
    if spec["pool_policy"] != "fraction" and ceiling > 0:  # as _pinned asks: the floored fraction's reserve too
        reserve = max(headroom, (1 - ceiling) * _upper_memory(spec, pre))
    limit = min(budget.most_tokens(reserve), profiled)
    if spec["pool_policy"] != "fraction":
        limit = limit // pin_granule(spec) * pin_granule(spec)  # the pin is rounded up to the granule
    largest = limit - _draft_extra_tokens(spec)
    fixes = []
    if spec["kv_cache_dtype"] not in ("fp8_e4m3", "fp8_e5m2"):
        fp8 = Budget(dict(spec, kv_cache_dtype="fp8_e4m3"), budget.post, pre)
        at = ceiling if fp8.state is not None else None  # a state pool's share: at the highest fraction
        if fp8.cell < budget.cell and fp8.headroom(required, at) >= headroom and concurrency.launches(fp8.spec) \
                and (fp8.state is None or fp8.pool(ceiling) >= required):
            fixes.append("set sglang_kv_cache_dtype: fp8_e4m3 (%s B/token instead of %s): %s tokens fit, leaving "
                         "%.2f GiB" % (_fmt(fp8.cell), _fmt(budget.cell), _fmt(target), fp8.headroom(required, at)))
    if largest > 0 and concurrency.launches(dict(spec, context_target=largest)):  # each fix passes the launch check
        fixes.append("lower sglang_context_target to at most %s, the most that fits as configured" % _fmt(largest))
    wider_post = pre - (pre - budget.post) / 2
    wider_knob, wider = _wider(spec)
    if wider_knob is not None:  # not when the release refuses twice the GPUs both ways
        fixes.append("use more GPUs: with sglang_%s %d (%d GPUs, weights %s split over twice as many) "
                     "about %s tokens would fit (an estimate; the run measures it)"
                     % (wider_knob, wider[wider_knob], wider["tp_size"] * wider["pp_size"],
                        "and layers" if wider_knob == "pp_size" else "and heads",
                        _fmt(Budget(wider, wider_post, pre).most_tokens(headroom))))
    draft = ""
    if spec["speculative"]:
        draft = " The %s draft takes %s B/token%s and %.2f GiB of weights per GPU." % (
            spec["speculative"]["algorithm"], _fmt(draft_cell_bytes(spec)),
            " inside each token's cell" if not budget.side_cell else " beside the pool", budget.draft_weights)
    raise KVPlanError(
        "context_target %s does not fit: it needs %.2f GiB of KV cache per GPU (%s tokens x %s B/token, %s), "
        "but at most %.2f GiB per GPU is available: %.2f GiB free after the weights (A) less %s "
        "(P %.2f GiB; %s).%s Fixes: %s.%s"
        % (_fmt(target), required * budget.cell / GIB, _fmt(required), _fmt(budget.cell), describe_cell(spec),
           max(budget.post - reserve, 0.0), budget.post,
           ("min_headroom_gib %.2f GiB" % headroom) if reserve <= headroom else (
               "%.2f GiB, SGLang's reserve (1 - f) x P at --mem-fraction-static %.3f (floored to 3 decimals, so a "
               "little over min_headroom_gib %.2f GiB)" % (reserve, ceiling, headroom)), pre,
           ("calibrated" if calibrated else "uncalibrated estimate") + _limited_by(spec, " on node %s, the least free"),
           draft, "; or ".join(fixes),
           " Also: " + native_note if native_note else ""))


def pinned_fraction(spec, pre, headroom):
    """The highest fraction whose reserve (1 - f) x P stays within the headroom even where P is the whole
    GPU: then, whatever P and A really are, the profile reaches the cap whenever the cap physically fits
    with that headroom (profile = A - (1 - f) x P >= A - headroom >= cap x cell)."""
    return fraction_ceiling(_upper_memory(spec, pre), headroom)


def _pinned(spec, pre, post, calibrated, budget, required):
    """Policies 'target' and 'max': (cap, fraction), the pool pinned with --max-total-tokens and the
    fraction a ceiling; None when the profile at that ceiling would not reach the cap."""
    fraction = pinned_fraction(spec, pre, spec["min_headroom_gib"])
    if fraction <= 0:
        return None
    profiled = pool_tokens(pre, budget.profile_post, fraction, budget.cell, pool_page(spec))
    # The fraction is floored to 3 decimals, so SGLang's reserve (1 - f) x P can pass the headroom by up to
    # 0.001 x the GPU (0.18 GiB on a B200): the pin must also leave that, so the profile reaches it for any P
    # up to the whole GPU (docs/kv-pool-formula.md, claim (e)).
    reserve = max(spec["min_headroom_gib"], (1 - fraction) * _upper_memory(spec, pre))
    cap = required
    if spec["pool_policy"] == "max" and calibrated:
        cap = max(min(budget.most_tokens(reserve), profiled), required)
    return (cap, fraction) if profiled >= cap and budget.headroom(cap) >= reserve - 1e-9 else None


def _upper_memory(spec, pre):
    return max(pre, spec["gpu_memory_mib"] / 1024 if spec["gpu_memory_mib"] else 0.0)


def plan(raw_spec):
    """The flags for spec['context_target'], with the predicted pool and how it was reached."""
    spec = normalize_spec(raw_spec)
    target = spec["context_target"]
    if target is None:
        raise KVPlanError("spec key 'context_target' (group_vars sglang_context_target) is needed "
                          "for a plan: the longest prompt + completion, in tokens, one request may use.")
    release = spec["_release"]
    if spec["max_total_tokens"] is not None:  # a pool sized by hand: the cell is not the planner's (hand_pool.py)
        pre, post, calibrated, assumptions = memory(spec)
        return plan_by_hand(spec, pre, post, calibrated, assumptions, _hand_args)
    pre, post, calibrated, assumptions = memory(spec)
    budget = Budget(spec, post, pre)
    page = pool_page(spec)  # the page SGLang will really use (pages.py), which floors the pool
    window, override = context_window(spec)  # the model's window, or the one sglang_rope_scaling gives it
    native_note = _beyond_native_window(spec, window)
    needed = _round_up(target + _draft_extra_tokens(spec), page)
    if spec["pool_policy"] != "fraction":
        needed = _round_up(needed, pin_granule(spec))
    headroom_min = spec["min_headroom_gib"]

    cap = None
    filled = fill.filled(spec, pre, budget, needed, calibrated, _draft_extra_tokens(spec)) \
        if spec["pool_policy"] == "fill" else {}
    if filled:
        assumptions.append(filled["note"])
    if "fraction" in filled:
        fraction, cap, pool, required = filled["fraction"], filled["cap"], filled["pool"], needed
    elif spec["pool_policy"] == "fraction":
        margin = 0.0 if calibrated else spec["uncalibrated_margin"]
        required = _round_up(math.ceil(round(needed * (1 + margin), 6)), page)
        post_p = budget.profile_post
        fraction = smallest_fraction(pre, post_p, budget.cell, page, required, fraction_ceiling(pre, headroom_min),
                                     budget.state)
        if fraction is None or budget.headroom(budget.pool(fraction), fraction) < headroom_min:
            _infeasible(spec, budget, pre, required, calibrated, native_note)
        pool = budget.pool(fraction)
        if not calibrated:
            assumptions.append("uncalibrated_margin %.2f: the pool is planned for %s tokens, not %s"
                               % (margin, _fmt(required), _fmt(needed)))
    else:
        required = needed
        fallback = dict(spec, pool_policy="target") if spec["pool_policy"] == "fill" else spec
        if budget.headroom(required) < headroom_min:
            _infeasible(spec, budget, pre, required, calibrated, native_note)
        pinned = _pinned(fallback, pre, post, calibrated, budget, required)
        if pinned is None:
            _infeasible(spec, budget, pre, required, calibrated, native_note)
        cap, fraction = pinned
        profiled = pool_tokens(pre, budget.profile_post, fraction, budget.cell, page)
        pool = min(profiled, cap)
        if spec["pool_policy"] == "max" and not calibrated:
            assumptions.append("pool_policy max applies from a calibration: this first plan pins the pool to the "
                               "target, and the next run (with P and A measured) widens it")
    if native_note:
        raise KVPlanError(native_note)
    if budget.draft_note:
        assumptions.append(budget.draft_note)
    if page_note(spec):
        assumptions.append(page_note(spec))
    if fallback_note(spec["model_config"], release):
        assumptions.append(fallback_note(spec["model_config"], release))
    if sliding.layout(spec["model_config"]):  # the second pool must admit a request (the trade-off says it)
        sliding.check_pool(spec, pool, page)
    if spec["pool_rules"] is not None:
        assumptions.append("sglang_pool_rules %s: the pool is sized by SGLang %s's rules (releases/rules.json) for "
                           "sglang_version %s, as asked; check the first boot's pool against the plan"
                           % (spec["pool_rules"], release, spec["version"] or "(unset)"))

    left = budget.headroom(pool, fraction)
    draft_tokens = _draft_extra_tokens(spec)
    # An unpinned pool's headroom is (1 - f) x P: the concurrency is afforded from the least P may be (fill.py).
    running, running_why = concurrency.running_requests(
        spec, pool, min(left, filled.get("sure_headroom") or left), draft_tokens)
    if budget.state is not None:  # each request holds state slots: SGLang caps the requests by them (linear.py)
        running, running_why = linear.cap_running(budget.state, budget.rest(fraction), running, running_why)
    if filled.get("running"):
        running, running_why = filled["running"], "as the boot this plan keeps ran it (the same pool and target)"
    running, running_why = _override_lines(spec, running, running_why, assumptions)
    per_table = max(running // concurrency.attn_dp(spec), 1)
    parts = concurrency.headroom_parts(spec, per_table, left, draft_tokens)
    args = parallel_args(spec) + ["--context-length", str(target)]
    if cap is not None:
        args += ["--max-total-tokens", str(cap)]
    args += ["--mem-fraction-static", "%.3f" % fraction, "--max-running-requests", str(running)]
    # DeepSeek-V3.2's 'auto' follows the GPU (sparse.py): the plan names the dtype it sized the pool for
    kv_dtype = sparse.kv_dtype(spec) if sparse.is_sparse(spec["model_config"]) else spec["kv_cache_dtype"]
    if kv_dtype != "auto":
        args += ["--kv-cache-dtype", kv_dtype]
    if spec["page_size"] != 1:
        args += ["--page-size", str(spec["page_size"])]
    args += speculative_args(spec) + model_args(spec) + node_args(spec)
    if override:
        args += ["--json-model-override-args", override]
        assumptions.append(quality_note(spec["rope_scaling"]))
    if calibrated:
        basis = "calibrated (P %.3f GiB, A %.3f GiB)" % (pre, post)
    else:
        basis = "estimated (P %.2f GiB, A %.2f GiB)" % (pre, post)
    pinned_text = "pinned by --max-total-tokens %s, " % _fmt(cap) if cap is not None else ""
    result = {
        "context_length": target,
        "mem_fraction_static": fraction,
        "max_total_tokens": cap,
        "max_running_requests": running,
        "running_requests_reason": running_why,
        "headroom_parts": parts,
        "tradeoff": concurrency.tradeoff(spec, pool, per_table, running_why, parts, concurrency.alternatives(
            spec, Budget, budget, pool, target, headroom_min, pre)) + fill.tradeoff(filled, pool, needed, budget.cell)
        + sliding.tradeoff(spec, pool, page)
        + linear.tradeoff(spec, budget.state, budget.rest(fraction), running) + sparse.tradeoff(spec),
        "predicted_pool_tokens": pool,
        "required_pool_tokens": required,
        "headroom_gib": round(left, 3),
        "reserved_gib": round((1 - fraction) * pre, 3),
        "kv_bytes_per_token": budget.cell,
        "target_kv_bytes_per_token": target_cell_bytes(spec),
        "draft_kv_bytes_per_token": draft_cell_bytes(spec) if spec["speculative"] else 0,
        "draft_weights_gib": round(budget.draft_weights, 3),
        "kv_cache_gib": round(pool * budget.cell / GIB, 3),
        "calibrated": calibrated,
        "pool_policy": spec["pool_policy"],
        "release_rules": release,
        "pre_load_avail_gib": round(pre, 3),
        "post_load_avail_gib": round(post, 3),
        "assumptions": assumptions,
        "args": args,
        "explanation": "target %s -> pool %s tokens (%s--mem-fraction-static %.3f), headroom %.1f GiB, %s%s"
                       % (_fmt(target), _fmt(pool), pinned_text, fraction, left, basis,
                          _limited_by(spec, ", limited by node %s")),
        # What the flags alone say, for files on the host: no measured number, so a run that only refines the
        # calibration rewrites (and restarts) nothing.
        "flags_summary": "context %s, %s--mem-fraction-static %.3f, %d running request(s)%s"
                         % (_fmt(target), ("pool pinned at %s tokens, " % _fmt(cap)) if cap is not None else "",
                            fraction, running,
                            (", node %d of %d" % (spec["node_rank"], spec["nnodes"])) if spec["nnodes"] > 1 else ""),
    }
    if sliding.layout(spec["model_config"]):
        result["sliding_window_pool_tokens"] = sliding.sliding_tokens(spec, pool, page)
    if sparse.is_sparse(spec["model_config"]):
        result["sparse_kv_cache_dtype"] = kv_dtype
    if budget.state is not None:
        result.update(state_slots=budget.state.slots(budget.rest(fraction)),
                      state_gib=round(budget.state_gib(fraction), 3))
    if spec["nnodes"] > 1:
        # Only for a server across nodes, so a one-node plan stays the dict it always was.
        result.update(nnodes=spec["nnodes"], node_rank=spec["node_rank"], limiting_node=spec["limiting_node"])
    return result


def _hand_args(spec, target, cap, fraction, running):
    """The launch flags of a hand-set pool (hand_pool.py): the pin, the fraction, and the flags beside the pool."""
    args = parallel_args(spec) + ["--context-length", str(target), "--max-total-tokens", str(cap),
                                  "--mem-fraction-static", "%.3f" % fraction, "--max-running-requests", str(running)]
    if spec["kv_cache_dtype"] != "auto":
        args += ["--kv-cache-dtype", spec["kv_cache_dtype"]]
    if spec["page_size"] != 1:
        args += ["--page-size", str(spec["page_size"])]
    return args + speculative_args(spec) + model_args(spec) + node_args(spec)


def _override_lines(spec, running, why, assumptions):
    """The release's model and draft overrides that change memory or the running requests, as plan lines; the
    running requests kept below the Qwen3-VL wave at which the reserve planned would grow (memory.py)."""
    where = transport_override(spec)
    if where is not None:
        if spec["max_running_requests"] is None and running >= HOPPER_MM_WAVE:
            running, why = HOPPER_MM_WAVE - 1, ("%d: at %d or more SGLang keeps 3 GiB of feature pools for this "
                                                "model (%s), not the 1 GiB planned" % (HOPPER_MM_WAVE - 1,
                                                                                       HOPPER_MM_WAVE, where))
        assumptions.append("SGLang %s's model override (%s) turns the cuda_ipc feature transport on for this model "
                           "on a Hopper GPU of 60 GiB or more: %.0f GiB of the KV budget is kept for its feature "
                           "pools (its embedding cache off)" % (spec["_release"], where, mm_reserve_gib(spec)))
    if spec["speculative"] and spec["speculative"]["algorithm"] == "NEXTN":
        assumptions.append("NEXTN: SGLang sets --max-running-requests 48 when none is given (0.5.23 "
                           "arg_groups/speculative_hook.py); the plan gives %d" % running)
    return running, why


def _limited_by(spec, text):
    """`text` % the limiting node, for a server across nodes (one node limits nothing but itself)."""
    return text % spec["limiting_node"] if spec["nnodes"] > 1 and spec["limiting_node"] else ""


def node_args(spec):
    """SGLang's multi-node launch flags, only for a server across nodes: the same on every node but the rank.
    --tp-size (rendered by the role) stays the whole server's; each node runs tp x pp / nnodes GPUs."""
    if spec["nnodes"] == 1:
        return []
    args = ["--nnodes", str(spec["nnodes"]), "--node-rank", str(spec["node_rank"]),
            "--dist-init-addr", dist_init_addr(spec["dist_init_host"], spec["dist_init_port"])]
    if spec["dist_timeout"] is not None:
        args += ["--dist-timeout", str(spec["dist_timeout"])]
    return args


def speculative_args(spec):
    """The --speculative-* flags for spec['speculative'] (each one a field of the release's ServerArgs)."""
    spec_cfg = spec["speculative"]
    if not spec_cfg:
        return []
    args = ["--speculative-algorithm", spec_cfg["algorithm"]]
    if spec_cfg["draft_model_path"]:
        args += ["--speculative-draft-model-path", spec_cfg["draft_model_path"]]
    for key, flag in (("num_steps", "--speculative-num-steps"), ("eagle_topk", "--speculative-eagle-topk"),
                      ("num_draft_tokens", "--speculative-num-draft-tokens")):
        if spec_cfg[key] is not None:
            args += [flag, str(spec_cfg[key])]
    return args


def model_args(spec):
    """Flags the model needs to launch at all: --trust-remote-code when its config.json maps classes to
    code shipped in the checkpoint (auto_map: SGLang's tokenizer load fails without it,
    utils/hf_transformers_utils.py), and the preset's tool-call and reasoning parsers."""
    config = spec["model_config"]
    launch = {}
    if spec["model"]:
        launch = (load_presets().get(spec["model"]) or {}).get("launch") or {}
    args = []
    if launch.get("trust_remote_code") or config.get("auto_map") or (config.get("text_config") or {}).get("auto_map"):
        args.append("--trust-remote-code")
    for key in ("tool_call_parser", "reasoning_parser"):
        if launch.get(key):
            args += ["--" + key.replace("_", "-"), launch[key]]
    return args
