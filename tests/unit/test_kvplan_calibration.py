"""One boot's log lines give a calibration that plans to the token."""

import pytest
import sglang_kvplan as kv

# the seed's build, pinned (the pin's calibration; test_kvplan_fill.py has the default)
KIMI = {"model": "kimi-k2.6", "tp_size": 8, "context_target": 200_000, "pool_rules": "0.5.9", "pool_policy": "target"}
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


def test_0_5_23_keeps_a_multimodal_reserve_out_of_the_profile_and_calibration_adds_it_back():
    # kv_cache_configurator.py mm_runtime_reservation_gb: 100 MiB for KimiK25ForConditionalGeneration
    spec = dict(KIMI, pool_rules=None, version="0.5.23")
    truth = dict(spec, pre_load_avail_gib=TRUE_P, post_load_avail_gib=TRUE_A)
    reserve_tokens = int(100 / 1024 * 2**30 // 70_272)
    unreserved = kv.pool_tokens(dict(truth, pool_rules="0.5.9"), 0.92)
    assert abs(unreserved - kv.pool_tokens(truth, 0.92) - reserve_tokens) <= 1
    boot = {"pre_load_avail_gib": 85.33, "post_load_avail_gib": 19.42, "mem_fraction_static": 0.92,
            "pool_tokens": kv.pool_tokens(truth, 0.92)}
    assert abs(kv.calibrate(spec, boot)["post_load_avail_gib"] - TRUE_A) < 0.006


def test_a_draft_whose_load_freed_memory_still_plans_the_next_run():
    """A real 0.5.2x boot (target + MTP draft) logged the draft's pair 'Load weight begin. avail mem=28.81 GB' ->
    'Load weight end ... avail mem=30.67 GB, mem usage=-1.86 GB' (the target's loader temporaries freed while the
    draft loaded). The calibration keeps both numbers and counts the draft's weights as 0, so the next plan runs."""
    spec = {"model": "deepseek-v3", "tp_size": 8, "speculative": {"algorithm": "NEXTN"}, "context_target": 100_000,
            "gpu_memory_mib": 143_771, "pool_policy": "target"}
    boot = {"pre_load_avail_gib": 139.0, "post_load_avail_gib": 58.0, "mem_fraction_static": 0.9,
            "pool_tokens": 100_032, "max_total_tokens": 100_032,
            "draft_pre_load_avail_gib": 28.81, "draft_post_load_avail_gib": 30.67}
    cal = kv.calibrate(spec, boot)
    assert cal["draft_weights_gib"] == 0.0 and cal["draft_load_avail_gib"] == [28.81, 30.67]
    plan = kv.plan(dict(spec, pre_load_avail_gib=cal["pre_load_avail_gib"],
                        post_load_avail_gib=cal["post_load_avail_gib"],
                        speculative={"algorithm": "NEXTN", "draft_weights_gib": cal["draft_weights_gib"]}))
    assert plan["calibrated"] and plan["max_total_tokens"] == 100_032
    # a draft that took memory is still measured as the drop
    taken = kv.calibrate(spec, dict(boot, draft_pre_load_avail_gib=30.67, draft_post_load_avail_gib=28.81))
    assert taken["draft_weights_gib"] == pytest.approx(1.86)
    # the older key (the difference) is clamped the same way, and its raw value kept
    older = kv.calibrate(spec, {k: v for k, v in boot.items() if not k.startswith("draft_")} | {
        "draft_weights_gib": -1.86})
    assert older["draft_weights_gib"] == 0.0 and older["draft_load_avail_gib"] == -1.86


def test_a_calibration_stored_before_the_clamp_still_plans():
    """A host's stored calibration written before the clamp holds the raw drop (-1.86): the next plan takes 0 for
    the draft and keeps the raw number, one node or several, instead of refusing a negative weight."""
    from sglang_kvplan import server_inputs
    stored = {"pre_load_avail_gib": 139.0, "post_load_avail_gib": 58.0, "draft_weights_gib": -1.86}
    one = server_inputs([{"node": "a", "gpu_memory_mib": 143_771, "calibration": stored}])["calibration"]
    assert one["draft_weights_gib"] == 0.0 and one["draft_load_avail_gib"] == -1.86
    two = server_inputs([{"node": "a", "gpu_memory_mib": 143_771, "calibration": stored},
                         {"node": "b", "gpu_memory_mib": 143_771, "calibration": dict(stored, draft_weights_gib=-0.5)}])
    assert two["calibration"]["draft_weights_gib"] == 0.0
    assert stored["draft_weights_gib"] == -1.86  # the host's own record is not rewritten
    spec = {"model": "deepseek-v3", "tp_size": 8, "context_target": 100_000, "gpu_memory_mib": 143_771,
            "pre_load_avail_gib": 139.0, "post_load_avail_gib": 58.0, "pool_policy": "target",
            "speculative": {"algorithm": "NEXTN", "draft_weights_gib": one["draft_weights_gib"]}}
    assert kv.plan(spec)["max_total_tokens"] >= 100_000
    with pytest.raises(kv.KVPlanError, match="draft_weights_gib is 'x'"):
        server_inputs([{"node": "a", "calibration": dict(stored, draft_weights_gib="x")}])
