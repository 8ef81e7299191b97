"""A boot's log -> the calibration the next plan uses.

SGLang logs P and A with two decimals ('avail mem=85.33 GB'): 0.005 GiB is ~76 tokens of Kimi's
pool, enough to plan a hair short. The pool it logged at a known fraction pins A exactly:
    N = floor((A - P * (1 - f)) * 2**30 / cell)  =>  A = (N + 0.5) * cell / 2**30 + P * (1 - f)
(the + 0.5 puts A mid-way in the one-token window the floor leaves). A pool pinned by
--max-total-tokens says nothing about the profile, so then the logged A is kept as it is.
"""

import math

from .linear import kv_rest_before_state, state_pool
from .memory import GIB, draft_loads_before_profile, mm_reserve_gib, pool_tokens
from .memory import draft_weights as planned_draft_weights
from .model import cell_bytes
from .normalize import normalize_spec
from .pages import pool_page
from .spec import KVPlanError


def _check_boot(boot, pre, post, fraction, pool):
    """What SGLang can log: finite GiB, P above 0, a --mem-fraction-static in (0, 1], a pool of 0 or more tokens, a
    cap that is a whole number. A sentence naming the value, not a ValueError. A above P is not refused: SGLang logs
    it when free memory rose while the weights loaded (calibrate takes A = P then)."""
    problems = []
    if not (math.isfinite(pre) and math.isfinite(post)) or pre <= 0 or post < 0:
        problems.append("pre_load_avail_gib %r and post_load_avail_gib %r must be finite GiB, P above 0" % (pre, post))
    if not (math.isfinite(fraction) and 0 < fraction <= 1):
        problems.append("mem_fraction_static %r is not in (0, 1]" % fraction)
    if pool < 0:
        problems.append("pool_tokens %r is below 0" % pool)
    cap = boot.get("max_total_tokens")
    if cap not in (None, ""):
        try:
            int(cap)
        except (TypeError, ValueError):
            problems.append("max_total_tokens %r is not a whole number" % (cap,))
    if problems:
        raise KVPlanError("boot: %s; give the numbers SGLang logged ('avail mem=' at 'Load weight begin' and 'Load "
                          "weight end', --mem-fraction-static, 'KV Cache is allocated. #tokens')."
                          % "; ".join(problems))


