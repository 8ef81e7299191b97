"""The calibration keeps the precision the boot's log gives (issue 46 item 6): SGLang logs P, A and the draft's load
with two decimals, and the pool to the token; the calibration refined from that pool re-plans the pool the boot
measured (ct200: 217,612 tokens at --mem-fraction-static 0.953), never the one the two-decimal figures alone give.

Nothing on the way rounds what was logged (lib/sglang_kvplan/calibration.py keeps six decimals, the host's fact file
and the controller's calibration.json keep the JSON numbers as they are): the figures fell back to the logged two
decimals where the refined A sat further from the logged A than A's and P's rounding: a boot whose log has no draft
load took 0 GiB out for the draft where the planner takes its estimate (ct200: 217,629), and a draft weighed from
two logged numbers (its drop, one more rounding each side) moved it past the tolerance (217,777)."""

import os

import pytest
import sglang_kvplan as kv
import yaml
from sglang_checks import planspec

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CT200_POOL, CT200_FRACTION = 217_612, 0.953  # docs/operating.md: ct200's calibrated plan and its boot


def ct200_knobs():
    """ct200's knobs as the check phase reads them (inventory group_vars, host_vars, the role's defaults)."""
    knobs = {}
    with open(os.path.join(REPO, "roles", "sglang", "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    for name in ("group_vars/sglang_servers.yml", "group_vars/kimi_k26_dflash.yml", "host_vars/ct200.yml"):
        with open(os.path.join(REPO, "inventory", name), encoding="utf-8") as handle:
            knobs.update(yaml.safe_load(handle))
    return {name: knobs.get(name, defaults.get(name)) for name in planspec.KNOBS}


def plan_with(calibration):
    """ct200's plan from this calibration (the one the role has in use), as planspec builds it."""
    knobs = ct200_knobs()
    spec, server, _ = planspec.spec("ct200", knobs, [planspec.node_inputs("ct200", knobs, calibration=calibration)],
                                    "ct200")
    return spec, planspec.plan(spec, server)


def ct200_boot(draft_after):
    """A ct200 boot as SGLang logs it: P 85.33, A 19.42, the DFlash draft's load 19.42 -> draft_after, the pool."""
    return {"pre_load_avail_gib": 85.33, "post_load_avail_gib": 19.42, "mem_fraction_static": CT200_FRACTION,
            "pool_tokens": CT200_POOL, "max_total_tokens": None, "draft_pre_load_avail_gib": 19.42,
            "draft_post_load_avail_gib": draft_after}


def test_ct200s_inventory_calibration_plans_the_pool_its_boot_measured():
    _spec, plan = plan_with(None)
    assert plan["mem_fraction_static"] == CT200_FRACTION
    assert "pool 217,612 tokens" in plan["explanation"], plan["explanation"]


def test_two_decimals_alone_say_more_than_the_boot_measured():
    # what a calibration kept at the log's two decimals re-plans: 17 tokens the boot never had
    _spec, plan = plan_with({"pre_load_avail_gib": 85.33, "post_load_avail_gib": 19.42})
    assert "pool 217,629 tokens" in plan["explanation"], plan["explanation"]


@pytest.mark.parametrize("draft_after", [18.86, 18.87, 18.88])
def test_the_calibration_from_ct200s_boot_replans_its_pool_to_the_token(draft_after):
    # the draft's drop as logged, 0.54 to 0.56 GiB: each end of it within the two decimals of the 0.55 it weighs
    spec, _plan = plan_with(None)
    calibration = kv.calibrate(spec, ct200_boot(draft_after))
    assert calibration["post_load_avail_gib"] != 19.42  # refined from the pool, not the logged two decimals
    assert abs(calibration["post_load_avail_gib"] - 19.42) < 0.021
    _spec, plan = plan_with(calibration)
    assert "pool 217,612 tokens" in plan["explanation"], plan["explanation"]


def test_a_boot_without_the_drafts_load_lines_replans_its_pool_not_the_two_decimals():
    # the draft's 'Load weight begin/end' not in the log: the planner's own estimate of its weights is taken out
    spec, _plan = plan_with(None)
    boot = dict(ct200_boot(18.87), draft_pre_load_avail_gib=None, draft_post_load_avail_gib=None)
    calibration = kv.calibrate(spec, boot)
    assert calibration["post_load_avail_gib"] != 19.42 and "draft_weights_gib" not in calibration
    _spec, plan = plan_with(calibration)
    assert "pool 217,612 tokens" in plan["explanation"], plan["explanation"]


def test_a_log_past_every_rounding_still_keeps_the_logged_a():
    # a draft drop of 0.60 GiB against a pool that says 0.55: another cell, fraction or draft than planned
    spec, _plan = plan_with(None)
    calibration = kv.calibrate(spec, ct200_boot(18.82))
    assert calibration["post_load_avail_gib"] == 19.42


def test_without_a_logged_draft_the_tolerance_stays_the_logs_own():
    # the same A 0.0112 GiB off, with the draft given as one number (not two logged readings): the log wins
    spec, _plan = plan_with(None)
    boot = dict(ct200_boot(18.88), draft_pre_load_avail_gib=None, draft_post_load_avail_gib=None,
                draft_weights_gib=0.54)
    assert kv.calibrate(spec, boot)["post_load_avail_gib"] == 19.42
