"""The weight loader's options per release (lib/sglang_kvplan/loader.py): what each release has is read from its
flag table (releases/flags-<version>.json, extracted from the wheels), the default of multi-threaded loading from
the release's model_loader/loader.py (cited in loader.py)."""

import json

import pytest
from sglang_checks import extra_args, flags
from sglang_kvplan import loader
from sglang_kvplan.spec import KVPlanError

MULTITHREAD = ["--model-loader-extra-config", '{"enable_multithread_load":true}']


def plan(version, knob="auto", extra=(), shards=None):
    given = extra_args.option_given(flags.sglang_table(version), list(extra), loader.DESTS)
    return loader.loader_args(version, loader.release_flags(version), knob, given, shards)


@pytest.mark.parametrize("version, prefetch_flag", [("0.5.9", False), ("0.5.10", False), ("0.5.10.post1", False),
                                                    ("0.5.11", True), ("0.5.15", True), ("0.5.23", True)])
def test_the_flag_tables_say_which_release_has_prefetch(version, prefetch_flag):
    found = loader.release_flags(version)
    assert found[loader.EXTRA_CONFIG] == "{}"
    assert (loader.PREFETCH in found) is prefetch_flag
    if prefetch_flag:
        assert found[loader.PREFETCH] is False and found[loader.PREFETCH_THREADS] == 4


def test_059_gets_multithreaded_loading_it_leaves_off():
    args, notes = plan("0.5.9")
    assert args == MULTITHREAD and "off by default in 0.5.9" in notes[0]
    assert json.loads(args[1]) == {"enable_multithread_load": True}


def test_0510_has_multithread_on_and_no_prefetch_so_nothing():
    assert plan("0.5.10") == ([], [])


@pytest.mark.parametrize("version", ["0.5.11", "0.5.15", "0.5.23", "0.5.24"])
def test_prefetch_where_the_release_has_it_with_multithread_named(version):
    args, _ = plan(version, shards=64)
    assert args == [loader.PREFETCH] + MULTITHREAD


def test_one_shard_gets_no_prefetch():
    assert plan("0.5.23", shards=1) == ([], [])
    assert plan("0.5.9", shards=1)[0] == MULTITHREAD


def test_off_leaves_the_releases_defaults():
    args, notes = plan("0.5.9", knob="off")
    assert args == [] and "defaults" in notes[0]


@pytest.mark.parametrize("item", ["--weight-loader-prefetch-checkpoints", "--model-loader-extra-config={}",
                                  "--weight-loader-prefetch-num", "--weight-loader-prefetch-num-threads=8"])
def test_an_operators_loader_flag_with_auto_is_refused_by_name(item):
    with pytest.raises(KVPlanError) as refused:
        plan("0.5.23", extra=[item])
    message = str(refused.value)
    assert "sglang_extra_args sets %s" % item.split("=")[0] in message
    assert "sglang_load_accelerate: off" in message


def test_an_operators_loader_flag_with_off_is_theirs():
    assert plan("0.5.23", knob="off", extra=["--weight-loader-prefetch-checkpoints"])[0] == []


@pytest.mark.parametrize("knob", ["on", "", None, True])
def test_a_bad_knob_names_the_variable_and_the_choices(knob):
    with pytest.raises(KVPlanError, match=r"sglang_load_accelerate is .*'auto'.*'off'"):
        plan("0.5.23", knob=knob)


def test_an_unknown_version_plans_nothing_it_cannot_cite():
    assert loader.release_flags("main") == {} and loader.release_flags("0.4.3") == {}


# ---- the plan carries them (lib/sglang_checks/planspec.py loader_args, planhost.plan_host) -------------------

def test_the_demo_plan_carries_the_loader_flags(tmp_path):
    from test_check_fleet import ansible_inventory, in_a_template
    hosts, hostvars, _, ansible_loader = ansible_inventory(str(tmp_path), 1)
    plans = in_a_template("hosts | sglang_plan_hosts(hostvars)", ansible_loader, hosts=hosts, hostvars=hostvars)
    args = plans[hosts[0]]["plan"]["args"]
    assert args[-3:] == [loader.PREFETCH] + MULTITHREAD  # ct200: 0.5.23, prefetch default off there
    assert any(loader.PREFETCH in note for note in plans[hosts[0]]["plan"]["assumptions"])


def test_the_planspec_reads_the_knob_and_the_extra_args():
    from sglang_checks import planspec
    assert planspec.loader_args({"sglang_version": "0.5.9", "sglang_load_accelerate": "auto"})[0] == MULTITHREAD
    assert planspec.loader_args({"sglang_version": "0.5.23", "sglang_load_accelerate": "off"})[0] == []
    with pytest.raises(KVPlanError, match="sglang_extra_args sets --weight-loader-prefetch-checkpoints"):
        planspec.loader_args({"sglang_version": "0.5.23", "sglang_load_accelerate": "auto",
                              "sglang_extra_args": ["--weight-loader-prefetch-checkpoints"]})
