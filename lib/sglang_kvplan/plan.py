"""From a context target to SGLang's three levers: permission, capacity, concurrency.

  --context-length        permission: the longest request the server accepts (the target);
  --mem-fraction-static   capacity: the smallest fraction (3 decimals, rounded up) whose pool
                          holds the target, plus `uncalibrated_margin` while P and A are estimates,
                          and that still leaves `min_headroom_gib` of (1 - f) * P for CUDA graphs,
                          activations, NCCL and the req_to_token pool;
  --max-running-requests  concurrency: how many full-length requests the pool holds, bounded as
                          SGLang bounds it (at least 1, at most N // 2 per DP group).
"""

import math

from .memory import GIB, memory, pool_tokens
from .model import cell_bytes, describe_cell, native_context
from .spec import KVPlanError, normalize_spec


def _fmt(number):
    return f"{number:,}"


def _fraction_ceiling(pre, min_headroom):
    """The largest fraction (3 decimals) that leaves min_headroom GiB of P unreserved."""
    return math.floor(round((1 - min_headroom / pre) * 1000, 6)) / 1000


def smallest_fraction(pre, post, cell, page_size, tokens, ceiling):
    """Smallest 3-decimal fraction whose pool holds `tokens`, or None above `ceiling`."""
    need_gib = tokens * cell / GIB
    raw = 1 - (post - need_gib) / pre
    fraction = max(math.ceil(round(raw * 1000, 6)) / 1000, 0.001)
    # The float formula can land a hair short after rounding; step up until SGLang's own sum agrees.
    while fraction <= ceiling and pool_tokens(pre, post, fraction, cell, page_size) < tokens:
        fraction = round(fraction + 0.001, 3)
    return fraction if fraction <= ceiling else None


