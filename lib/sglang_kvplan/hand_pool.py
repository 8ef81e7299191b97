"""A pool sized by hand: spec `max_total_tokens` (the knob sglang_max_total_tokens), for what the planner refuses.

The planner then does not size the cell (the layout is the operator's to know): it pins --max-total-tokens to the
hand-set pool, rounded up to the page as every pin is, and plans --mem-fraction-static as the 'target' policy does:
the highest fraction whose reserve (1 - f) x P keeps min_headroom_gib even where P is the whole GPU. SGLang sizes
min(profile, pin), so the pool is the pin whenever its cells fit in the profile; whether they do, only the first
boot says (the plan's line), since the planner does not know the cell.
"""

import math

from .memory import fraction_ceiling
from .spec import KVPlanError

# The largest hand-set pool: 100 million tokens, more than any GPU holds (lib/sglang_checks/values.py bounds the
# knob the same way before the plan).
MAX_HAND_POOL = 100_000_000


def _fmt(value):
    return format(value, ",")


def plan_by_hand(spec, pre, post, calibrated, assumptions, extra_args):
    """The plan for a hand-set pool. `extra_args(spec)`: the launch flags that do not depend on the pool
    (parallelism, speculative, model and node flags, from plan.py)."""
    target, asked, page = spec["context_target"], spec["max_total_tokens"], spec["page_size"]
    if asked > MAX_HAND_POOL:
        raise KVPlanError("sglang_max_total_tokens %s is more tokens than any GPU holds (at most %s): set the pool "
                          "you want, in tokens." % (_fmt(asked), _fmt(MAX_HAND_POOL)))
    cap = math.ceil(asked / page) * page
    if target > cap:
        raise KVPlanError("sglang_max_total_tokens %s is less than context_target %s: one request of the target "
                          "length would not fit the pool. Raise sglang_max_total_tokens to at least %s, or lower "
                          "sglang_context_target." % (_fmt(asked), _fmt(target), _fmt(target)))
    upper = max(pre, spec["gpu_memory_mib"] / 1024 if spec["gpu_memory_mib"] else 0.0)
    fraction = fraction_ceiling(upper, spec["min_headroom_gib"])
    if fraction <= 0:
        raise KVPlanError("sglang_min_headroom_gib %s leaves no memory for a pool on a GPU with %.2f GiB: lower it."
                          % (spec["min_headroom_gib"], upper))
    running = spec["max_running_requests"] or max(cap // target, 1)
    why = ("sglang_max_running_requests, as set" if spec["max_running_requests"]
           else "as many as the hand-set pool holds at full length")
    assumptions.append("sglang_max_total_tokens %s: the pool is sized by hand (--max-total-tokens %s%s); the planner "
                       "did not size its cell, so the first boot's log ('KV Cache is allocated. #tokens') says "
                       "whether it fits: SGLang sizes the smaller of the pin and what --mem-fraction-static %.3f "
                       "leaves" % (_fmt(asked), _fmt(cap), ", rounded up to page %d" % page if cap != asked else "",
                                   fraction))
    args = extra_args(spec, target, cap, fraction, running)
    basis = "calibrated (P %.3f GiB, A %.3f GiB)" % (pre, post) if calibrated else \
        "estimated (P %.2f GiB, A %.2f GiB)" % (pre, post)
    return {
        "context_length": target, "mem_fraction_static": fraction, "max_total_tokens": cap,
        "max_running_requests": running, "running_requests_reason": why, "headroom_parts": None,
        "tradeoff": ["--max-total-tokens %s, sized by hand (sglang_max_total_tokens): %d requests of %s tokens"
                     % (_fmt(cap), max(cap // target, 1), _fmt(target))],
        "predicted_pool_tokens": cap, "required_pool_tokens": cap, "headroom_gib": None,
        "reserved_gib": round((1 - fraction) * pre, 3), "kv_bytes_per_token": None,
        "target_kv_bytes_per_token": None, "draft_kv_bytes_per_token": None, "draft_weights_gib": None,
        "kv_cache_gib": None, "calibrated": calibrated, "pool_policy": "by_hand", "release_rules": spec["_release"],
        "pre_load_avail_gib": round(pre, 3), "post_load_avail_gib": round(post, 3), "assumptions": assumptions,
        "args": args,
        "explanation": "target %s -> pool %s tokens (pinned by hand by --max-total-tokens %s, "
                       "--mem-fraction-static %.3f), %s" % (_fmt(target), _fmt(cap), _fmt(cap), fraction, basis),
        "flags_summary": "context %s, pool pinned at %s tokens by hand, --mem-fraction-static %.3f, %d running "
                         "request(s)" % (_fmt(target), _fmt(cap), fraction, running),
    }
