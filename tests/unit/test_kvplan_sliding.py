"""A hybrid sliding-window model (gpt-oss) is planned by its two pools (issue 35 item 1; lib/sglang_kvplan/sliding.py).

SGLang's sizing is written out here apart from the planner, from 0.5.23 model_executor/pool_configurator.py
(HybridSWAPoolConfigurator: the cell :786-803, calculate_pool_sizes :907-916, _solve_pool_sizes :859-893) and
mem_cache/kv_cache_configurator.py (_profile_available_bytes :2990-3060: available = int(rest GiB x 2**30)), so the
planner's pool is held to the release's arithmetic for the numbers SGLang would profile. The real code is called
on the same configs by the real contract (tests/contract/real/).
"""

import pytest
import sglang_kvplan as kv
from sglang_checks import planspec

GPT_OSS = kv.load_presets()["gpt-oss-120b"]["config"]
H200 = {"gpu_memory_mib": 143_771, "gpu_compute_capability": "9.0"}  # fa3 for gpt-oss on SM90: page 1
B200 = {"gpu_memory_mib": 183_359, "gpu_compute_capability": "10.0"}  # trtllm_mha on SM100: page 64


def sglang_0_5_23_pools(pre, post, fraction, tp, page, ratio=0.8, cap=None):
    """(full, sliding) tokens as 0.5.23 sizes gpt-oss-120b (bf16 KV, 8 KV heads of 64 + 64 dims, 18 + 18 layers)."""
    per_layer = max(1, 8 // tp) * (64 + 64) * 2  # get_num_kv_heads(tp) x (head_dim + v_head_dim) x kv_size
    cell = per_layer * 18 + ratio * (per_layer * 18)  # _full_cell_bytes() + ratio x _swa_cell_bytes()
    available = int((post - pre * (1 - fraction)) * (1 << 30))
    full = int(available // cell)  # calculate_pool_sizes
    if cap is not None:
        full = min(full, cap)  # _apply_token_constraints, then calculate_pool_sizes_from_max_tokens
    full = full // page * page
    return full, int(full * ratio) // page * page


def plan(gpu, **more):
    spec = dict(gpu, model="gpt-oss-120b", context_target=131_072, version="0.5.23", tp_size=1)
    spec.update(more)
    return kv.plan(spec)


@pytest.mark.parametrize("gpu, page", [(H200, 1), (B200, 64)])
@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_an_unpinned_pool_is_the_one_sglang_sizes_from_the_same_memory(gpu, page, tp):
    # calibrated: P and A as a boot logs them (A less about 61 GiB of weights over TP)
    pre = gpu["gpu_memory_mib"] / 1024 - 1.2
    got = plan(gpu, tp_size=tp, pre_load_avail_gib=pre, post_load_avail_gib=pre - 61.0 / tp - 0.4)
    full, sliding = sglang_0_5_23_pools(pre, pre - 61.0 / tp - 0.4, got["mem_fraction_static"], tp, page)
    assert got["max_total_tokens"] is None  # fill: the pool is the profile's
    assert got["predicted_pool_tokens"] == full and got["sliding_window_pool_tokens"] == sliding
    assert full >= 131_072 and got["headroom_gib"] >= 4.0


@pytest.mark.parametrize("gpu, page", [(H200, 1), (B200, 64)])
def test_a_pinned_pool_is_the_full_layers_count_and_the_sliding_pool_follows(gpu, page):
    got = plan(gpu, pool_policy="target")
    cap = got["max_total_tokens"]
    assert cap == 131_072 and cap % page == 0  # --max-total-tokens caps the full layers' count (0.5.11+)
    pre, post = got["pre_load_avail_gib"], got["post_load_avail_gib"]
    assert (got["predicted_pool_tokens"], got["sliding_window_pool_tokens"]) == sglang_0_5_23_pools(
        pre, post, got["mem_fraction_static"], 1, page, cap=cap)


def test_the_cell_is_the_full_layers_and_the_ratio_of_the_sliding_ones():
    spec = dict(H200, model="gpt-oss-120b", version="0.5.23")
    plain = 8 * 128 * 2  # one layer, TP 1
    assert kv.cell_bytes(spec) == plain * 18 + 0.8 * plain * 18 == 66_355.2
    assert kv.cell_bytes(dict(spec, swa_full_tokens_ratio=0.25)) == plain * 18 + 0.25 * plain * 18
    # the same geometry planned as full attention over all 36 layers would be 73,728 B: 10% fewer tokens
    assert kv.cell_bytes(dict(spec, tp_size=8)) == 256 * 18 + 0.8 * 256 * 18


def _spec(extra_args):
    knobs = {name: None for name in planspec.KNOBS}
    knobs.update(sglang_model="gpt-oss-120b", sglang_context_target=131_072, sglang_version="0.5.23",
                 sglang_tp_size=1, sglang_gpu_memory_mib=143_771, sglang_pool_policy="target",
                 sglang_extra_args=extra_args)
    return planspec.spec("h", knobs, [planspec.node_inputs("h", knobs)], "h")


def test_the_ratio_and_the_radix_switch_come_from_sglang_extra_args_as_the_release_parses_them():
    spec, server, _ = _spec(["--swa-full-tokens-ratio=0.5", "--disable-radix"])  # an abbreviation, as argparse
    assert (spec["swa_full_tokens_ratio"], spec["disable_radix_cache"]) == (0.5, True)
    spec, server, _ = _spec(["--swa-full-tokens-ratio", "0.5"])
    got = planspec.plan(spec, server)
    assert got["sliding_window_pool_tokens"] == 65_536
    assert any(line.startswith("sliding window: ") and "--swa-full-tokens-ratio 0.5" in line and "65,536" in line
               for line in got["tradeoff"])
    spec, server, _ = _spec(["--swa-full-tokens-ratio", "half"])
    with pytest.raises(kv.KVPlanError, match="swa-full-tokens-ratio in sglang_extra_args.*'half'"):
        planspec.plan(spec, server)


def refusal(**more):
    with pytest.raises(kv.KVPlanError) as caught:
        plan(H200, **more)
    return str(caught.value)


def test_a_release_that_splits_after_the_cap_is_refused_by_name():
    # 0.5.9-0.5.10.post1 cap a count over every layer, then split (model_runner_kv_cache_mixin.py): a pin means
    # another full pool there, which the planner does not model
    message = refusal(version="0.5.10")
    assert "gpt-oss" in message and "0.5.11 or newer" in message and "split_after_cap" in message


@pytest.mark.parametrize("more, words", [
    ({"pp_size": 2, "tp_size": 1}, "sglang_pp_size"),
    ({"disable_radix_cache": True}, "--disable-radix-cache"),
    ({"swa_full_tokens_ratio": 0}, "swa_full_tokens_ratio"),
    ({"swa_full_tokens_ratio": 1.5}, "at most 1"),
    ({"swa_full_tokens_ratio": 0.0001, "context_target": 4096, "pool_policy": "target"}, "Raise --swa-full-tokens"),
    ({"model": None, "model_config": dict(GPT_OSS, layer_types=["full_attention"] * 36)}, "sliding-window layers"),
    ({"model": None, "model_config": dict(GPT_OSS, layer_types=["sliding_attention"] * 35)}, "layer_types"),
    ({"model": None, "model_config": dict(GPT_OSS, sliding_window=0)}, "sliding_window"),
])
def test_what_the_split_does_not_describe_is_refused_with_the_knob(more, words):
    assert words in refusal(**more)


def test_a_speculative_draft_beside_it_is_refused():
    message = refusal(speculative={"algorithm": "NGRAM"})
    assert "sglang_speculative" in message and "sliding-window" in message


def test_no_printed_alternative_or_fix_is_one_the_planner_refuses():
    # twice the GPUs is PP doubled where the release takes it, but the planner does not size a sliding-window model
    # over pipeline stages (sliding.check): TP is offered instead, in the trade-off and in a refusal's fixes
    lines = plan(H200)["tradeoff"]
    assert any("sglang_tp_size 2" in line for line in lines) and not any("sglang_pp_size" in line for line in lines)
    message = refusal(gpu_memory_mib=81_559, min_headroom_gib=12)
    assert "does not fit" in message and "sglang_tp_size 2" in message and "sglang_pp_size" not in message
