"""The sglang role's service settings (lib/sglang_checks/service.py): refused by the check phase, through
inputs.host_refusals, before anything connects; the role used alone runs the same function (tasks/inputs.yml)."""

import os

import pytest
import sglang_kvplan
from sglang_checks import inputs, service

ROLES = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "roles")


def refused(**variables):
    roles = inputs.roles_at(os.path.realpath(ROLES))
    return inputs.host_refusals("h", dict(variables, group_names=["sglang_servers"]), {"sglang_servers"}, roles,
                                sglang_kvplan.rules_for)


def test_the_defaults_pass():
    assert refused() == []


@pytest.mark.parametrize(("variables", "words"), [
    ({"sglang_version": "0.5.23 "}, ["sglang_version is '0.5.23 '", "no spaces"]),
    ({"sglang_kernel_wheels": [{"name": "k", "version": "1"}]}, ["sglang_kernel_wheels item(s) 0 have no src"]),
    ({"sglang_kernel_sources": [{"name": "k"}]}, ["sglang_kernel_sources item(s) 0 have no repo"]),
    ({"sglang_host": "0.0.0.0"}, ["sglang_host is 0.0.0.0 but sglang_api_key is empty"]),
    ({"sglang_calibration": {"pre_load_avail": 85.3, "post_load_avail_gib": 19.4}},
     ["sglang_calibration has keys post_load_avail_gib, pre_load_avail", "exactly"]),
    ({"sglang_speculative": {"algorithm": "DFLASH", "draft_path": "/srv/x"}},
     ["sglang_speculative has unknown key(s) draft_path", "draft_model_path"]),
])
def test_the_check_phase_refuses_what_the_role_would_refuse_later(variables, words):
    text = " ".join(refused(**variables))
    for word in words:
        assert word in text, text


def test_what_may_pass_passes():
    assert refused(sglang_host="0.0.0.0", sglang_api_key="k" * 24) == []
    assert refused(sglang_host="::1") == []
    assert refused(sglang_calibration={"pre_load_avail_gib": 85.3, "post_load_avail_gib": 19.4}) == []
    assert refused(sglang_speculative={"algorithm": "DFLASH", "draft_model_path": "/srv/models/d",
                                       "draft_model_hf_repo": "org/d", "num_steps": 3}) == []


def test_the_speculative_keys_are_derived_from_the_planner_s_not_listed_again():
    # the planner's keys less what the role measures, plus where the draft comes from
    assert set(service.SPECULATIVE_OPERATOR_KEYS) < set(sglang_kvplan.spec.SPECULATIVE_KEYS) | {
        "draft_model_hf_repo", "draft_model_hf_revision"}
    assert "draft_model_config" not in service.SPECULATIVE_OPERATOR_KEYS
