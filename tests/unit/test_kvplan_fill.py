"""Pool policy 'fill' (the default, lib/sglang_kvplan/fill.py): the target guaranteed, the rest of the memory to the
pool, exact on the first boot, and the same flags on the next run.

The boots here follow SGLang's own rule, written out independently of the planner (0.5.23 kv_cache_configurator.py,
0.5.9 model_runner.py profile_max_num_token): profile = A - P x (1 - f); the pool is the profile in whole tokens,
capped by --max-total-tokens; it allocates (pool + page) x cell, and 'Memory pool end' logs what is left.
"""

import itertools

import pytest
import sglang_kvplan as kv
from sglang_checks import planspec
from sglang_state.correction import correction
from sglang_state.transaction import _calibration

GIB = 1 << 30
H100_MIB = 81_559
# Qwen3-32B at TP4: 64 layers x (8 KV heads / 4) x 128 x (K and V) x 2 bytes (config.json, bf16 KV)
QWEN_CELL = 64 * 2 * 128 * 2 * 2
QWEN = {"model": "qwen3-32b", "tp_size": 4, "gpu_memory_mib": H100_MIB, "gpu_compute_capability": "9.0",
        "checkpoint_gib": 61.0, "context_target": 40_960}


def boot(plan, true_p, true_a, cell):
    """What SGLang does with the plan's flags on a GPU whose P and A are these (no draft, page 1)."""
    fraction = plan["mem_fraction_static"]
    pool = int((true_a - true_p * (1 - fraction)) * GIB // cell)
    if plan["max_total_tokens"] is not None:
        pool = min(pool, plan["max_total_tokens"])
    end = true_a - (pool + 1) * cell / GIB
    return {"found": True, "pre_load_avail_gib": round(true_p, 2), "post_load_avail_gib": round(true_a, 2),
            "pool_tokens": pool, "pool_end_avail_gib": round(end, 2)}


def replanned(spec, plan, booted):
    """The next run's plan, from the calibration the boot left on the host (as the transaction stores it)."""
    cal = _calibration(spec, booted, plan, booted["pool_tokens"])
    return kv.plan(dict(spec, pre_load_avail_gib=cal["pre_load_avail_gib"],
                        post_load_avail_gib=cal["post_load_avail_gib"], boot_flags=cal["boot_flags"])), cal


def test_the_issues_qwen3_host_gets_the_free_memory_on_the_first_plan():
    assert kv.cell_bytes(QWEN) == QWEN_CELL
    pinned = kv.plan(dict(QWEN, pool_policy="target"))
    plan = kv.plan(QWEN)
    assert pinned["predicted_pool_tokens"] == 40_960 and pinned["max_running_requests"] == 8
    assert plan["pool_policy"] == "fill" and plan["max_total_tokens"] is None
    assert "--max-total-tokens" not in plan["args"]
    assert plan["predicted_pool_tokens"] > 20 * 40_960  # ~60 GiB a GPU that 'target' leaves idle
    assert 4.0 <= plan["headroom_gib"] < 4.0 * 1.25
    # the concurrency follows the pool: as many full-length requests as it holds
    assert plan["max_running_requests"] == plan["predicted_pool_tokens"] // 40_960 > 8
    assert any("takes what the target leaves" in line for line in plan["assumptions"])


# True P from the whole GPU down to 20 % under the estimate (the least P the fraction is planned for), and the
# weights from 10 % lighter to 15 % heavier than the checkpoint's even split.
ESTIMATE_P = H100_MIB / 1024 - 1.5
PS = [H100_MIB / 1024 - 0.3, ESTIMATE_P, ESTIMATE_P - 3.0, ESTIMATE_P * 0.9, ESTIMATE_P / 1.2 + 0.05]
WEIGHTS = [61.0 / 4 * share for share in (0.9, 1.0, 1.15)]


@pytest.mark.parametrize("true_p, weights", list(itertools.product(PS, WEIGHTS)))
def test_the_first_boot_holds_the_target_and_the_headroom_and_the_next_run_keeps_its_flags(true_p, weights):
    plan = kv.plan(QWEN)
    booted = boot(plan, true_p, true_p - weights, QWEN_CELL)
    assert booted["pool_tokens"] >= 40_960
    assert booted["pool_end_avail_gib"] >= 4.0 - 0.01
    decided = correction({}, booted, {}, booted["pool_tokens"], plan, 40_960, 4.0)
    assert not decided["correct"]  # no corrective restart
    again, _cal = replanned(QWEN, plan, booted)
    assert again["args"] == plan["args"]  # the second run restarts nothing
    assert again["calibrated"] and any("flags of the boot" in line for line in again["assumptions"])
    third, _ = replanned(QWEN, again, booted)
    assert third["args"] == plan["args"]


def test_a_p_further_under_the_estimate_is_corrected_once_then_kept():
    plan = kv.plan(QWEN)
    true_p = ESTIMATE_P * 0.75  # 25 % under: 8 GiB more in use before the weights than any estimate allows
    booted = boot(plan, true_p, true_p - 61.0 / 4, QWEN_CELL)
    assert booted["pool_end_avail_gib"] < 4.0 - 0.01
    decided = correction({}, booted, {}, booted["pool_tokens"], plan, 40_960, 4.0)
    assert decided["correct"] and decided["cause"] == "headroom"
    fixed, _cal = replanned(QWEN, plan, booted)  # the calibrate phase's re-plan: the boot's flags do not hold
    assert fixed["args"] != plan["args"] and fixed["mem_fraction_static"] < plan["mem_fraction_static"]
    rebooted = boot(fixed, true_p, true_p - 61.0 / 4, QWEN_CELL)
    assert rebooted["pool_end_avail_gib"] >= 4.0 - 0.01 and rebooted["pool_tokens"] >= 40_960
    assert not correction({}, rebooted, {}, rebooted["pool_tokens"], fixed, 40_960, 4.0)["correct"]
    # the run after it plans from the corrected boot's calibration (the transaction stores the first; either way
    # the plan that comes out is the corrected one)
    assert replanned(QWEN, fixed, booted)[0]["args"] == fixed["args"]
    assert replanned(QWEN, fixed, rebooted)[0]["args"] == fixed["args"]


def test_a_pinned_boot_is_never_a_headroom_correction():
    plan = kv.plan(dict(QWEN, pool_policy="target"))
    booted = dict(boot(plan, ESTIMATE_P, ESTIMATE_P - 15.25, QWEN_CELL), pool_end_avail_gib=1.0)
    assert correction({}, booted, {}, booted["pool_tokens"], plan, 40_960, 4.0)["cause"] is None


def test_a_target_that_fits_only_tightly_is_pinned_and_the_pin_is_kept():
    # Kimi K2.6 on ct200's GPUs from the estimate (595 GB over TP8): the pool at the highest fraction holds 225,030
    # tokens, under 214,272 plus the 10 % margin, so the plan pins the target, exact for any P and A
    spec = {"model": "kimi-k2.6", "tp_size": 8, "gpu_memory_mib": 97_887, "checkpoint_gib": 595.0,
            "gpu_compute_capability": "12.0", "context_target": 214_272}
    plan = kv.plan(spec)
    assert plan["max_total_tokens"] == 214_272
    assert any("pinned to the target instead" in line for line in plan["assumptions"])
    true_p = 97_887 / 1024 - 1.5
    booted = boot(plan, true_p, true_p - 595.0 / 8, kv.cell_bytes(spec))
    assert booted["pool_tokens"] == plan["max_total_tokens"]
    again, cal = replanned(spec, plan, booted)
    assert cal["boot_flags"]["max_total_tokens"] == 214_272 and cal["pinned"]
    assert again["args"] == plan["args"]  # kept: a calibrated fill would now leave it unpinned, and restart it
    # a new target restarts it anyway: then it is filled from the measured numbers
    other = kv.plan(dict(spec, context_target=200_000, pre_load_avail_gib=cal["pre_load_avail_gib"],
                         post_load_avail_gib=cal["post_load_avail_gib"], boot_flags=cal["boot_flags"]))
    assert other["max_total_tokens"] is None and other["predicted_pool_tokens"] > 214_272


def test_a_boot_whose_flags_no_longer_hold_the_target_is_planned_afresh():
    plan = kv.plan(QWEN)
    booted = boot(plan, ESTIMATE_P, ESTIMATE_P - 15.25, QWEN_CELL)
    cal = _calibration(QWEN, booted, plan, booted["pool_tokens"])
    wider = dict(QWEN, context_target=40_960, pre_load_avail_gib=cal["pre_load_avail_gib"],
                 post_load_avail_gib=cal["post_load_avail_gib"], boot_flags=cal["boot_flags"],
                 min_headroom_gib=8.0)  # the operator asks more headroom: the kept fraction leaves too little
    fresh = kv.plan(wider)
    assert fresh["mem_fraction_static"] < plan["mem_fraction_static"] and fresh["headroom_gib"] >= 8.0
    assert not any("flags of the boot" in line for line in fresh["assumptions"])
    # another target restarts the server anyway: planned afresh from the measured P (a higher fraction than the
    # estimate's, which was planned for a P 20 % lower), the concurrency for the new target
    shorter = kv.plan(dict(wider, min_headroom_gib=4.0, context_target=20_480))
    assert shorter["mem_fraction_static"] > plan["mem_fraction_static"]
    assert 4.0 <= shorter["headroom_gib"] < 4.0 + 0.001 * 80
    assert shorter["max_running_requests"] == shorter["predicted_pool_tokens"] // 20_480
    assert not any("flags of the boot" in line for line in shorter["assumptions"])
    # a boot of another policy is not kept: fill plans afresh from the calibration
    other = kv.plan(dict(wider, min_headroom_gib=4.0, boot_flags=dict(cal["boot_flags"], pool_policy="target")))
    assert not any("flags of the boot" in line for line in other["assumptions"])


def test_the_stored_calibration_reaches_the_plan_through_the_role_s_spec():
    plan = kv.plan(QWEN)
    booted = boot(plan, ESTIMATE_P - 2.0, ESTIMATE_P - 2.0 - 15.25, QWEN_CELL)
    stored = _calibration(QWEN, booted, plan, booted["pool_tokens"])
    knobs = {name: None for name in planspec.KNOBS}
    knobs.update(sglang_model="qwen3-32b", sglang_tp_size=4, sglang_context_target=40_960,
                 sglang_checkpoint_gib=61.0, sglang_gpu_memory_mib=H100_MIB, sglang_pool_policy="fill",
                 sglang_gpu_compute_capability="9.0")
    first_spec, first_server, _ = planspec.spec("h", knobs, [planspec.node_inputs("h", knobs)], "h")
    first = planspec.plan(first_spec, first_server)
    assert first["args"] == plan["args"]
    spec, server, _ = planspec.spec("h", knobs, [planspec.node_inputs("h", knobs, calibration=stored)], "h")
    assert spec["boot_flags"]["pool_policy"] == "fill"
    assert planspec.plan(spec, server)["args"] == first["args"]


@pytest.mark.parametrize("flags, named", [
    ({"mem_fraction_static": 0.9}, "expected a mapping of exactly"),
    ({"mem_fraction_static": 1.5, "max_total_tokens": None, "max_running_requests": 8, "context_length": 100,
      "pool_policy": "fill"}, "fraction between 0 and 1"),
    ({"mem_fraction_static": 0.9, "max_total_tokens": "many", "max_running_requests": 8, "context_length": 100,
      "pool_policy": "fill"}, "positive whole number"),
    ({"mem_fraction_static": 0.9, "max_total_tokens": None, "max_running_requests": 8, "context_length": 100,
      "pool_policy": "most"}, "pool_policy 'most' is none of"),
])
def test_a_stored_boot_record_that_is_not_one_is_refused_with_the_fix(flags, named):
    with pytest.raises(kv.KVPlanError, match="boot_flags") as error:
        kv.plan(dict(QWEN, pre_load_avail_gib=78.0, post_load_avail_gib=62.0, boot_flags=flags))
    assert named in str(error.value) and "ansible_local.sglang_kv" in str(error.value)
