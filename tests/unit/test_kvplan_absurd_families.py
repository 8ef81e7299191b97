"""Absurd numbers in the config.json of the families with their own sizing files (issue 48 item 6, probe 6's unfinished
area 6): refused by name, never planned, and never first turned into a list of that many layers (a hybrid model with
10^12 layers kept the check phase busy for minutes before this)."""

import copy
import math

import pytest
import sglang_kvplan as kv

H200_TP8 = {"gpu_memory_mib": 143_771, "context_target": 32_768, "version": "0.5.23", "pool_policy": "fill",
            "tp_size": 8, "gpu_compute_capability": "9.0", "checkpoint_gib": 100.0}
ABSURD = [0, -4, float("nan"), float("inf"), "12", 10**12, 1e12]


def refusal(preset, **fields):
    config = copy.deepcopy(kv.load_presets()[preset]["config"])
    for path, value in fields.items():
        node = config
        *parents, key = path.split("__")
        for name in parents:
            node = node[name]
        node[key] = value
    with pytest.raises(kv.KVPlanError) as err:
        kv.plan(dict(H200_TP8, model_config=config))
    return str(err.value)


@pytest.mark.parametrize("preset", ["qwen3-next-80b-a3b", "kimi-linear-48b-a3b"])
@pytest.mark.parametrize("value", ABSURD)
def test_absurd_layer_counts_of_a_hybrid_linear_model_are_refused_by_name(preset, value):
    assert "'num_hidden_layers'" in refusal(preset, num_hidden_layers=value)


@pytest.mark.parametrize("value", [0, -4, float("nan"), float("inf"), "4", 1e12, True])
def test_absurd_rope_factors_in_a_config_are_refused_even_where_the_window_ignores_them(value):
    # gpt-oss names original_max_position_embeddings, so SGLang leaves the factor out of the window, but its rotary
    # embedding still scales by it
    assert "rope_scaling factor" in refusal("gpt-oss-120b", rope_scaling__factor=value)


@pytest.mark.parametrize("value", [10**12, 1e12, 0, -1, float("nan")])
def test_absurd_windows_of_a_config_are_refused_by_name(value):
    message = refusal("kimi-linear-48b-a3b", model_max_length=value)
    assert "model_max_length" in message and "config.json" in message, message


def test_the_presets_themselves_still_plan():
    for preset in ("gpt-oss-120b", "qwen3-next-80b-a3b", "kimi-linear-48b-a3b"):
        result = kv.plan(dict(H200_TP8, model_config=kv.load_presets()[preset]["config"]))
        assert result["predicted_pool_tokens"] >= 32_768 and math.isfinite(result["predicted_pool_tokens"])
