"""Every release by its own rules (releases/rules.json, read from the wheels) and the page SGLang really uses.

The expected numbers are SGLang's own arithmetic, written out here from the wheel's code (file named at each)."""

import math

import pytest
import sglang_kvplan as kv
from test_kvplan_speculative import CT200, DFLASH

B200_MIB = 183_359  # nvidia-smi memory.total of a B200
LLAMA8 = {"model": "llama-3.1-8b", "gpu_memory_mib": B200_MIB, "checkpoint_gib": 15.0, "pool_policy": "target"}
TRTLLM_MHA_KEEPS = (16, 32, 64, 128)  # 0.5.23 arg_groups/overrides.py: any other page_size becomes 64


def sglang_page_on_sm100(page):
    """0.5.23 _mla_backend_page_constraints for trtllm_mha, the default GQA backend on SM100."""
    return page if page in TRTLLM_MHA_KEEPS else 64


def real_pool(cap, page):
    """calculate_pool_sizes_from_max_tokens (0.5.23 model_executor/pool_configurator.py): floored to the page."""
    return cap // page * page


@pytest.mark.parametrize("target", [100_000, 40_960, 131_071])
def test_a_gqa_pin_on_a_b200_survives_sglangs_page_floor(target):
    plan = kv.plan(dict(LLAMA8, context_target=target, gpu_compute_capability="10.0"))
    cap = plan["max_total_tokens"]
    assert real_pool(cap, sglang_page_on_sm100(1)) == cap >= target and cap - target < 64
    assert plan["predicted_pool_tokens"] == cap
    assert any("trtllm_mha, which forces page_size 64" in a for a in plan["assumptions"])


def test_the_audits_example_llama_8b_target_100000():
    # finding 1: --max-total-tokens 100000 on a B200 -> a pool of 99,968 and a failed deploy
    assert real_pool(100_000, 64) == 99_968
    assert kv.plan(dict(LLAMA8, context_target=100_000, gpu_compute_capability="10.0"))["max_total_tokens"] == 100_032
    # an RTX PRO 6000 (SM120) or an H100 (SM90) keeps page 1: the pin is the target
    for cap in ("12.0", "9.0"):
        plan = kv.plan(dict(LLAMA8, context_target=100_000, gpu_compute_capability=cap))
        assert plan["max_total_tokens"] == 100_000 and not any("page" in a for a in plan["assumptions"])


def test_without_gpu_facts_the_pin_holds_on_every_gpu():
    plan = kv.plan(dict(LLAMA8, context_target=100_000))
    assert plan["max_total_tokens"] == 100_032
    assert any("GPU family unknown" in a and "sglang_gpu_compute_capability" in a for a in plan["assumptions"])


def test_eagle3_draft_tokens_on_a_b200():
    # finding 1's second example: Qwen3-32B + EAGLE3 (4 draft tokens), target 40,960 -> 40,964 -> page 64
    eagle = {"algorithm": "EAGLE3", "draft_model_path": "/srv/models/eagle3", "num_draft_tokens": 4,
             "num_steps": 3, "eagle_topk": 1}
    spec = {"model": "qwen3-32b", "gpu_memory_mib": B200_MIB, "checkpoint_gib": 65.0, "context_target": 40_960,
            "speculative": eagle, "pool_policy": "target"}
    assert kv.plan(dict(spec, gpu_compute_capability="12.0"))["max_total_tokens"] == 40_964
    cap = kv.plan(dict(spec, gpu_compute_capability="10.0"))["max_total_tokens"]
    assert cap == 41_024 and real_pool(cap, 64) >= 40_964


def test_a_page_trtllm_mha_takes_is_kept_and_asymmetric_kv_gets_fa4s_128():
    assert kv.plan(dict(LLAMA8, context_target=100_000, page_size=16,
                        gpu_compute_capability="10.0"))["max_total_tokens"] == 100_000  # 16 divides it
    # v_head_dim != head_dim: 0.5.23 picks fa4 (arg_groups/model_override_base.py), which forces 128;
    # 0.5.16 has no such pick (trtllm_mha, 64)
    asym = {"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096,
            "head_dim": 192, "v_head_dim": 128, "max_position_embeddings": 131072}
    spec = dict(LLAMA8, model=None, model_config=asym, context_target=100_000, gpu_compute_capability="10.0")
    assert kv.plan(dict(spec, version="0.5.23"))["max_total_tokens"] == 100_096  # ceil(100000 / 128) x 128
    assert kv.plan(dict(spec, version="0.5.16"))["max_total_tokens"] == 100_032


