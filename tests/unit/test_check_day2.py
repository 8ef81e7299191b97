"""The check phase's day-2 rules (issue 27, probe day 2 N1, N2, N6, N7, #7, #13): folders that overlap, a misspelled
secret, typos under any prefix, case or separators, "inf" for a whole-number knob, late refusals moved first."""

import os

import pytest
import sglang_kvplan
from sglang_checks import inputs, values

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = inputs.roles_at(os.path.join(REPO, "roles"))


def refusals(variables):
    return inputs.host_refusals("ct200", variables, ["sglang_servers"], ROLES, sglang_kvplan.rules_for)


@pytest.mark.parametrize("variables, one, other", [
    ({"sglang_venv": "/opt/sglang"}, "sglang_venv", "sglang_runtimes_dir"),
    ({"sglang_venv": "/opt/sglang/runtimes"}, "sglang_runtimes_dir", "sglang_venv"),
    ({"sglang_runtimes_dir": "/opt/sglang/venv/runtimes"}, "sglang_venv", "sglang_runtimes_dir"),
    ({"sglang_backup_dir": "/opt/sglang/runtimes"}, "sglang_backup_dir", "sglang_runtimes_dir"),
    ({"sglang_backup_dir": "/var/lib/sglang/backups"}, "sglang_home", "sglang_backup_dir"),
    ({"sglang_model_path": "/opt/sglang/runtimes/m"}, "sglang_runtimes_dir", "sglang_model_path"),
    ({"sglang_home": "/srv/models/kimi-k2.6"}, "sglang_home", "sglang_model_path"),
    ({"sglang_speculative": {"algorithm": "EAGLE3", "draft_model_path": "/srv/models/kimi-k2.6/draft"}},
     "sglang_model_path", "sglang_speculative.draft_model_path"),
])
def test_overlapping_folders_are_refused_naming_both(variables, one, other):
    found = [r for r in refusals(variables) if one in r and other in r]
    assert found, refusals(variables)
    assert found[0].startswith("ct200: ")


def test_side_by_side_folders_and_weights_under_home_pass():
    assert refusals({"sglang_model_path": "/var/lib/sglang/models/kimi", "sglang_backup_dir": "/srv/backups/sglang",
                     "sglang_runtimes_dir": "/opt/sglang/runtimes", "sglang_venv": "/opt/sglang/venv"}) == []


@pytest.mark.parametrize("name", ["sglang_api_kye", "sglang_apikey", "sglang_hf_tokn", "sglang_router_admin_key",
                                  "sglang_router_admin_api_kye"])
def test_a_misspelled_secret_is_never_echoed(name):
    (refusal,) = refusals({name: "SEKRET-Typo-123"})
    assert "SEKRET" not in refusal and "(a string, not shown)" in refusal and name in refusal


def test_a_vaulted_value_is_never_echoed():
    from ansible.parsing.vault import EncryptedString, VaultLib, VaultSecret

    cipher = VaultLib([("default", VaultSecret(b"pw"))]).encrypt("VAULTED-Key-999", secret=VaultSecret(b"pw"))
    value = EncryptedString(ciphertext=cipher.decode())
    assert inputs.is_vaulted(value) and not inputs.is_vaulted("VAULTED-Key-999")
    assert "VAULTED" not in inputs.shown("sglang_model_path", value)
    (refusal,) = refusals({"sglang_api_kye": value})
    assert "VAULTED" not in refusal


@pytest.mark.parametrize("name, close", [
    ("sglan_tp_size", "sglang_tp_size"), ("sglangtp_size", "sglang_tp_size"), ("SGLANG_TP_SIZE", "sglang_tp_size"),
    ("Sglang_tp_size", "sglang_tp_size"), ("tp_size", "sglang_tp_size"), ("sglang-tp-size", "sglang_tp_size"),
    ("nvidia_drivr_branch", "nvidia_driver_branch"), ("nvidiadriver_branch", "nvidia_driver_branch"),
    ("prefligth_weights_free_gib", "preflight_weights_free_gib"), ("context_target", "sglang_context_target")])
