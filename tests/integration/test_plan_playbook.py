"""The planner through Ansible: playbooks/plan.yml on the inventory, and the filters on localhost."""

import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def run(*args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    return subprocess.run([PLAYBOOK_BIN, *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)


def test_plan_playbook_prints_the_ct200_plan_without_connecting():
    # ansible_host is unreachable here: any connection attempt would fail the run.
    result = run("playbooks/plan.yml", "-l", "ct200", "-e", "ansible_host=192.0.2.1")
    assert result.returncode == 0, result.stdout + result.stderr
    # DFlash on 0.5.23, pool_policy fill: no pin, the fraction the most that leaves the 4 GiB headroom of P
    # (1 - 4 / 85.334, floored), the pool all the rest: more than the target plus the 16 draft tokens
    assert ("ct200: target 200,000 -> pool 217,612 tokens (--mem-fraction-static 0.953), headroom 4.0 GiB, "
            "calibrated") in result.stdout
    for flag in ("--trust-remote-code", "--speculative-algorithm DFLASH", "--speculative-num-draft-tokens 16"):
        assert flag in result.stdout
    assert "measured boot: f 0.850 -> 101,134 tokens; the plan's formula: 101,135" in result.stdout
    assert "Unhandled error" not in result.stderr


def test_editing_the_target_changes_the_plan():
    result = run("playbooks/plan.yml", "-e", "sglang_context_target=150000")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "target 150,000 -> pool 217,612 tokens (--mem-fraction-static 0.953)" in result.stdout
    assert "--context-length 150000 --mem-fraction-static 0.953" in result.stdout
    pinned = run("playbooks/plan.yml", "-e", "sglang_context_target=150000", "-e", "sglang_pool_policy=target")
    assert "target 150,000 -> pool 150,016 tokens (pinned by --max-total-tokens 150,016" in pinned.stdout


def test_uncalibrated_host_gets_an_estimate_with_assumptions():
    result = run("playbooks/plan.yml", "-e", '{"sglang_calibration": {}}')
    assert result.returncode == 0, result.stdout + result.stderr
    assert "estimated (P 94.09 GiB, A 24.84 GiB)" in result.stdout
    assert "nvidia-smi memory.total 97887 MiB" in result.stdout


def test_target_that_cannot_fit_fails_with_numbers():
    result = run("playbooks/plan.yml", "-e", "sglang_context_target=400000")
    assert result.returncode != 0
    assert "27.14 GiB of KV cache per GPU (400,064 tokens x 72,832 B/token" in result.stdout
    assert "fp8_e4m3" in result.stdout


# PP 2 with the draft off: SGLang refuses DFLASH with pp_size > 1 at launch (issue 26), so the plan does too; and on
# a host of 16 GPUs (ct200's inventory says 8, and a plan taking 16 there is refused: test_check_gpu_count.py)
@pytest.mark.parametrize("extra", [["-e", "sglang_kv_cache_dtype=fp8_e4m3"],
                                   ["-e", "sglang_pp_size=2", "-e", '{"sglang_speculative": {}}',
                                    "-e", "sglang_gpu_count=16"]])
def test_the_planners_own_fix_is_not_refused_for_boots_of_another_setup(extra):
    # issue 27 (probe day 2 N10): the boots name the KV dtype, TP and PP they ran under, so a plan of another
    # setup predicts each boot under its own setup instead of blaming the calibration
    result = run("playbooks/plan.yml", "-l", "ct200", "-e", "sglang_context_target=250000", *extra)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "does not predict" not in result.stdout
    assert "measured boot: f 0.850 -> 101,134 tokens; the plan's formula: 101,135" in result.stdout


@pytest.mark.parametrize("extra", [[], ["-e", "target=200000"]])
def test_filters_in_a_localhost_play(extra):
    result = run("tests/integration/filters_localhost.yml", *extra)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "failed=0" in result.stdout


def test_more_gpus_is_suggested_as_the_release_accepts_them():
    # issue 26: ct200's DFLASH draft makes SGLang refuse pp_size > 1 at launch, so "more GPUs" doubles TP instead
    result = run("playbooks/plan.yml", "-l", "ct200", "-e", "sglang_context_target=250000")
    assert result.returncode != 0
    assert "use more GPUs: with sglang_tp_size 16 (16 GPUs" in result.stdout
    assert "sglang_pp_size 2" not in result.stdout


def _kept_for_ct200(root, pre, post, **setup):
    """A calibration ct200's last run kept on the controller, as the report step writes it (kept.write)."""
    sys.path.insert(0, os.path.join(REPO, "lib"))
    from sglang_checks import kept
    from sglang_state.model_inputs import calibration_key

    knobs = dict({"model_path": "/srv/models/kimi-k2.6", "tp_size": 8, "pp_size": 1, "dp_size": 1,
                  "enable_dp_attention": False, "version": "0.5.23", "pool_rules": "", "kv_cache_dtype": "auto",
                  "nodes": [], "speculative": {"algorithm": "DFLASH",
                                               "draft_model_path": "/srv/models/kimi-k2.6-dflash"}}, **setup)
    key = calibration_key(knobs, {"sha256": "5f2b1c0d9e8a77"}, "DFLASH:/srv/models/kimi-k2.6-dflash@1ba1ef79de87")
    kept.write(str(root), "ct200", key, {"pre_load_avail_gib": pre, "post_load_avail_gib": post})
    return key


def test_the_check_phase_plans_from_the_calibration_the_hosts_last_run_kept(tmp_path):
    # issue 35 item 6: a run keeps the calibration the role plans the host from (reports/<host>/calibration.json);
    # the check phase and make plan then plan from the same P and A, not the inventory's, and say where they came from
    _kept_for_ct200(tmp_path, 86.5, 20.5)
    # (the seed's boots in host_vars are checked against the calibration in use: numbers made up for this test
    # would not predict them, so they are left out)
    result = run("playbooks/plan.yml", "-l", "ct200", "-e", "sglang_report_dir=%s" % tmp_path,
                 "-e", '{"sglang_measured_boots": []}')
    assert result.returncode == 0, result.stdout + result.stderr
    assert "calibrated (P 86.500 GiB, A 20.500 GiB)" in result.stdout, result.stdout
    assert "P and A from %s/ct200/calibration.json (the host's last run" % tmp_path in result.stdout
    # the refusal's maximum is the one the role computes from that calibration on the host
    refused = run("playbooks/plan.yml", "-l", "ct200", "-e", "sglang_report_dir=%s" % tmp_path,
                  "-e", '{"sglang_measured_boots": []}', "-e", "sglang_context_target=300000")
    assert refused.returncode != 0
    largest = int(re.search(r"lower sglang_context_target to at most ([\d,]+)", refused.stdout).group(1)
                  .replace(",", ""))
    sys.path.insert(0, os.path.join(REPO, "lib"))
    import sglang_kvplan
    from sglang_checks import planspec

    knobs = {name: None for name in planspec.KNOBS}
    knobs.update(sglang_model="kimi-k2.6", sglang_tp_size=8, sglang_context_target=300_000, sglang_version="0.5.23",
                 sglang_gpu_memory_mib=97_887, sglang_min_headroom_gib=4.0, sglang_pool_policy="fill",
                 sglang_preload_overhead_gib=1.5, sglang_uncalibrated_margin=0.1, sglang_speculative={
                     "algorithm": "DFLASH", "draft_model_path": "/srv/models/kimi-k2.6-dflash",
                     "draft_model": "kimi-k2.6-dflash"})
    role_view = [planspec.node_inputs("ct200", knobs, calibration={"pre_load_avail_gib": 86.5,
                                                                   "post_load_avail_gib": 20.5})]
    draft = sglang_kvplan.load_presets()["kimi-k2.6-dflash"]["config"]
    spec, server, _ = planspec.spec("ct200", knobs, role_view, "ct200", {"draft_model_config": draft,
                                                                         "draft_checkpoint_gib": 4.4})
    with pytest.raises(sglang_kvplan.KVPlanError, match="at most %s," % format(largest, ",")):
        planspec.plan(spec, server)


def test_a_kept_calibration_of_another_setup_is_named_and_not_used(tmp_path):
    _kept_for_ct200(tmp_path, 86.5, 20.5, tp_size=4)
    result = run("playbooks/plan.yml", "-l", "ct200", "-e", "sglang_report_dir=%s" % tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "calibrated (P 85.334 GiB, A 19.419 GiB)" in result.stdout  # the inventory's
    assert "ct200/calibration.json is of another setup" in result.stdout
