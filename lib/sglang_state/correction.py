"""Whether a boot's pool that fell short of the plan is corrected (transaction.py's calibrate phase).

The plan pins the pool with --max-total-tokens. A boot whose pool came out under it is corrected once (re-planned
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


def correction(calibration, own_boot, stored, pool_tokens, plan, context_target):
    """Decided once per boot (the calibrate phase's re-plan changes the plan it is decided from):
    {calibration, stale, store, correct, previous_args, previous_required}.

    calibration: this boot's (sglang_kv_calibration); own_boot: this node's boot lines; stored: the calibration this
    host stored for this setup ({} when none); pool_tokens: the server's pool as SGLang allocated it; plan: the plan
    the boot ran (max_total_tokens, calibrated, args); context_target: what the pool must hold without a pin.
    """
    stored = stored or {}
    stale = is_stale(stored, own_boot or {})
    required = plan.get("max_total_tokens") or context_target
    return {"calibration": calibration, "stale": stale, "store": not stored or stale,
            "correct": _int(pool_tokens) < _int(required) and (not plan.get("calibrated") or stale),
            "previous_args": plan.get("args"), "previous_required": required}
