"""Pool policy 'fill': the target guaranteed, the rest of the memory given to the pool, exact on the first boot.

SGLang keeps no absolute reserve. Without --max-total-tokens the pool is the profile, A - (1 - f) x P (less a draft
loaded before it), so what stays outside the pool is (1 - f) x P: the headroom follows P alone, and the pool takes
whatever A turns out to be (0.5.23 kv_cache_configurator.py, memory.py). P, free memory before the weights, is known
only after a boot (ct200 measured 85.33 GiB where memory.total gave 94.09). So:

- the fraction is planned from the least P may be: P itself once calibrated, else the estimate over
  (1 + 2 x uncalibrated_margin) (an estimate up to 20 % high with the default 0.10). The headroom is then at least
  min_headroom_gib, and about 1.2x it when the estimate was right: h/5 of memory left idle, against the whole
  rest of the GPU given to the pool;
- the pool must hold the target on that least P too (A lower by as much: the same weights); where it does not, as
  on a host the target only just fits, the pool is pinned to the target ('target', exact for any P and A);
- the next runs plan from the boot's calibration and keep that boot's flags while the target is the same and the
  boot met the rules (its pool holds the target, its headroom is at least the one asked, its concurrency
  affordable): a fraction re-planned from the measured P differs from the estimate's, and changing it would
  restart a server that is right. A new target restarts it anyway: it is planned from the measured numbers.
A first boot short of the headroom (P more than 20 % under the estimate) is re-planned from what it measured and
restarted once (lib/sglang_state/correction.py).
"""

from . import concurrency, linear
from .memory import FRACTION_LIMIT, floor3
from .spec import KVPlanError

# The estimate of P may be this many uncalibrated_margins high before the first boot's headroom falls short.
P_MARGINS = 2


def least_pre(spec, pre, calibrated):
    """The least P the fraction is planned for: the measured P, or the estimate's over 1 + 2 x margin."""
    return pre if calibrated else pre / (1 + P_MARGINS * spec["uncalibrated_margin"])


def _headroom(budget, pre, post, fraction):
    """GiB left outside what SGLang allocates with no pin at `fraction`, on a GPU with this P and A."""
    other = type(budget)(budget.spec, post, pre)
    return other.headroom(other.pool(fraction), fraction)


def fraction_for(spec, budget, pre, calibrated):
    """(f, sure headroom): the highest 3-decimal fraction whose headroom is at least min_headroom_gib on the least P;
    (None, 0.0) when none is. With the estimate's A: the headroom of an unpinned pool does not depend on A, but for
    a draft pool allocated beside it (0.5.9-0.5.13 EAGLE), which grows with the pool, so the higher A is the worse."""
    low = least_pre(spec, pre, calibrated)
    wanted = spec["min_headroom_gib"]
    fraction = min(floor3(1 - wanted / low), FRACTION_LIMIT)
    while fraction > 0:  # a draft or a multimodal cache outside the profile asks a step or two lower
        sure = _headroom(budget, low, budget.post, fraction)
        if sure >= wanted - 1e-9:
            return fraction, sure
        fraction = round(fraction - 0.001, 3)
    return None, 0.0


def _kept(spec, pre, budget, needed, draft_tokens):
    """The boot's own flags (fraction, cap, pool, headroom, running requests), when it served this target (and the
    running requests asked, if any) and the calibration it left predicts they still meet the rules; else None. Only
    a boot planned by 'fill' is kept: another policy's pin is not this one's to keep. Another target restarts the
    server anyway, so it is planned afresh from the measured numbers (a pinned first boot then fills)."""
    boot = spec["boot_flags"]
    if not boot or boot["pool_policy"] != "fill" or boot["context_length"] != spec["context_target"] or (
            spec["max_running_requests"] and spec["max_running_requests"] != boot["max_running_requests"]):
        return None
    fraction, cap = boot["mem_fraction_static"], boot["max_total_tokens"]
    profiled = budget.pool(fraction)
    pool = profiled if cap is None else min(profiled, cap)
    left = budget.headroom(pool, fraction)
    if fraction > FRACTION_LIMIT or pool < needed or (cap is not None and profiled < cap) \
            or left < spec["min_headroom_gib"] - 1e-9:
        return None
    running = boot["max_running_requests"]
    if running // concurrency.attn_dp(spec) > min(concurrency.largest_affordable(spec, left, draft_tokens), pool // 2):
        return None
    if budget.state is not None and running > linear.running_cap(budget.state, budget.rest(fraction)):
        return None
    return fraction, cap, pool, left, running


