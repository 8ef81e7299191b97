"""The page SGLang floors a GQA pool to on SM100 follows the backend it picks, and speculative decoding changes the
pick (lib/sglang_kvplan/pages.py sm100_default_is_kept): trtllm_mha (page 64) only without speculative decoding,
with --speculative-eagle-topk 1 given at page 1, or with DFLASH on 0.5.23; EAGLE/EAGLE3 with topk unset, topk > 1
and NGRAM get flashinfer, which keeps the page asked for (0.5.23 arg_groups/model_override_base.py:311-325; the
real resolvers' answers in tests/fixtures/sglang_real/, cases llama-eagle3-b200 and llama-ngram-b200)."""

import pytest
from sglang_kvplan import pages
from sglang_kvplan.normalize import normalize_spec

B200 = {"model": "llama-3.1-8b", "gpu_memory_mib": 183_359, "gpu_compute_capability": "10.0",
        "context_target": 65_536, "version": "0.5.23"}


def _page(speculative=None, **extra):
    if speculative and speculative["algorithm"] != "NGRAM":  # a drafter's path: the plan needs one named
        speculative = dict(speculative, draft_model_path="/srv/models/draft")
    return pages.pool_page(normalize_spec(dict(B200, speculative=speculative, **extra)))


@pytest.mark.parametrize("speculative, page", [
    (None, 64),                                           # no speculative decoding: trtllm_mha
    ({"algorithm": "EAGLE3"}, 1),                         # topk unset when the backend is picked: flashinfer
    ({"algorithm": "EAGLE3", "eagle_topk": 1}, 64),       # topk 1 given, page 1: trtllm_mha
    ({"algorithm": "EAGLE3", "eagle_topk": 4}, 1),        # topk > 1: flashinfer
    ({"algorithm": "NGRAM"}, 1),                          # flashinfer
])
def test_the_page_follows_the_backend_sglang_picks_for_the_speculative_setting(speculative, page):
    assert _page(speculative=speculative) == page


def test_dflash_keeps_trtllm_mha_only_where_the_release_forces_its_topk():
    draft = {"architectures": ["DFlashDraftModel"], "num_hidden_layers": 1, "hidden_size": 4096,
             "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 128256}
    dflash = {"algorithm": "DFLASH", "draft_model_config": draft}
    assert _page(speculative=dflash) == 64                    # 0.5.23: _forces_eagle_topk_one
    assert _page(speculative=dflash, version="0.5.22") == 1   # before: topk unset, flashinfer


def test_an_unknown_gpu_is_planned_for_the_page_asked_when_no_gpu_would_force_one():
    unknown = {"gpu_compute_capability": None}
    assert _page(**unknown) == 64                                      # SM100 could force 64: the pin holds there
    assert _page(speculative={"algorithm": "NGRAM"}, **unknown) == 1   # flashinfer on every GPU
