"""One boot's log lines give a calibration that plans to the token."""

import pytest
import sglang_kvplan as kv

KIMI = {"model": "kimi-k2.6", "tp_size": 8, "context_target": 200_000}
TRUE_P, TRUE_A = 85.334, 19.419  # ct200


def boot_at(fraction):
    """What SGLang logs on ct200 at `fraction`: P and A with two decimals, and the exact pool."""
    pool = kv.pool_tokens(dict(KIMI, pre_load_avail_gib=TRUE_P, post_load_avail_gib=TRUE_A), fraction)
    return {"pre_load_avail_gib": round(TRUE_P, 2), "post_load_avail_gib": round(TRUE_A, 2),
            "mem_fraction_static": fraction, "pool_tokens": pool}


@pytest.mark.parametrize("fraction", [0.85, 0.889, 0.92, 0.94])
def test_calibration_reproduces_the_logged_pool(fraction):
    boot = boot_at(fraction)
    cal = kv.calibrate(KIMI, boot)
    spec = dict(KIMI, pre_load_avail_gib=cal["pre_load_avail_gib"], post_load_avail_gib=cal["post_load_avail_gib"])
    assert kv.pool_tokens(spec, fraction) == boot["pool_tokens"]
    assert abs(cal["post_load_avail_gib"] - TRUE_A) < 0.006


@pytest.mark.parametrize("fraction", [0.85, 0.889, 0.92, 0.94])
def test_replan_from_one_boot_reaches_the_target_on_the_real_gpu(fraction):
    cal = kv.calibrate(KIMI, boot_at(fraction))
    plan = kv.plan(dict(KIMI, pre_load_avail_gib=cal["pre_load_avail_gib"],
                        post_load_avail_gib=cal["post_load_avail_gib"], pool_policy="fraction"))
    real = kv.pool_tokens(dict(KIMI, pre_load_avail_gib=TRUE_P, post_load_avail_gib=TRUE_A),
                          plan["mem_fraction_static"])
    assert real >= 200_000
    assert plan["mem_fraction_static"] == 0.926


def test_a_log_that_disagrees_with_the_cell_keeps_the_logged_a():
    boot = dict(boot_at(0.92), pool_tokens=100_000)  # another cell than the planner's (a draft, a dtype)
    assert kv.calibrate(KIMI, boot)["post_load_avail_gib"] == 19.42


def test_a_pinned_pool_keeps_the_logged_a_and_says_so():
    boot = dict(boot_at(0.958), pool_tokens=200_000, max_total_tokens=200_000, pool_end_avail_gib=6.33,
                draft_weights_gib=1.2)
    cal = kv.calibrate(KIMI, boot)
    assert cal["pinned"] is True and cal["post_load_avail_gib"] == 19.42
    assert cal["headroom_gib"] == 6.33 and cal["draft_weights_gib"] == 1.2
    assert kv.calibrate(KIMI, dict(boot, pool_tokens=150_000))["pinned"] is False  # the profile fell short


def test_missing_boot_fields_are_named():
    with pytest.raises(kv.KVPlanError, match="pool_tokens"):
        kv.calibrate(KIMI, {"pre_load_avail_gib": 85.33})
