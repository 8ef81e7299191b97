"""sglang_metrics: the role owns --enable-metrics (on by default, off by the knob), every release the planner knows
has the flag, and sglang_extra_args may not set it behind the knob's back."""

import glob
import json
import os

import pytest
import sglang_kvplan
from hostile_render import REPO, exec_start_argv, host_vars, render_all
from sglang_checks import inputs
from sglang_checks.values import refusals

ROLES = inputs.roles_at(os.path.join(REPO, "roles"))

RELEASES = sorted(glob.glob(os.path.join(REPO, "lib", "sglang_kvplan", "releases", "flags-*.json")))


def _refused(**overrides):
    variables = {key: value for key, value in host_vars(**overrides).items() if key.startswith("sglang_")}
    return refusals("ct200", variables)


def test_a_default_deploy_launches_with_metrics(tmp_path):
    argv = exec_start_argv(render_all(sglang_venv=str(tmp_path))["unit"])
    assert argv.count("--enable-metrics") == 1, argv


def test_sglang_metrics_false_launches_without_them(tmp_path):
    argv = exec_start_argv(render_all(sglang_venv=str(tmp_path), sglang_metrics=False)["unit"])
    assert "--enable-metrics" not in argv, argv


@pytest.mark.parametrize("path", RELEASES, ids=[os.path.basename(p) for p in RELEASES])
def test_every_release_the_planner_knows_has_the_flag(path):
    with open(path, encoding="utf-8") as handle:
        table = json.load(handle)
    assert any("--enable-metrics" in flag["names"] and flag["dest"] == "enable_metrics" for flag in table["flags"])


def test_enable_metrics_in_the_extra_args_is_refused_naming_the_knob():
    lines = [line for line in _refused(sglang_extra_args=["--log-requests", "--enable-metrics"])
             if "sglang_extra_args" in line]
    assert len(lines) == 1 and "sglang_metrics" in lines[0] and "--enable-metrics" in lines[0], lines


def test_a_metrics_knob_that_is_no_bool_is_refused_by_the_check_phase():
    knobs = {"sglang_context_target": 200000, "sglang_tp_size": 8, "sglang_metrics": "maybe"}
    found = inputs.host_refusals("ct200", knobs, ["sglang_servers"], ROLES, sglang_kvplan.rules_for)
    assert any("sglang_metrics" in line and "maybe" in line for line in found), found
