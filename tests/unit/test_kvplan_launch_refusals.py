"""What each release refuses when it starts, refused by the plan in the release's words (lib/sglang_kvplan/
refusals.py, releases/rules.json `launch_refusals`, read from the wheels by tests/contract/extract_rules.py).

The sentences and file:line below are the wheels' own (shared/reference/sglang-wheels-audit.md, second audit, D1)."""

import pytest
import sglang_kvplan as kv
from sglang_checks import planspec
from test_kvplan_speculative import CT200

KIMI_TP4_PP2 = dict(CT200, tp_size=4, pp_size=2)
DP_ATTENTION = dict(CT200, dp_size=8, enable_dp_attention=True)
QWEN = {"model": "qwen3-32b", "tp_size": 4, "gpu_memory_mib": 183_359, "checkpoint_gib": 65.0,
        "context_target": 40_000}


@pytest.mark.parametrize("version, where", [
    ("0.5.12", "sglang/srt/server_args.py:3597"),
    ("0.5.15", "sglang/srt/arg_groups/speculative_hook.py:147"),
    ("0.5.20", "sglang/srt/arg_groups/speculative_hook.py:218"),
    ("0.5.23", "sglang/srt/arg_groups/speculative_hook.py:321"),
])
def test_dflash_with_pipeline_stages_is_refused_in_every_release_with_dflash(version, where):
    with pytest.raises(kv.KVPlanError) as error:
        kv.plan(dict(KIMI_TP4_PP2, version=version))
    text = str(error.value)
    assert "SGLang %s refuses DFLASH with --pp-size > 1" % version in text
    assert "'Currently DFLASH speculative decoding only supports pp_size == 1.'" in text and where in text
    assert "sglang_pp_size: 1" in text


@pytest.mark.parametrize("version", ["0.5.11", "0.5.12", "0.5.15", "0.5.20", "0.5.22"])
def test_dflash_with_dp_attention_is_refused_before_0_5_23(version):
    with pytest.raises(kv.KVPlanError, match=r"SGLang %s refuses DFLASH with DP attention when it starts: "
                                             r"'Currently DFLASH speculative decoding does not support dp attention"
                                             r".*0\.5\.23 and newer run it" % version.replace(".", r"\.")):
        kv.plan(dict(DP_ATTENTION, version=version))


def test_dflash_with_dp_attention_needs_the_dp_lm_head_in_0_5_23():
    with pytest.raises(kv.KVPlanError, match=r"'DFLASH with dp attention requires --enable-dp-lm-head\.' \(sglang/"
                                             r"srt/arg_groups/speculative_hook\.py:308\)\. Fix: add --enable-dp-lm-"
                                             r"head to sglang_extra_args"):
        kv.plan(dict(DP_ATTENTION, version="0.5.23"))
    planned = kv.plan(dict(DP_ATTENTION, version="0.5.23", enable_dp_lm_head=True, context_target=100_000))
    assert planned["kv_bytes_per_token"] == 70_272 + 8 * 256 * 5 * 2  # the draft's 8 KV heads on attention TP 1


def test_dp_attention_with_one_dp_rank_is_no_dp_attention_from_0_5_22():
    # 0.5.22+ turn --enable-dp-attention into --attn-dp-size = --dp-size (arg_groups/parallel_hook.py); at 1 it is
    # off (runtime_context.py attn_dp_enabled_of), while 0.5.12 refuses the flag itself
    kv.plan(dict(CT200, enable_dp_attention=True, version="0.5.23"))
    with pytest.raises(kv.KVPlanError, match="does not support dp attention"):
        kv.plan(dict(CT200, enable_dp_attention=True, version="0.5.12"))


