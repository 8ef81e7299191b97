"""The planner through Ansible: playbooks/plan.yml on the inventory, and the filters on localhost."""

import os
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