def test_typos_under_any_prefix_case_or_separators_are_refused(name, close):
    assert inputs.is_checked_name(name, ROLES.known)
    (refusal,) = refusals({name: 4})
    assert "unknown variable %s" % name in refusal and "Did you mean %s" % close in refusal


@pytest.mark.parametrize("name", ["port", "host", "user", "ansible_user", "node_exporter_port", "inventory_hostname",
                                  "group_names", "my_cluster", "datacenter", "_sglang_router_etc", "_sglang_plan"])
def test_the_operators_other_variables_are_not_taken_for_typos(name):
    assert not inputs.is_checked_name(name, ROLES.known)


@pytest.mark.parametrize("name", ["sglang_tp_size", "sglang_port", "sglang_context_target", "sglang_backup_keep",
                                  "sglang_dist_timeout", "nvidia_driver_branch"])
@pytest.mark.parametrize("bad", ["inf", "-inf", "nan", float("inf"), "1e999"])
def test_inf_for_a_number_knob_names_the_variable(name, bad):
    found = refusals({name: bad})
    assert found and all(r.startswith("ct200: ") for r in found)
    assert any(name in r for r in found), found


@pytest.mark.parametrize("variables, words", [
    ({"sglang_reprove_after_days": "nan"}, "sglang_reprove_after_days"),
    ({"sglang_reprove_after_days": 1e308}, "sglang_reprove_after_days"),
    ({"sglang_reprove_after_days": float("inf")}, "sglang_reprove_after_days"),
    ({"sglang_reprove_after_days": -1}, "sglang_reprove_after_days is -1"),  # was said only at prove.yml
    ({"sglang_kernel_wheels": [{"name": "k"}]}, "has no src"),
    ({"sglang_kernel_sources": [{"ref": "v1"}]}, "has no repo"),
    ({"sglang_version": "0.5.23 "}, "sglang_version is '0.5.23 '"),
    ({"sglang_calibration": {"P": 85.3, "A": 19.4}}, "not exactly pre_load_avail_gib and post_load_avail_gib"),
])
def test_values_refused_after_the_host_changed_are_refused_first(variables, words):
    found = refusals(variables)
    assert any(words in r for r in found), found


def test_a_whole_calibration_passes():
    assert values.refusals("ct200", {"sglang_calibration": {"pre_load_avail_gib": 85.3,
                                                            "post_load_avail_gib": 19.4}}) == []


@pytest.mark.parametrize("host", ["../../../tmp/evilhost", "a/b", "..", ".", "-x", "a..b"])
def test_an_inventory_host_name_that_would_write_outside_reports_is_refused(host):
    found = inputs.host_refusals(host, {}, ["sglang_servers"], ROLES, sglang_kvplan.rules_for)
    assert any("inventory host name" in r for r in found), found


@pytest.mark.parametrize("host", ["ct200", "gpu-1.example.net", "10.0.0.5", "fe80::1", "node_3"])
def test_plain_inventory_host_names_pass(host):
    assert values.host_name_refusals(host) == []


@pytest.mark.parametrize("variables, words", [
    ({"sglang_speculative": {"algorithm": "EAGLE3", "draft_model": ["a"]}}, "draft_model ['a']"),
    ({"sglang_speculative": {"algorithm": "EAGLE3", "draft_model": {"a": 1}}}, "draft_model {'a': 1}"),
    ({"sglang_measured_boots": [{"mem_fraction_static": 0.85, "pool_tokens": 1, "setup": {"foo": 1}}]},
     "whose setup names foo"),
])
def test_values_that_broke_the_planner_with_a_python_error_are_sentences(variables, words):
    found = refusals(variables)
    assert any(words in r for r in found), found


def test_a_gqa_config_whose_hidden_size_is_below_its_head_count_is_a_sentence():
    config = {k: v for k, v in sglang_kvplan.load_presets()["llama-3.1-8b"]["config"].items() if k != "head_dim"}
    config["hidden_size"] = 16  # 32 heads: a head of no dimension
    with pytest.raises(sglang_kvplan.KVPlanError, match="hidden_size 16 is smaller than num_attention_heads"):
        sglang_kvplan.plan({"model": None, "model_config": config, "context_target": 50_000,
                            "gpu_memory_mib": 97_887, "checkpoint_gib": 15.0})


