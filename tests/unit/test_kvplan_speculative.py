"""Speculative decoding's share of the pool, per release, and what ct200's logged pools say about it."""

import json
import os

import pytest
import sglang_kvplan as kv

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "..", "..", "molecule", "fixtures", "kimi-k2.6-dflash", "config.json"),
          encoding="utf-8") as handle:
    DRAFT = json.load(handle)

DFLASH = {"algorithm": "DFLASH", "draft_model_path": "/srv/models/kimi-k2.6-dflash", "draft_model_config": DRAFT,
          "num_draft_tokens": 16, "draft_checkpoint_gib": 4.4}
CT200 = {"model": "kimi-k2.6", "tp_size": 8, "gpu_memory_mib": 97_887, "pre_load_avail_gib": 85.334,
         "post_load_avail_gib": 19.419, "context_target": 200_000, "speculative": DFLASH,
         "pool_policy": "target"}  # the pin's mechanics (test_kvplan_fill.py has the default, fill)
GPU_GIB = 97_887 / 1024
LOGGED = [(0.85, 101_134), (0.92, 192_406), (0.94, 218_484)]  # ct200's three hand-tuned boots


def test_dflash_0_5_23_puts_the_drafts_own_cell_inside_each_token():
    # dflash_utils.dflash_draft_cell_size_per_token: max(1, 8 KV heads // TP 8) x (128 + 128) x 5 layers x 2 B
    plan = kv.plan(dict(CT200, version="0.5.23"))
    assert plan["draft_kv_bytes_per_token"] == 2_560
    assert plan["kv_bytes_per_token"] == 70_272 + 2_560
    assert plan["max_total_tokens"] == 200_064  # the target plus --speculative-num-draft-tokens
    assert plan["predicted_pool_tokens"] == 200_064
    assert plan["draft_weights_gib"] == pytest.approx(4.4 / 8)
    # A less the pool (with the draft's cell), the draft's weights and 0.5.23's 100 MiB multimodal reserve
    assert plan["headroom_gib"] == pytest.approx(19.419 - 200_064 * 72_832 / 2**30 - 0.55 - 100 / 1024, abs=0.001)
    for flag in ("--speculative-algorithm", "DFLASH", "--speculative-draft-model-path",
                 "/srv/models/kimi-k2.6-dflash", "--speculative-num-draft-tokens", "--trust-remote-code"):
        assert flag in plan["args"]


def test_0_5_9_has_no_dflash_and_says_which_release_does():
    # 0.5.11's server_args.py is the first whose --speculative-algorithm choices hold DFLASH
    with pytest.raises(kv.KVPlanError, match=r"of SGLang 0.5.9 .*\(DFLASH: 0.5.11 and newer\)"):
        kv.plan(dict(CT200, version="0.5.9"))


def test_a_fork_on_0_5_9_rules_keeps_the_draft_pool_beside_the_target_pool():
    plan = kv.plan(dict(CT200, version="0.5.9.post1+ddtree", pool_rules="0.5.9"))
    assert plan["kv_bytes_per_token"] == 70_272  # the profile divides by the target's cell alone
    # ...and the draft's pool (same token count, 2,560 B each) comes out of the headroom with its weights
    assert plan["headroom_gib"] == pytest.approx(19.419 - 200_064 * (70_272 + 2_560) / 2**30 - 0.55, abs=0.001)


def _fit_p(cell):
    """P from two logged pools: N = (A - P(1 - f)) / cell is linear in f with slope P / cell."""
    (f1, n1), (f2, n2) = LOGGED[0], LOGGED[-1]
    return (n2 - n1) * cell / (f2 - f1) / 2**30


@pytest.mark.parametrize("draft_cell, possible", [
    (0, True),             # the target's cell alone: the draft outside it (0.5.9 rule) -> P 85.33 GiB
    (2_560, True),         # 0.5.23's rule, draft heads split over TP8 -> P 88.44 GiB
    (8 * 256 * 5 * 2, False),  # a per-head draft cell, all 8 heads on every GPU -> P 110.2 GiB > the GPU
])
def test_which_formula_ct200s_build_used(draft_cell, possible):
    """docs/kv-pool-formula.md, "What ct200's pools say": only P below the GPU's 95.59 GiB is physical.
    The pools fix only P / cell and (A - P) / cell, so both cells without a per-head draft stay possible."""
    cell = 70_272 + draft_cell
    p = _fit_p(cell)
    assert (p < GPU_GIB - 0.5) is possible  # at least the CUDA context is in use before weights load
    a = p * (1 - LOGGED[0][0]) + LOGGED[0][1] * cell / 2**30
    # the middle boot, which the fit did not use, is predicted by every cell alike: it is the linearity
    fraction, logged = LOGGED[1]
    assert abs(int((a - p * (1 - fraction)) * 2**30 // cell) - logged) <= 2


def test_ngram_needs_no_draft_and_nextn_uses_the_targets_mtp_layers():
    ngram = kv.plan(dict(CT200, speculative={"algorithm": "ngram"}))
    assert ngram["kv_bytes_per_token"] == 70_272 and "NGRAM" in ngram["args"]
    nextn = kv.plan(dict(CT200, model="deepseek-v3", speculative={"algorithm": "NEXTN", "num_steps": 3},
                         context_target=50_000, pre_load_avail_gib=90.0, post_load_avail_gib=30.0))
    assert nextn["kv_bytes_per_token"] == 70_272 + 70_272 // 61


@pytest.mark.parametrize("change, words", [
    ({"speculative": {"algorithm": "MEDUSA"}}, ["sglang_speculative.algorithm", "MEDUSA", "DFLASH"]),
    ({"speculative": {"algorithm": "EAGLE3"}}, ["draft_model_path"]),
    ({"speculative": dict(DFLASH, draft_model_config=None)}, ["DFLASH", "config.json"]),
    ({"speculative": dict(DFLASH, steps=3)}, ["sglang_speculative", "unknown key", "steps", "num_steps"]),
    ({"speculative": "DFLASH"}, ["sglang_speculative", "mapping"]),
    ({"speculative": dict(DFLASH, draft_model_config=dict(DRAFT, num_key_value_heads="8"))},
     ["num_key_value_heads", "positive integer", "a string"]),
])
def test_bad_speculative_settings_are_named(change, words):
    with pytest.raises(kv.KVPlanError) as error:
        kv.plan(dict(CT200, **change))
    for word in words:
        assert word in str(error.value)
