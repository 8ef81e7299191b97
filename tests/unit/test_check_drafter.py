"""A drafter held to its target in the check phase (lib/sglang_checks/drafter.py, issue 35 item 3): a drafter of
another model is refused by name, with both values and the fix, before anything connects; ct200's own pairing
passes. The rules are SGLang 0.5.23's (drafter.py cites the wheel's file:line)."""

import copy
import json
import os

import pytest
from sglang_checks import drafter
from test_check_gpu_count import plans

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
with open(os.path.join(REPO, "molecule", "fixtures", "kimi-k2.6-dflash", "config.json"), encoding="utf-8") as handle:
    KIMI_DFLASH = json.load(handle)  # the drafter's config.json as the host has it (vocab, target layers)
KIMI_DRAFTER = {"algorithm": "DFLASH", "draft_model": "kimi-k2.6-dflash",
                "draft_model_path": "/srv/models/kimi-k2.6-dflash", "num_draft_tokens": 16}


def spec(model="kimi-k2.6", model_config=None, **speculative):
    return {"model": model, "model_config": model_config, "speculative": dict(KIMI_DRAFTER, **speculative)}


def test_ct200_s_drafter_matches_its_target():
    assert drafter.refusal(spec()) is None
    assert drafter.refusal(spec(draft_model_config=KIMI_DFLASH)) is None  # as read on the host


def test_kimi_s_drafter_on_qwen3_32b_is_refused_by_hidden_size():
    text = drafter.refusal(spec(model="qwen3-32b"))
    assert text.startswith("sglang_speculative.draft_model_path /srv/models/kimi-k2.6-dflash (preset "
                           "kimi-k2.6-dflash) for sglang_model qwen3-32b: the draft's hidden_size is 7168, the "
                           "target's 5120"), text
    assert "dflash_worker_v2.py:135-138, 222-230" in text
    assert "Fix: point sglang_speculative.draft_model_path" in text and "trained for qwen3-32b" in text


def test_a_draft_of_another_algorithm_s_architecture_is_refused():
    eagle3 = dict(KIMI_DFLASH, architectures=["LlamaForCausalLMEagle3"])
    text = drafter.refusal(spec(draft_model_config=eagle3))
    assert "the draft's architectures ['LlamaForCausalLMEagle3'] are not a DFLASH draft" in text, text
    assert "models/dflash.py:1317-1324" in text
    # and the other way round: a DFlash draft named for EAGLE3
    text = drafter.refusal(spec(algorithm="EAGLE3", draft_model_config=KIMI_DFLASH))
    assert "are not a EAGLE3 draft" in text and "LlamaForCausalLMEagle3" in text, text


def test_another_vocabulary_is_refused_when_both_configs_say_it():
    target = copy.deepcopy(__import__("sglang_kvplan").load_presets()["kimi-k2.6"]["config"])
    target["text_config"]["vocab_size"] = 163840
    assert drafter.refusal(spec(model_config=target, draft_model_config=KIMI_DFLASH)) is None
    target["text_config"]["vocab_size"] = 151936
    text = drafter.refusal(spec(model_config=target, draft_model_config=KIMI_DFLASH))
    assert "the draft's vocab_size is 163840, the target's 151936" in text, text
    # a DFLASH draft with its own embeddings (Nemotron 3.5's) sizes them itself: not compared
    own = dict(KIMI_DFLASH, has_embed_tokens=True)
    assert drafter.refusal(spec(model_config=target, draft_model_config=own)) is None


def test_target_layers_past_the_target_are_refused():
    target = copy.deepcopy(__import__("sglang_kvplan").load_presets()["kimi-k2.6"]["config"])
    target["text_config"]["num_hidden_layers"] = 48
    text = drafter.refusal(spec(model_config=target, draft_model_config=KIMI_DFLASH))
    assert "the draft reads the target's layers [48, 59]" in text and "the target has 48" in text, text
    assert "dflash_utils.py:580-584" in text


@pytest.mark.parametrize("speculative", [{}, {"algorithm": "NGRAM"}, {"algorithm": "NEXTN"}])
def test_no_drafter_or_no_draft_model_is_not_checked(speculative):
    assert drafter.refusal({"model": "qwen3-32b", "model_config": None, "speculative": speculative}) is None


def test_the_check_phase_refuses_the_mismatch_before_anything_connects(tmp_path):
    """Through the check phase's own filter (sglang_plan_hosts) on ct200 copies: a Qwen3-32B host with Kimi's
    drafter is refused, naming the variable; ct200's pairing plans."""
    planned = plans(str(tmp_path / "qwen"), {"sglang_model": "qwen3-32b", "sglang_tp_size": 4,
                                             "sglang_context_target": 40960, "sglang_speculative": KIMI_DRAFTER})
    assert "error" in planned["ct200"], planned["ct200"]
    assert planned["ct200"]["error"].startswith("ct200: sglang_speculative.draft_model_path /srv/models/kimi-k2.6-"
                                                "dflash (preset kimi-k2.6-dflash) for sglang_model qwen3-32b"), planned
    assert "plan" in plans(str(tmp_path / "kimi"), {"sglang_tp_size": 8, "sglang_speculative": KIMI_DRAFTER})["ct200"]