def filled(spec, pre, budget, needed, calibrated, draft_tokens):
    """{fraction, cap (None: no pin), pool (predicted), sure_headroom, running (kept, or None), note}, or {note} alone
    where the pool is pinned to the target instead (the caller's 'target' path)."""
    if calibrated:
        kept = _kept(spec, pre, budget, needed, draft_tokens)
        if kept:
            fraction, cap, pool, left, running = kept
            return {"fraction": fraction, "cap": cap, "pool": pool, "sure_headroom": left, "running": running,
                    "note": "pool_policy fill: the flags of the boot this calibration measured (it met the rules, "
                            "and changing them would restart a server that is right)"}
    fraction, sure = fraction_for(spec, budget, pre, calibrated)
    low = least_pre(spec, pre, calibrated)
    pool = budget.pool(fraction) if fraction else 0
    # The pool must hold the target also on the least P the fraction is planned for (with the same weights, A is
    # that much lower too): a host tight enough to miss it there gets the pin, exact for any P and A, rather than
    # a corrective restart (tests/benchmarks/bench_first_boot.py: 7 of 111 simulated ct200s without this).
    least = type(budget)(spec, budget.post - (pre - low), low)
    pool_least = least.pool(fraction) if fraction else 0
    if pool_least < needed and budget.state is not None:  # the pin frees no state (linear.py): nothing to fall back on
        raise KVPlanError("context_target %s: where P is as low as %.2f GiB the pool at the highest fraction the "
                          "headroom allows holds %s tokens beside the state pool; a hybrid linear-attention model is "
                          "not pinned (its state pool takes its share whatever the pin). Lower sglang_context_target, "
                          "use more GPUs, or lower --mamba-full-memory-ratio in sglang_extra_args (fewer state "
                          "slots, more KV)." % (format(needed, ","), low, format(pool_least, ",")))
    if pool_least < needed:
        return {"note": "pool_policy fill: where P is as low as %.2f GiB the pool at the highest fraction the headroom "
                        "allows (%s tokens) would not hold the %s needed: it is pinned to the target instead, as "
                        "'target' does (exact for any P and A)" % (low, format(pool_least, ","), format(needed, ","))}
    return {"fraction": fraction, "cap": None, "pool": pool, "sure_headroom": sure, "running": None,
            "note": "pool_policy fill: the pool takes what the target leaves (%s tokens more)%s"
                    % (format(pool - needed, ","), "" if calibrated else (
                        "; --mem-fraction-static is planned for P as low as %.2f GiB (the estimate %.2f over 1 + %d "
                        "x uncalibrated_margin), so the headroom holds whatever P the boot finds above that, and the "
                        "next run keeps these flags while the boot met the rules"
                        % (least_pre(spec, pre, calibrated), pre, P_MARGINS)))}


def tradeoff(filled, pool, needed, cell):
    """The trade-off line of an unpinned fill: what the memory beyond the target buys, and what a pin would free."""
    if not filled.get("fraction") or filled.get("cap") is not None:
        return []
    extra = pool - needed
    return ["memory: %s tokens (%.2f GiB per GPU) beyond the %s the target needs, for more requests side by side; "
            "sglang_pool_policy target would leave them to other work"
            % (format(extra, ","), extra * cell / (1 << 30), format(needed, ","))]
