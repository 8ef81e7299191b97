"""Presets for the models users serve most (issue 46 item 7): GLM-4.6, MiniMax-M2, Qwen3-VL-235B-A22B and
Mistral-Small-3.2. Each preset's config is its published config.json's (tests/fixtures/model_configs, SOURCES.md
says where each comes from), its launch flags are its model card's SGLang command in names SGLang 0.5.23's parser
accepts, and each is planned at TP 8 on an H200."""

import json
import os

import pytest
import sglang_kvplan as kv

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(REPO, "tests", "fixtures", "model_configs")
# preset -> (fixture folder, the launch the model card's SGLang command gives)
PUBLISHED = {
    "glm-4.6": ("glm-4.6", {"tool_call_parser": "glm45", "reasoning_parser": "glm45"}),
    "minimax-m2": ("minimax-m2", {"trust_remote_code": True, "tool_call_parser": "minimax-m2",
                                  "reasoning_parser": "minimax-append-think"}),
    "qwen3-vl-235b-a22b": ("qwen3-vl-235b-a22b-instruct", {}),
    "mistral-small-3.2": ("mistral-small-3.2-24b-instruct", {"tool_call_parser": "mistral"}),
}
# an H200 as nvidia-smi reports it (memory.total, compute capability)
H200 = {"gpu_memory_mib": 143_771, "gpu_compute_capability": "9.0", "tp_size": 8, "version": "0.5.23"}


def published(folder):
    with open(os.path.join(FIXTURES, folder, "config.json"), encoding="utf-8") as handle:
        return json.load(handle)


def differences(preset, config, where="config"):
    """Where the preset's fields differ from the published config's (every preset field must be in it, equal)."""
    out = []
    for key, value in preset.items():
        if key not in config:
            out.append("%s.%s is not in the published config.json" % (where, key))
        elif isinstance(value, dict) and isinstance(config[key], dict):
            out += differences(value, config[key], "%s.%s" % (where, key))
        elif value != config[key]:
            out.append("%s.%s is %r, the published config.json says %r" % (where, key, value, config[key]))
    return out


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_each_preset_is_its_published_config(name):
    preset = kv.load_presets()[name]
    assert differences(preset["config"], published(PUBLISHED[name][0])) == []
    assert preset["checkpoint_gib"] > 0


def test_a_field_that_is_not_the_published_ones_is_found():
    # the comparison itself: a changed head count and an invented key are both named
    config = published("glm-4.6")
    preset = dict(kv.load_presets()["glm-4.6"]["config"], num_key_value_heads=4, kv_heads=8)
    found = differences(preset, config)
    assert "config.num_key_value_heads is 4, the published config.json says 8" in found
    assert "config.kv_heads is not in the published config.json" in found


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_each_presets_launch_is_its_model_cards_in_the_releases_names(name):
    launch = kv.load_presets()[name].get("launch") or {}
    assert launch == PUBLISHED[name][1]
    with open(os.path.join(REPO, "lib", "sglang_kvplan", "releases", "flags-0.5.23.json"), encoding="utf-8") as handle:
        flags = {flag["dest"]: flag for flag in json.load(handle)["flags"]}
    for key in ("tool_call_parser", "reasoning_parser"):
        if key in launch:
            assert launch[key] in flags[key]["choices"], (name, key, launch[key])


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_each_preset_is_planned_at_tp8_on_an_h200(name):
    config = kv.load_presets()[name]["config"]
    window = (config.get("text_config") or config)["max_position_embeddings"]
    target = min(window, 131_072)
    plan = kv.plan(dict(H200, model=name, context_target=target))
    assert plan["max_total_tokens"] is None or plan["max_total_tokens"] >= target
    assert "--context-length" in plan["args"] and str(target) in plan["args"], plan["args"]
    launch = kv.load_presets()[name].get("launch") or {}
    for key in ("tool_call_parser", "reasoning_parser"):
        flag = "--" + key.replace("_", "-")
        if key in launch:
            assert plan["args"][plan["args"].index(flag) + 1] == launch[key]
        else:
            assert flag not in plan["args"]
