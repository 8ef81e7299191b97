"""Properties of SGLang's formula and of the planner, over many setups."""

import pytest
import sglang_kvplan as kv
from hypothesis import assume, given, settings
from hypothesis import strategies as st

presets = st.sampled_from(sorted(kv.load_presets()))
pre = st.floats(min_value=20.0, max_value=190.0)
weights_share = st.floats(min_value=0.05, max_value=0.9)
fractions = st.integers(min_value=1, max_value=998).map(lambda n: n / 1000)


def calibrated(model, pre_gib, share, tp=8):
    return {"model": model, "tp_size": tp, "pre_load_avail_gib": pre_gib,
            "post_load_avail_gib": pre_gib * (1 - share)}


@given(presets, pre, weights_share, fractions, fractions)
def test_higher_fraction_never_gives_fewer_tokens(model, pre_gib, share, f1, f2):
    spec = calibrated(model, pre_gib, share)
    low, high = sorted((f1, f2))
    assert kv.pool_tokens(spec, low) <= kv.pool_tokens(spec, high)


@settings(max_examples=200)
@given(presets, pre, weights_share, st.integers(min_value=1_000, max_value=40_000),
       st.sampled_from([1, 16, 64]), st.sampled_from(["auto", "fp8_e4m3"]))
def test_plan_then_forward_reaches_the_target(model, pre_gib, share, target, page, dtype):
    spec = dict(calibrated(model, pre_gib, share), context_target=target, page_size=page,
                kv_cache_dtype=dtype, min_headroom_gib=2.0)
    try:
        plan = kv.plan(spec)
    except kv.KVPlanError as error:
        assume("does not fit" not in str(error))
        raise
    forward = kv.pool_tokens(spec, plan["mem_fraction_static"])
    assert forward == plan["predicted_pool_tokens"] >= target
    assert forward % page == 0
    assert plan["headroom_gib"] >= 2.0 - 1e-9
    # smallest: one step lower no longer reaches the target (unless the floor of 0.001 was hit)
    lower = round(plan["mem_fraction_static"] - 0.001, 3)
    if lower > 0:
        assert kv.pool_tokens(spec, lower) < target


@settings(max_examples=100)
@given(presets, st.integers(min_value=1_000, max_value=40_000))
def test_uncalibrated_plans_keep_their_margin(model, target):
    spec = {"model": model, "tp_size": 8, "gpu_memory_mib": 97_887, "context_target": target,
            "min_headroom_gib": 1.0}
    try:
        plan = kv.plan(spec)
    except kv.KVPlanError as error:
        assume("does not fit" not in str(error))
        raise
    assert plan["calibrated"] is False
    assert plan["predicted_pool_tokens"] >= target * 1.10
    assert plan["assumptions"]


@given(presets, pre, weights_share, st.integers(min_value=1, max_value=8))
def test_default_running_requests_fit_the_pool(model, pre_gib, share, dp):
    spec = dict(calibrated(model, pre_gib, share, tp=8), context_target=4096, min_headroom_gib=1.0,
                dp_size=dp, enable_dp_attention=(8 % dp == 0))
    assume(8 % dp == 0)
    try:
        plan = kv.plan(spec)
    except kv.KVPlanError as error:
        assume("does not fit" not in str(error))
        raise
    per_group = plan["max_running_requests"] // dp
    assert per_group >= 1
    assert per_group == max(1, min(plan["predicted_pool_tokens"] // 4096, plan["predicted_pool_tokens"] // 2))


def test_zero_pool_when_weights_leave_nothing():
    assert kv.pool_tokens(calibrated("kimi-k2.6", 80.0, 0.9), 0.5) == 0
    with pytest.raises(kv.KVPlanError, match="does not fit"):
        kv.plan(dict(calibrated("kimi-k2.6", 80.0, 0.99), context_target=1000))