@pytest.mark.parametrize("change, words", [
    ({"mem_fraction_static": 5}, "mem_fraction_static 5.0 is not in (0, 1]"),
    ({"mem_fraction_static": float("nan")}, "mem_fraction_static nan"),
    ({"pre_load_avail_gib": float("inf")}, "must be finite GiB"),
    ({"pool_tokens": -5}, "pool_tokens -5 is below 0"),
    ({"max_total_tokens": "x"}, "max_total_tokens 'x' is not a whole number"),
])
def test_a_boot_sglang_cannot_log_is_refused_by_the_calibration_naming_it(change, words):
    boot = dict({"pre_load_avail_gib": 85.334, "post_load_avail_gib": 19.419, "mem_fraction_static": 0.85,
                 "pool_tokens": 101134}, **change)
    with pytest.raises(sglang_kvplan.KVPlanError) as error:
        sglang_kvplan.calibrate({"model": "kimi-k2.6", "tp_size": 8}, boot)
    assert words in str(error.value)


def test_a_boot_whose_free_memory_rose_across_the_load_is_calibrated_with_a_equal_to_p():
    # the real 0.5.23 server on a CPU under make test logged P 19.61 and A 19.63 (the host's free memory moved): the
    # weights took nothing measurable; what the log said is kept beside it
    boot = {"pre_load_avail_gib": 85.334, "post_load_avail_gib": 85.354, "mem_fraction_static": 0.85,
            "pool_tokens": 101134}
    found = sglang_kvplan.calibrate({"model": "kimi-k2.6", "tp_size": 8}, boot)
    assert found["post_load_avail_gib"] <= found["pre_load_avail_gib"] == 85.334
    assert found["logged_post_load_avail_gib"] == 85.354


@pytest.mark.parametrize("tp, pp", [("abc", None), (0, None), (-2, None), (8, 0), (True, None), (float("inf"), 1)])
def test_a_server_node_placement_with_sizes_that_are_not_gpu_counts_is_a_sentence(tp, pp):
    with pytest.raises(sglang_kvplan.KVPlanError, match="give a whole number of GPUs"):
        sglang_kvplan.node_placement(["a", "b"], "a", tp, pp)


@pytest.mark.parametrize("variables, words", [
    ({"sglang_package": "--index-url=http://evil.example/simple"}, "sglang_package is"),
    ({"sglang_package": "sglang\n--index-url x"}, "sglang_package is"),
    ({"sglang_extras": ["all", "--pre"]}, "sglang_extras is"),
])
def test_a_package_or_extra_that_pip_would_read_as_an_option_is_refused(variables, words):
    assert any(words in r for r in refusals(variables)), refusals(variables)


@pytest.mark.parametrize("value, kind", [(["A=1"], "a list"), ([{"A": "1"}], "a list"), (5, "a number")])
def test_an_environment_that_is_not_a_mapping_is_a_sentence_with_its_shape(value, kind):
    # probe day 2 B: sglang_environment as a list reached the env template ("dictsort failed:
    # '_AnsibleLazyTemplateList' object has no attribute 'items'"); ansible-core's own words named a Python class
    found = [r for r in refusals({"sglang_environment": value}) if "sglang_environment" in r]
    assert len(found) == 1, refusals({"sglang_environment": value})
    assert found[0].startswith("ct200: sglang_environment is %s (%r), not a mapping. Write it as" % (kind, value))
    assert "class" not in found[0]


def test_an_environment_variable_without_a_value_says_null_not_a_python_type():
    found = [r for r in refusals({"sglang_environment": {"A": None}}) if "sglang_environment" in r]
    assert "gives A no value (null)" in found[0] and "NoneType" not in found[0], found


def test_the_role_used_alone_refuses_a_list_environment_before_its_templates(tmp_path):
    import json
    import subprocess
    import sys

    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                             "tests/unit/hostile_values_localhost.yml", "-e",
                             json.dumps({"sglang_environment": ["A=1", "B=2"]})],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    out = result.stdout + result.stderr
    assert result.returncode == 2, out
    assert "localhost: sglang_environment is a list (['A=1', 'B=2']), not a mapping" in out, out
    assert "dictsort" not in out and "Traceback" not in out and "object has no attribute" not in out