def _default_running_requests(spec, pool, target):
    attn_dp = spec["dp_size"] if spec["enable_dp_attention"] else 1
    per_group = max(1, min(pool // target, pool // 2))
    return per_group * attn_dp


def _more_gpus_estimate(spec, pre, post, ceiling, margin):
    """Tokens that would fit with the pipeline doubled: half the weights and layers per GPU."""
    wider = dict(spec, pp_size=spec["pp_size"] * 2)
    wider_post = pre - (pre - post) / 2
    tokens = pool_tokens(pre, wider_post, ceiling, cell_bytes(wider), spec["page_size"])
    gpus = spec["tp_size"] * wider["pp_size"]
    return ("use more GPUs: with sglang_pp_size %d (%d GPUs, weights and layers split over twice as many) "
            "about %s tokens would fit (an estimate; the run calibrates it)"
            % (wider["pp_size"], gpus, _fmt(int(tokens / (1 + margin)))))


def _beyond_native_window(spec):
    """SGLang refuses a context past max_position_embeddings unless told to extend it."""
    native = native_context(spec["model_config"])
    if not native or spec["context_target"] <= native:
        return ""
    return ("context_target %s is beyond the model's native window (max_position_embeddings %s): SGLang "
            "refuses it without SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 and a RoPE-scaling override, "
            "and quality past the trained window is not assured. Lower sglang_context_target to at most %s."
            % (_fmt(spec["context_target"]), _fmt(native), _fmt(native)))


def _infeasible(spec, pre, post, cell, required, ceiling, margin, calibrated, native_note):
    target = spec["context_target"]
    best = pool_tokens(pre, post, ceiling, cell, spec["page_size"])
    avail_gib = max(post - pre * (1 - ceiling), 0.0)
    fixes = []
    if spec["kv_cache_dtype"] not in ("fp8_e4m3", "fp8_e5m2"):
        fp8 = dict(spec, kv_cache_dtype="fp8_e4m3")
        fp8_cell = cell_bytes(fp8)
        if fp8_cell < cell:
            fp8_fraction = smallest_fraction(pre, post, fp8_cell, spec["page_size"], required, ceiling)
            if fp8_fraction is not None:
                fixes.append("set sglang_kv_cache_dtype: fp8_e4m3 (%s B/token, half the KV bytes): "
                             "%s tokens fit at mem_fraction_static %.3f"
                             % (_fmt(fp8_cell), _fmt(target), fp8_fraction))
    largest = int(best / (1 + margin)) if best else 0
    if largest > 0:
        fixes.append("lower sglang_context_target to at most %s, the most that fits as configured"
                     % _fmt(largest))
    fixes.append(_more_gpus_estimate(spec, pre, post, ceiling, margin))
    basis = ("calibrated" if calibrated
             else "uncalibrated estimate, with a %d%% margin" % round(margin * 100))
    raise KVPlanError(
        "context_target %s does not fit: it needs %.2f GiB of KV cache per GPU (%s tokens x %s B/token, %s), "
        "but at most %.2f GiB per GPU is available: %.2f GiB free after the weights (A) less "
        "min_headroom_gib %.2f GiB at mem_fraction_static %.3f (P %.2f GiB; %s). Fixes: %s.%s"
        % (_fmt(target), required * cell / GIB, _fmt(required), _fmt(cell), describe_cell(spec),
           avail_gib, post, spec["min_headroom_gib"], ceiling, pre, basis, "; or ".join(fixes),
           " Also: " + native_note if native_note else ""))


def plan(raw_spec):
    """The flags for spec['context_target'], with the predicted pool and how it was reached."""
    spec = normalize_spec(raw_spec)
    target = spec["context_target"]
    if target is None:
        raise KVPlanError("spec key 'context_target' (group_vars sglang_context_target) is needed "
                          "for a plan: the longest prompt + completion, in tokens, one request may use.")
    pre, post, calibrated, assumptions = memory(spec)
    cell = cell_bytes(spec)
    page = spec["page_size"]
    margin = 0.0 if calibrated else spec["uncalibrated_margin"]
    required = math.ceil(math.ceil(round(target * (1 + margin), 6)) / page) * page
    ceiling = _fraction_ceiling(pre, spec["min_headroom_gib"])
    fraction = smallest_fraction(pre, post, cell, page, required, ceiling) if ceiling > 0 else None
    native_note = _beyond_native_window(spec)
    if fraction is None:
        _infeasible(spec, pre, post, cell, required, max(ceiling, 0.001), margin, calibrated, native_note)
    if native_note:
        raise KVPlanError(native_note)

    pool = pool_tokens(pre, post, fraction, cell, page)
    running = spec["max_running_requests"] or _default_running_requests(spec, pool, target)
    headroom = (1 - fraction) * pre
    args = ["--context-length", str(target),
            "--mem-fraction-static", "%.3f" % fraction,
            "--max-running-requests", str(running)]
    if spec["kv_cache_dtype"] != "auto":
        args += ["--kv-cache-dtype", spec["kv_cache_dtype"]]
    if page != 1:
        args += ["--page-size", str(page)]
    if calibrated:
        basis = "calibrated (P %.3f GiB, A %.3f GiB)" % (pre, post)
    else:
        basis = "estimated, %d%% margin (P %.2f GiB, A %.2f GiB)" % (round(margin * 100), pre, post)
        assumptions.append("uncalibrated_margin %.2f: the pool is planned for %s tokens, not %s"
                           % (margin, _fmt(required), _fmt(target)))
    return {
        "context_length": target,
        "mem_fraction_static": fraction,
        "max_running_requests": running,
        "predicted_pool_tokens": pool,
        "required_pool_tokens": required,
        "headroom_gib": round(headroom, 3),
        "kv_bytes_per_token": cell,
        "kv_cache_gib": round(pool * cell / GIB, 3),
        "calibrated": calibrated,
        "pre_load_avail_gib": round(pre, 3),
        "post_load_avail_gib": round(post, 3),
        "assumptions": assumptions,
        "args": args,
        "explanation": "target %s -> --mem-fraction-static %.3f -> pool %s tokens, headroom %.1f GiB, %s"
                       % (_fmt(target), fraction, _fmt(pool), headroom, basis),
    }
