"""Whether a boot's pool that fell short of the plan is corrected (transaction.py's calibrate phase).

The plan pins the pool with --max-total-tokens, or (pool_policy fill) leaves it unpinned with the headroom planned
for the least P the estimate allows. A boot whose pool came out under the plan, or whose unpinned pool left less
than the headroom, is corrected once (re-planned
from what the boot measured, and restarted when the flags differ) when the plan was an estimate or came from a
stored calibration the boot shows stale; a calibrated plan that still falls short is not re-tried: the run fails
with the numbers (the transaction's verify phase), and the rescue puts the last proven state back.
"""

from __future__ import annotations

# SGLang logs P and A with two decimals: a stored calibration is stale when the boot's numbers moved by more than
# that rounding (a driver, a checkpoint or SGLang itself changed what is free).
STALE_GIB = 0.015


def _float(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return 0


def is_stale(stored, boot):
    """True when a stored calibration's P or A differs from this boot's (this node's own journal)."""
    if not stored:
        return False
    stored_post = stored.get("logged_post_load_avail_gib", stored.get("post_load_avail_gib"))
    return (abs(_float(stored.get("pre_load_avail_gib")) - _float(boot.get("pre_load_avail_gib"))) > STALE_GIB
            or abs(_float(stored_post) - _float(boot.get("post_load_avail_gib"))) > STALE_GIB)


def headroom_short(own_boot, plan, min_headroom_gib):
    """True when an unpinned pool left less free than the headroom asked ('Memory pool end'): the fraction was
    planned for a P higher than the boot's (pool_policy fill plans it for the least P the estimate allows)."""
    end = (own_boot or {}).get("pool_end_avail_gib")
    return (not plan.get("max_total_tokens") and end not in (None, "") and min_headroom_gib is not None
            and _float(end) < _float(min_headroom_gib) - 0.01)


def correction(calibration, own_boot, stored, pool_tokens, plan, context_target, min_headroom_gib=None):
    """Decided once per boot (the calibrate phase's re-plan changes the plan it is decided from):
    {calibration, stale, store, correct, cause, previous_args, previous_required}.

    calibration: this boot's (sglang_kv_calibration); own_boot: this node's boot lines; stored: the calibration this
    host stored for this setup ({} when none); pool_tokens: the server's pool as SGLang allocated it; plan: the plan
    the boot ran (max_total_tokens, calibrated, args); context_target: what the pool must hold without a pin;
    min_headroom_gib: what an unpinned pool must leave free. Corrected once, where the plan was an estimate (or a
    stale calibration): a pool under what was planned, or an unpinned pool that left less than the headroom.
    """
    stored = stored or {}
    stale = is_stale(stored, own_boot or {})
    required = plan.get("max_total_tokens") or context_target
    cause = None
    if _int(pool_tokens) < _int(required):
        cause = "pool"
    elif headroom_short(own_boot, plan, min_headroom_gib):
        cause = "headroom"
    return {"calibration": calibration, "stale": stale, "store": not stored or stale,
            "correct": cause is not None and (not plan.get("calibrated") or stale), "cause": cause,
            "previous_args": plan.get("args"), "previous_required": required}