def test_mla_pins_keep_their_64_granule_whatever_the_gpu():
    for cap in (None, "10.0", "12.0"):
        assert kv.plan(dict(CT200, gpu_compute_capability=cap))["max_total_tokens"] == 200_064


@pytest.mark.parametrize("version, cell", [
    ("0.5.9", 70_272), ("0.5.13", 70_272),  # 'separate': the draft runner's own pool beside the target's
    # 0.5.14-0.5.21 int(cell * (1 + 1 / 61)); 0.5.22+ cell + int(cell * 1 / 61) (pool_configurator.py)
    ("0.5.14", int(70_272 * (1 + 1 / 61))), ("0.5.20", int(70_272 * (1 + 1 / 61))),
    ("0.5.22", 70_272 + int(70_272 / 61)), ("0.5.23", 70_272 + int(70_272 / 61)),
])
def test_deepseek_nextn_cell_by_release(version, cell):
    spec = {"model": "deepseek-v3", "tp_size": 8, "version": version, "speculative": {"algorithm": "NEXTN"}}
    assert kv.cell_bytes(spec) == cell


def test_dflash_cell_by_release():
    # 0.5.11-0.5.17 scale_kv_cell_size_per_token_for_dflash by layers: ceil(70,272 x (61 + 5) / 61)
    assert kv.plan(dict(CT200, version="0.5.12"))["kv_bytes_per_token"] == math.ceil(70_272 * 66 / 61) == 76_032
    # 0.5.18+: the draft's own cell, 1 KV head x (128 + 128) x 5 layers x 2 B
    assert kv.plan(dict(CT200, version="0.5.20"))["kv_bytes_per_token"] == 70_272 + 2_560
    with pytest.raises(kv.KVPlanError, match=r"SGLang 0.5.10 .*DFLASH: 0.5.11 and newer"):
        kv.plan(dict(CT200, version="0.5.10"))


def test_the_draft_loads_before_the_pool_from_0_5_14():
    spec = dict(CT200, speculative=dict(DFLASH, draft_weights_gib=2.0), pool_policy="fraction")
    before = kv.pool_tokens(dict(spec, version="0.5.14", mem_fraction_static=0.9))
    after = kv.pool_tokens(dict(spec, version="0.5.13", mem_fraction_static=0.9))
    # the same layer-scaled cell in both; 0.5.14 profiles after the draft's 2 GiB are gone
    assert after - before == pytest.approx(2.0 * 2**30 / 76_032, abs=1)


@pytest.mark.parametrize("architecture, extra, version, reserved", [
    ("Qwen2_5_VLForConditionalGeneration", {}, "0.5.20", True),
    ("Qwen2_5_VLForConditionalGeneration", {}, "0.5.16", False),  # no reserve before 0.5.18
    ("Qwen2_5_VLForConditionalGeneration", {"language_model_only": True}, "0.5.23", False),
    ("Gemma3ForConditionalGeneration", {}, "0.5.23", False),  # multimodal off unless --enable-multimodal
    ("LlamaForCausalLM", {}, "0.5.23", False),
])
def test_the_multimodal_reserve_follows_sglangs_is_multimodal(architecture, extra, version, reserved):
    config = dict(kv.load_presets()["llama-3.1-8b"]["config"], architectures=[architecture], **extra)
    spec = dict(LLAMA8, model=None, model_config=config, context_target=50_000, version=version,
                gpu_compute_capability="12.0")
    with_reserve = kv.plan(spec)["headroom_gib"]
    plain = kv.plan(dict(spec, model_config=dict(config, architectures=["LlamaForCausalLM"])))["headroom_gib"]
    assert plain - with_reserve == pytest.approx(100 / 1024 if reserved else 0.0, abs=0.0011)  # 3-decimal GiB


def test_explicit_pool_rules_are_noted_in_the_plan():
    plan = kv.plan(dict(LLAMA8, context_target=50_000, version="0.6.0", pool_rules="0.5.23"))
    assert plan["release_rules"] == "0.5.23"
    assert any("sglang_pool_rules 0.5.23" in a and "0.6.0" in a for a in plan["assumptions"])


