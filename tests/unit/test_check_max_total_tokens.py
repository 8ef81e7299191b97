"""A pool sized by hand (issue 46 item 6): sglang_max_total_tokens, for whatever the planner refuses to size. The knob
is checked by name before anything connects, reaches the planner's spec as max_total_tokens, and is the fix that
sglang_extra_args' refusal of --max-total-tokens names (the planner's refusals say "size it by hand")."""

import os

import pytest
import sglang_kvplan
import yaml
from sglang_checks import inputs, planspec, values

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def refused(value):
    return values.refusals("h", {"sglang_max_total_tokens": value})


@pytest.mark.parametrize("value, words", [
    ("many", "is not a whole number"),
    (0, "is out of range"),
    (-5, "is out of range"),
    (True, "is a boolean, not a number"),
    (2.5, "is not a whole number"),
    (float("inf"), "is not a whole number"),
    (10**9, "is out of range"),  # a typo's extra digits: no GPU set holds a billion tokens
    ([100000], "is not a whole number"),
], ids=["text", "zero", "negative", "bool", "fraction", "inf", "absurd", "list"])
def test_a_bad_pool_is_refused_by_name_with_the_fix(value, words):
    found = refused(value)
    assert len(found) == 1, found
    assert found[0].startswith("h: sglang_max_total_tokens is ") and words in found[0], found
    assert "give a whole number from 1 to 100000000" in found[0]


@pytest.mark.parametrize("value", [None, 1, 217_612, "217612", 100_000_000])
def test_a_pool_or_nothing_is_accepted(value):
    assert refused(value) == []


def test_the_argument_spec_types_it_and_defaults_to_null():
    roles = inputs.roles_at(os.path.join(REPO, "roles"))
    assert roles.specs["sglang"]["sglang_max_total_tokens"]["type"] == "int"
    assert roles.default("sglang_max_total_tokens") is None
    found = inputs.spec_refusals("h", {"sglang_max_total_tokens": "lots"}, roles, ["sglang"])
    assert found and "sglang_max_total_tokens" in found[0], found
    # the check phase reads it from the inventory like every planner knob
    assert "sglang_max_total_tokens" in planspec.KNOBS


@pytest.mark.parametrize("item", [["--max-total-tokens", "5000"], ["--max-total-tokens=5000"],
                                  ["--max-total-tok", "9"]])
def test_extra_args_refusal_names_the_knob_as_the_fix(item):
    found = values.refusals("h", {"sglang_extra_args": item})
    assert len(found) == 1, found
    assert "sets --max-total-tok" in found[0] and "set sglang_max_total_tokens to it" in found[0], found
    # the other owned options keep their plain fix
    other = values.refusals("h", {"sglang_extra_args": ["--context-length", "5000"]})
    assert other[0].endswith("remove it from sglang_extra_args."), other


def _spec(**extra):
    knobs = {name: None for name in planspec.KNOBS}
    knobs.update(sglang_model="qwen3-32b", sglang_tp_size=4, sglang_version="0.5.23", sglang_context_target=40_960,
                 sglang_gpu_memory_mib=81_559, **extra)
    return planspec.spec("h", knobs, [planspec.node_inputs("h", knobs)], "h")[0]


def test_the_spec_carries_the_hand_set_pool():
    assert "max_total_tokens" in planspec.KNOB_KEYS
    assert _spec(sglang_max_total_tokens=123_456)["max_total_tokens"] == 123_456
    assert _spec()["max_total_tokens"] is None  # unset: the planner sizes the pool


def test_the_plan_pins_the_hand_set_pool():
    knobs = {name: None for name in planspec.KNOBS}
    knobs.update(sglang_model="qwen3-32b", sglang_tp_size=4, sglang_version="0.5.23", sglang_context_target=40_960,
                 sglang_gpu_memory_mib=81_559, sglang_max_total_tokens=123_456)
    spec, server, _ = planspec.spec("h", knobs, [planspec.node_inputs("h", knobs)], "h")
    args = planspec.plan(spec, server)["args"]
    assert args[args.index("--max-total-tokens") + 1] == "123456", args


def test_a_hand_set_pool_under_the_target_is_refused_naming_both_knobs():
    knobs = {name: None for name in planspec.KNOBS}
    knobs.update(sglang_model="qwen3-32b", sglang_tp_size=4, sglang_version="0.5.23", sglang_context_target=40_960,
                 sglang_gpu_memory_mib=81_559, sglang_max_total_tokens=20_000)
    spec, server, _ = planspec.spec("h", knobs, [planspec.node_inputs("h", knobs)], "h")
    with pytest.raises(sglang_kvplan.KVPlanError, match="sglang_max_total_tokens 20,000 is less than context_target"):
        planspec.plan(spec, server)


def test_the_defaults_and_the_spec_agree():
    with open(os.path.join(REPO, "roles", "sglang", "defaults", "main.yml"), encoding="utf-8") as handle:
        assert yaml.safe_load(handle)["sglang_max_total_tokens"] is None
