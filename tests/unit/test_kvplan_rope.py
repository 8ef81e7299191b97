"""sglang_rope_scaling (issue 35 item 4): the window SGLang derives from config.json (lib/sglang_kvplan/rope.py,
0.5.23 utils/hf_transformers/common.py:668-695) and the YaRN scaling a model card documents, rendered so that the
release derives the scaled window (the model card's own override would leave it at the native one)."""

import json

import pytest
import sglang_kvplan as kv
from sglang_kvplan import rope

YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}  # the Qwen3 model card's
H100 = {"gpu_memory_mib": 81_559, "tp_size": 4, "version": "0.5.23"}


def qwen3(**extra):
    return dict(kv.load_presets()["qwen3-32b"]["config"], **extra)


def test_sglang_s_window_rule():
    assert rope.derived_context({"max_position_embeddings": 40960}) == 40960
    # the first key of SGLang's list wins (ChatGLM's seq_length before max_position_embeddings)
    assert rope.derived_context({"seq_length": 32768, "max_position_embeddings": 131072}) == 32768
    # a factor counts only without original_max_position_embeddings, and never for llama3's scaling
    assert rope.derived_context({"max_position_embeddings": 32768, "rope_scaling": {"factor": 4.0}}) == 131072
    assert rope.derived_context({"max_position_embeddings": 40960, "rope_scaling": YARN}) == 40960
    assert rope.derived_context({"max_position_embeddings": 131072,
                                 "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}) == 131072
    assert rope.derived_context({}) == 2048


def test_qwen3_32b_at_131072_with_yarn_is_planned_with_the_window_sglang_derives():
    plan = kv.plan(dict(H100, model="qwen3-32b", context_target=131_072, rope_scaling=YARN))
    args = plan["args"]
    override = json.loads(args[args.index("--json-model-override-args") + 1])
    # the scaling as documented, and the window key SGLang reads set to factor x original
    assert override == {"rope_scaling": YARN, "max_position_embeddings": 131_072}
    assert rope.derived_context(dict(qwen3(), **override)) == 131_072
    assert args[args.index("--context-length") + 1] == "131072"
    assert any("static YaRN, factor 4.0 over 32,768" in a for a in plan["assumptions"])


def test_without_the_knob_the_target_is_refused_naming_it():
    with pytest.raises(kv.KVPlanError, match=r"native window \(40,960 tokens.*name it in sglang_rope_scaling"):
        kv.plan(dict(H100, model="qwen3-32b", context_target=131_072))


def test_a_target_past_the_scaled_window_is_refused_with_the_window():
    with pytest.raises(kv.KVPlanError, match=r"factor 2.0 x 32,768 = 65,536 tokens\): SGLang refuses it.*Lower "
                                             r"sglang_context_target to at most 65,536"):
        kv.plan(dict(H100, model="qwen3-32b", context_target=131_072, rope_scaling=dict(YARN, factor=2.0)))


def test_no_override_without_the_knob_and_none_when_it_is_empty():
    plan = kv.plan(dict(H100, model="qwen3-32b", context_target=40_960, rope_scaling={}))
    assert "--json-model-override-args" not in plan["args"]


@pytest.mark.parametrize("value, said", [
    ([4.0], "expected a mapping"),
    ({"rope_type": "yarn", "factor": 4.0}, "missing original_max_position_embeddings"),
    (dict(YARN, beta_fast=32), "unknown key"),
    (dict(YARN, rope_type="dynamic"), "rope_type: 'dynamic' is not one the plan renders"),
    (dict(YARN, factor=1.0), "factor: expected a number above 1"),
    (dict(YARN, factor="4"), "factor: expected a number above 1"),
    (dict(YARN, factor=float("inf")), "factor: expected a number above 1"),
    (dict(YARN, original_max_position_embeddings=True), "original_max_position_embeddings: expected"),
    (dict(YARN, original_max_position_embeddings=-1), "original_max_position_embeddings: expected"),
])
def test_a_bad_knob_is_refused_by_name(value, said):
    with pytest.raises(kv.KVPlanError, match="sglang_rope_scaling"):
        kv.plan(dict(H100, model="qwen3-32b", context_target=40_960, rope_scaling=value))
    with pytest.raises(kv.KVPlanError, match=said.replace("(", r"\(")):
        rope.check_rope_scaling(value)


def test_a_scaling_the_checkpoint_already_has_or_that_does_not_widen_it_is_refused():
    with pytest.raises(kv.KVPlanError, match="already sets rope_scaling"):
        kv.plan(dict(H100, model_config=qwen3(rope_scaling=YARN), checkpoint_gib=61.0, context_target=40_960,
                     rope_scaling=YARN))
    with pytest.raises(kv.KVPlanError, match=r"= 36,864 tokens is not beyond the model's own window \(40,960\)"):
        kv.plan(dict(H100, model="qwen3-32b", context_target=40_960,
                     rope_scaling=dict(YARN, factor=1.125)))


def test_a_multimodal_checkpoint_is_refused_the_override_cannot_reach_its_text_config():
    config = {"architectures": ["Qwen3ForCausalLM"], "text_config": qwen3()}
    with pytest.raises(kv.KVPlanError, match="text_config, which --json-model-override-args does not reach"):
        kv.plan(dict(H100, model_config=config, checkpoint_gib=61.0, context_target=131_072, rope_scaling=YARN))