def test_the_floored_fraction_s_reserve_is_part_of_the_fit_on_a_b200():
    """finding 6: on a B200 (182,641 MiB = 178.36 GiB) the pinned fraction is 1 - 4 / 178.36 = 0.97757, floored to
    0.977, whose reserve (1 - f) x P is 4.10 GiB with P the whole GPU, more than the 4 GiB asked. A pin that
    leaves 4.05 GiB would then be missed by SGLang's profile (rest = A - P x (1 - f), floored by the cell)."""
    gpu_mib, pre, post, cell = 182_641, 178.36, 16.3, 8 * 256 * 32 * 2  # A: a target of ~100k tokens
    spec = dict(LLAMA8, gpu_memory_mib=gpu_mib, pre_load_avail_gib=pre, post_load_avail_gib=post,
                gpu_compute_capability="12.0")
    tight = int((post - 4.05) * 2**30 // cell)  # leaves 4.05 GiB: within min_headroom_gib, not within the reserve
    assert int((post - pre * (1 - 0.977)) * 2**30) // cell < tight  # what SGLang would allocate for that pin
    with pytest.raises(kv.KVPlanError, match=r"SGLang's reserve \(1 - f\) x P at --mem-fraction-static 0.977"):
        kv.plan(dict(spec, context_target=tight))
    roomy = int((post - 4.2) * 2**30 // cell)
    plan = kv.plan(dict(spec, context_target=roomy))
    assert plan["mem_fraction_static"] == 0.977
    assert int((post - pre * (1 - 0.977)) * 2**30) // cell >= plan["max_total_tokens"]


def test_a_dflash_draft_without_block_size_gets_sglangs_16_draft_tokens():
    draft = {k: v for k, v in DFLASH["draft_model_config"].items() if k not in ("block_size", "dflash_config")}
    spec = dict(CT200, speculative=dict(DFLASH, num_draft_tokens=None, draft_model_config=draft))
    # 100,032 (a whole number of 64-token pages) + 16 draft tokens -> the next page
    assert kv.plan(dict(spec, context_target=100_032))["max_total_tokens"] == 100_096


@pytest.mark.parametrize("model, params, extra", [
    ("llama-3.1-8b", {}, 8),  # LlamaForCausalLM: SGLang picks (5 steps, topk 4, 8 draft tokens)
    ("qwen3-32b", {}, 4),  # every other architecture: (3, 1, 4)
    ("llama-3.1-8b", {"num_steps": 2, "eagle_topk": 1, "num_draft_tokens": 6}, 3),  # topk 1: steps + 1
])
def test_eagles_draft_tokens_as_sglang_resolves_them(model, params, extra):
    """0.5.9 server_args.py:2422-2450 / 0.5.23 arg_groups/speculative_hook.py:1159-1174, 1255-1266, 1430-1461:
    the request table (and so the pin) widens by the resolved --speculative-num-draft-tokens."""
    eagle = dict({"algorithm": "EAGLE3", "draft_model_path": "/srv/models/eagle3"}, **params)
    spec = {"model": model, "gpu_memory_mib": B200_MIB, "checkpoint_gib": 16.0 if "8b" in model else 65.0,
            "context_target": 40_960, "speculative": eagle, "gpu_compute_capability": "12.0",
            "pool_policy": "target"}
    assert kv.plan(spec)["max_total_tokens"] == 40_960 + extra


@pytest.mark.parametrize("version, transport, reserved_mib", [
    ("0.5.23", "cuda_ipc", 100 + 1024), ("0.5.23", "cuda_vmm", 100 + 1024), ("0.5.18", "cuda_ipc", 100 + 1024),
    ("0.5.23", "cpu", 100), ("0.5.23", None, 100),
    ("0.5.17", "cuda_ipc", 0),  # the flag exists from 0.5.16, the reserve from 0.5.18
])
def test_a_gpu_feature_transport_reserves_1_gib_more(version, transport, reserved_mib):
    """0.5.23 mem_cache/kv_cache_configurator.py:202-219 mm_runtime_reservation_gb: SGLANG_VLM_CACHE_SIZE_MB,
    plus SGLANG_MM_FEATURE_CACHE_MB with --mm-feature-transport cuda_ipc or cuda_vmm."""
    config = dict(kv.load_presets()["llama-3.1-8b"]["config"], architectures=["Qwen2_5_VLForConditionalGeneration"])
    spec = dict(LLAMA8, model=None, model_config=config, context_target=50_000, version=version,
                gpu_compute_capability="12.0", mm_feature_transport=transport)
    with_reserve = kv.plan(spec)["headroom_gib"]
    plain = kv.plan(dict(spec, model_config=dict(config, architectures=["LlamaForCausalLM"])))["headroom_gib"]
    assert plain - with_reserve == pytest.approx(reserved_mib / 1024, abs=0.0011)


@pytest.mark.parametrize("draft_extra, tokens", [
    ({"dflash_config": {"block_size": 8}}, 8), ({"block_size": 10}, 10), ({"block_size": "12"}, 12),
    ({"dflash_config": {"block_size": None}, "block_size": 8}, 16),  # dflash_config's key wins, even null
    ({"block_size": 0}, 16), ({"block_size": "x"}, 16),  # refused by _parse_optional_int: SGLang falls back to 16
])
def test_dflash_block_size_as_the_wheel_parses_it(draft_extra, tokens):
    """0.5.23 speculative/dflash_utils.py:501-516, 608-617 and arg_groups/speculative_hook.py:389-420."""
    draft = {k: v for k, v in DFLASH["draft_model_config"].items() if k not in ("block_size", "dflash_config")}
    # a GQA target on a GPU whose backend keeps page 1: the pin is the target plus the draft tokens exactly
    spec = dict(LLAMA8, context_target=50_000, gpu_compute_capability="12.0",
                speculative=dict(DFLASH, num_draft_tokens=None, draft_model_config=dict(draft, **draft_extra)))
    assert kv.plan(spec)["max_total_tokens"] == 50_000 + tokens


@pytest.mark.parametrize("params", [{"eagle_topk": 4}, {"num_draft_tokens": 8}])
def test_eagle_parameters_without_num_steps_are_refused(params):
    """SGLang asserts topk and draft tokens are unset when num_steps is (0.5.23 arg_groups/speculative_hook.py:
    1159-1163): such a server never starts, so the plan refuses it before anything changes."""
    eagle = dict({"algorithm": "EAGLE3", "draft_model_path": "/srv/models/eagle3"}, **params)
    spec = {"model": "llama-3.1-8b", "gpu_memory_mib": B200_MIB, "checkpoint_gib": 16.0, "context_target": 40_960,
            "speculative": eagle, "gpu_compute_capability": "12.0"}
    with pytest.raises(kv.KVPlanError, match="without num_steps"):
        kv.plan(spec)


QWEN_FP8_DFLASH = {"model": "qwen3-32b", "tp_size": 4, "gpu_memory_mib": B200_MIB, "checkpoint_gib": 65.0,
                   "context_target": 40_000, "kv_cache_dtype": "fp8_e4m3", "pool_policy": "target",
                   "speculative": {"algorithm": "DFLASH", "draft_model": "kimi-k2.6-dflash", "draft_model_path": "/d"}}


@pytest.mark.parametrize("version, cap, cell", [
    # 0.5.23 on SM100: the non-causal drafter falls back to fa4 (arg_groups/speculative_hook.py:969), whose KV
    # stays bf16 (mem_cache/kv_cache_dtype.py:101): 2 KV heads x 256 x 5 layers x 2 B = 5,120 beside 32,768
    ("0.5.23", "10.0", 32_768 + 5_120),
    ("0.5.23", None, 32_768 + 5_120),  # GPU family unknown: as on SM100, so the pin holds everywhere
    ("0.5.23", "9.0", 32_768 + 2_560),  # Hopper: the draft keeps the target's fp8
    ("0.5.22", "10.0", 32_768 + 2_560),  # 0.5.22 falls back to flashinfer, which reads fp8
])
def test_a_dflash_drafts_kv_dtype_follows_its_backend_on_sm100(version, cap, cell):
    plan = kv.plan(dict(QWEN_FP8_DFLASH, version=version, gpu_compute_capability=cap))
    assert plan["kv_bytes_per_token"] == cell


def test_a_causal_dflash_drafter_keeps_trtllm_mha_and_the_fp8_kv():
    draft = dict(kv.load_presets()["kimi-k2.6-dflash"]["config"], is_causal=True)
    spec = dict(QWEN_FP8_DFLASH, version="0.5.23", gpu_compute_capability="10.0",
                speculative=dict(QWEN_FP8_DFLASH["speculative"], draft_model=None, draft_model_config=draft))
    assert kv.plan(spec)["kv_bytes_per_token"] == 32_768 + 2_560