def calibrate(raw_spec, boot):
    """`boot`: pre_load_avail_gib, post_load_avail_gib (the TARGET's, as logged), mem_fraction_static,
    pool_tokens; optionally max_total_tokens (the cap the boot ran with), the draft's 'Load weight begin/end'
    avail mem (draft_pre_load_avail_gib, draft_post_load_avail_gib; or their difference as draft_weights_gib)
    and pool_end_avail_gib (free after the pool: the measured headroom) with after_graph_avail_gib (free after the
    CUDA-graph capture: their difference is the graphs' graph_gib).

    The draft's weights are the drop across its load, clamped at 0: a real 0.5.2x boot logged 28.81 GB ->
    30.67 GB (`mem usage=-1.86 GB`), the target's loader temporaries freed while the draft loaded. The raw
    numbers are kept (draft_load_avail_gib) so the calibration still says what the log said.

    Returns {pre_load_avail_gib, post_load_avail_gib, logged_post_load_avail_gib, mem_fraction_static,
    pool_tokens, pinned, [boot_flags], [draft_weights_gib], [headroom_gib], [graph_gib]} with A refined from an
    unpinned pool; boot_flags (the plan's max_total_tokens, max_running_requests, context_length and pool_policy the
    boot ran, given as boot's boot_flags) with the boot's fraction.
    """
    spec = normalize_spec(dict(raw_spec, pre_load_avail_gib=None, post_load_avail_gib=None))
    try:
        pre = float(boot["pre_load_avail_gib"])
        logged_post = float(boot["post_load_avail_gib"])
        fraction = float(boot["mem_fraction_static"])
        pool = int(boot["pool_tokens"])
    except (KeyError, TypeError, ValueError) as error:
        raise KVPlanError("boot: needs pre_load_avail_gib, post_load_avail_gib, mem_fraction_static and "
                          "pool_tokens read from SGLang's log; got %r (%s)." % (boot, error)) from None
    _check_boot(boot, pre, logged_post, fraction, pool)
    # Free memory that rose across the load (another process freed some; on SGLang's CPU engine the host's free
    # memory moves with everything else: the real 0.5.23 server under make test logged P 19.61, A 19.63, as a real
    # GPU boot's draft logged 28.81 -> 30.67 GB): the weights took nothing measurable, A = P.
    logged_a = min(logged_post, pre)
    draft_weights, draft_raw = _draft_weights(boot)
    cap = boot.get("max_total_tokens")
    pinned = cap not in (None, "") and pool >= int(cap)
    cell = cell_bytes(spec)
    # A refined from the pool is what the profile started from; a draft loaded before it (0.5.23) took its
    # weights from there, and 0.5.23 kept a multimodal reserve out: both are added back to give the target's A.
    before = draft_weights if draft_loads_before_profile(spec) else 0.0
    if draft_raw is None and draft_loads_before_profile(spec):
        # No draft load in the log: what the planner itself counts for the draft (its checkpoint's estimate), so the
        # refined A and the re-plan take out the same and the re-plan gives the pool this boot measured. With 0
        # here, A fell back to its two logged decimals (ct200: a re-plan of 217,629 tokens for a boot of 217,612).
        before = planned_draft_weights(spec)[0]
    before += mm_reserve_gib(spec)  # and 0.5.23's reserve for a multimodal checkpoint
    rest = (pool + 0.5) * cell / GIB
    state = state_pool(spec)
    if state is not None:  # what the profile had before the state pool took its share (linear.py)
        rest = kv_rest_before_state(state, rest)
    post = rest + pre * (1 - fraction) + before
    if pinned:
        post = logged_a
    elif pool_page(spec) == 1 and abs(post - logged_a) > _rounding(spec, draft_raw):
        # The logged A disagrees with the pool by more than its rounding: the cell or the fraction is not
        # what SGLang used (another KV dtype, a draft model, a max_total_tokens cap). Trust the log.
        post = logged_a
    if pool_tokens(pre, post - before, fraction, cell, pool_page(spec), state) > pool:
        post = logged_a
    post = min(post, pre)
    result = {"pre_load_avail_gib": round(pre, 6), "post_load_avail_gib": round(post, 6),
              "logged_post_load_avail_gib": logged_post, "mem_fraction_static": fraction, "pool_tokens": pool,
              "pinned": pinned}
    if isinstance(boot.get("boot_flags"), dict):
        # What the boot ran, so that a plan from this calibration can keep it (fill.py); checked when planned from.
        result["boot_flags"] = dict(boot["boot_flags"], mem_fraction_static=fraction)
    if draft_raw is not None:
        result["draft_weights_gib"] = round(draft_weights, 6)
        result["draft_load_avail_gib"] = draft_raw
    if boot.get("pool_end_avail_gib") not in (None, ""):
        result["headroom_gib"] = round(_number(boot, "pool_end_avail_gib"), 6)
        if boot.get("after_graph_avail_gib") not in (None, ""):
            # What the CUDA-graph capture took: free after the pool less free after the capture (the planner's
            # graph part of the headroom, concurrency.py), clamped at 0 against the logs' rounding.
            result["graph_gib"] = round(max(result["headroom_gib"] - _number(boot, "after_graph_avail_gib"), 0.0), 6)
    return result


def _rounding(spec, draft_raw):
    """GiB the refined A may sit from the logged one by the log's two decimals alone: A's and P's rounding (0.011),
    and a draft weighed before the profile from two logged numbers (its drop) twice 0.005 more. Kept to the
    logged A there, a ct200 boot of 217,612 tokens (P 85.33, A 19.42, draft 19.42 -> 18.88) re-planned to
    217,777, more than it holds; the refined A re-plans the pool the boot measured."""
    drop = isinstance(draft_raw, list) and draft_loads_before_profile(spec)
    return 0.011 + (0.010 if drop else 0.0)


def _number(boot, key):
    try:
        value = float(boot[key])
    except (TypeError, ValueError):
        raise KVPlanError("boot: %s must be a number read from SGLang's log, got %r." % (key, boot[key])) from None
    if not math.isfinite(value):
        raise KVPlanError("boot: %s must be a finite number, got %r." % (key, boot[key]))
    return value


def _draft_weights(boot):
    """(GiB >= 0, raw) of the draft's load: raw is [before, after] as logged, or the given difference."""
    draft_pair = (boot.get("draft_pre_load_avail_gib"), boot.get("draft_post_load_avail_gib"))
    if all(v not in (None, "") for v in draft_pair):
        before, after = _number(boot, "draft_pre_load_avail_gib"), _number(boot, "draft_post_load_avail_gib")
        return max(before - after, 0.0), [before, after]
    if boot.get("draft_weights_gib") not in (None, ""):
        drop = _number(boot, "draft_weights_gib")
        return max(drop, 0.0), drop
    return 0.0, None