@pytest.mark.parametrize("algorithm, words", [
    ("STANDALONE", "Currently standalone speculative decoding does not support dp attention."),
    ("NGRAM", "Currently ngram speculative decoding does not support dp attention."),
])
@pytest.mark.parametrize("version", ["0.5.9", "0.5.12", "0.5.15", "0.5.23"])
def test_standalone_and_ngram_refuse_dp_attention_in_every_release(algorithm, words, version):
    speculative = {"algorithm": algorithm, "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4}
    if algorithm == "STANDALONE":
        speculative.update(draft_model_path="/srv/models/qwen3-0.6b", draft_model="qwen3-32b")
    spec = dict(QWEN, tp_size=8, dp_size=2, enable_dp_attention=True, speculative=speculative, version=version)
    with pytest.raises(kv.KVPlanError) as error:
        kv.plan(spec)
    assert repr(words) in str(error.value) and "sglang_enable_dp_attention: false" in str(error.value)
    kv.plan(dict(spec, dp_size=1, enable_dp_attention=False))  # the same without DP attention plans


@pytest.mark.parametrize("version", ["0.5.20", "0.5.23"])
def test_uno_is_refused_by_name_with_the_releases_reasons(version):
    uno = {"algorithm": "UNO", "draft_model_path": "/srv/models/draft", "num_draft_tokens": 4}
    with pytest.raises(kv.KVPlanError) as error:
        kv.plan(dict(QWEN, tp_size=1, speculative=uno, version=version))
    text = str(error.value)
    assert "UNO is not planned yet" in text and "SGLang %s" % version in text
    assert "'UNO reuses the target model and does not accept --speculative-draft-model-path.'" in text
    assert "'UNO requires --uno-lora-path.'" in text
    # before 0.5.20 it is no algorithm of the release at all
    with pytest.raises(kv.KVPlanError, match="UNO is not a --speculative-algorithm of SGLang 0.5.15"):
        kv.plan(dict(QWEN, tp_size=1, speculative=uno, version="0.5.15"))


def test_lora_in_extra_args_is_refused_through_the_spec_the_check_phase_builds():
    knobs = {key: None for key in planspec.KNOBS}
    knobs.update(sglang_model="qwen3-32b", sglang_context_target=40_000, sglang_tp_size=4, sglang_pp_size=1,
                 sglang_dp_size=1, sglang_enable_dp_attention=False, sglang_gpu_memory_mib=183_359,
                 sglang_version="0.5.23", sglang_extra_args=["--enable-lora", "--max-loras-per-batch", "2"])
    per_node = [planspec.node_inputs("h1", knobs, {})]
    spec, server, _ = planspec.spec("h1", knobs, per_node, "h1")
    assert spec["lora_option"] == "--enable-lora"
    with pytest.raises(kv.KVPlanError, match=r"sglang_extra_args: --enable-lora turns on LoRA serving.*Remove it"):
        planspec.plan(spec, server)
    knobs["sglang_extra_args"] = ["--lora-path=a=/srv/lora/a"]  # argparse's abbreviation of --lora-paths
    assert planspec.spec("h1", knobs, per_node, "h1")[0]["lora_option"] == "--lora-path"
    knobs["sglang_extra_args"] = ["--enable-dp-lm-head"]
    spec = planspec.spec("h1", knobs, per_node, "h1")[0]
    assert spec["enable_dp_lm_head"] is True and spec["lora_option"] is None


def _two_nodes(caps):
    knobs = {key: None for key in planspec.KNOBS}
    knobs.update(sglang_model="qwen3-32b", sglang_context_target=40_900, sglang_tp_size=8, sglang_pp_size=1,
                 sglang_dp_size=1, sglang_enable_dp_attention=False, sglang_gpu_memory_mib=183_359,
                 sglang_version="0.5.23", sglang_nodes=["a", "b"], sglang_dist_init_port=20000,
                 sglang_pool_policy="target")
    per_node = [planspec.node_inputs(n, knobs, {"compute_capability": c} if c else {})
                for n, c in zip(("a", "b"), caps, strict=True)]
    return planspec.spec("b", knobs, per_node, "10.0.0.1")


def test_a_multi_node_server_takes_the_gpu_family_of_every_node():
    # rank 0 on a B200 pins to trtllm_mha's page 64 also when rank 1 (the host planned) has an SM90 fact missing
    spec, server, _ = _two_nodes(["10.0", None])
    assert spec["gpu_compute_capability"] is None
    plan = planspec.plan(spec, server)
    assert plan["max_total_tokens"] % 64 == 0
    assert any("GPU family unknown on node(s) b" in a for a in plan["assumptions"])
    spec, server, _ = _two_nodes(["10.0", "10.0"])
    assert spec["gpu_compute_capability"] == "10.0"
    with pytest.raises(kv.KVPlanError, match=r"different families \(a 10\.0, b 9\.0\)"):
        _two_nodes(["10.0", "9.0"])
    # the host planned on Hopper no longer decides for its B200 peer (before: page 1, a pin of 40,900)
    spec, server, _ = _two_nodes([None, "9.0"])
    assert spec["gpu_compute_capability"] is None and planspec.plan(spec, server)["max_total_tokens"] == 40_960


def test_an_uncalibrated_nextn_plan_counts_the_mtp_heads_weights():
    # D9: the head is 1 of DeepSeek-V3's 62 layers in its checkpoint; SGLang loads it as the draft, over TP, on the
    # last stage (0.5.14+ before the pool): no longer 0 GiB
    spec = dict(model="deepseek-v3", tp_size=8, pp_size=2, gpu_memory_mib=143_771, context_target=100_000,
                speculative={"algorithm": "NEXTN"})
    plan = kv.plan(spec)
    head = 641.3 / 62
    assert plan["draft_weights_gib"] == round(head / 8, 3)
    assert plan["post_load_avail_gib"] == round(143_771 / 1024 - 1.5 - (641.3 - head) / 16, 3)
    assert any("MTP head" in a for a in plan["assumptions"])
    measured = kv.plan(dict(spec, speculative={"algorithm": "NEXTN", "draft_weights_gib": 2.0}))
    assert measured["draft_weights_gib"] == 2.0
