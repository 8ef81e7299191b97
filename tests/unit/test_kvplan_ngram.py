"""NGRAM's draft tokens in the pin (issue 34, D2 of docs' real-resolver run).

With --speculative-num-draft-tokens unset, SGLang resolves 12 NGRAM draft tokens ("speculative_num_draft_tokens is
set to 12 by default for ngram speculative decoding": 0.5.23 sglang/srt/arg_groups/speculative_hook.py:1314-1323,
0.5.15 arg_groups/speculative_hook.py:478-483; 0.5.9 server_args.py:2476-2479 from
--speculative-ngram-max-match-window-size, default 12) and widens every request's table row by them (0.5.23
mem_cache/allocation_sizing.py:105, 0.5.15 mem_cache/common.py:259). The pin must hold one request at full length
with them, as it does for the EAGLE family and DFLASH; the real resolvers' answers are in
tests/fixtures/sglang_real/resolver-0.5.23.json and -0.5.15.json (cases llama-ngram-h100, llama-ngram-b200).
"""

import pytest
import sglang_kvplan as kv

LLAMA = {"model": "llama-3.1-8b", "gpu_memory_mib": 81_559, "gpu_compute_capability": "9.0",
         "context_target": 65_536, "pool_policy": "target"}


@pytest.mark.parametrize("version", ["0.5.9", "0.5.15", "0.5.23"])
def test_ngram_pin_holds_the_12_draft_tokens_sglang_resolves(version):
    plan = kv.plan(dict(LLAMA, version=version, speculative={"algorithm": "NGRAM"}))
    assert plan["max_total_tokens"] == 65_536 + 12
    assert "--speculative-num-draft-tokens" not in plan["args"]  # SGLang's default, as the real resolver ran it


def test_ngram_given_draft_tokens_are_the_ones_reserved():
    plan = kv.plan(dict(LLAMA, version="0.5.23", speculative={"algorithm": "NGRAM", "num_draft_tokens": 8}))
    assert plan["max_total_tokens"] == 65_536 + 8


def test_ngram_on_b200_keeps_page_1_as_the_real_resolver_does():
    # NGRAM leaves SM100's trtllm_mha (page 64) for flashinfer, which keeps page 1 (pages.py sm100_default_is_kept;
    # the real 0.5.23 and 0.5.15 resolvers: llama-ngram-b200), so the pin is the target and the drafts, unrounded
    plan = kv.plan(dict(LLAMA, version="0.5.23", gpu_memory_mib=183_359, gpu_compute_capability="10.0",
                        speculative={"algorithm": "NGRAM"}))
    assert plan["max_total_tokens"] == 65_548


def test_ngram_pin_on_a_paged_backend_rounds_up_after_the_drafts():
    # page 64 asked: flashinfer keeps it; 65,548 rounds up to 65,600, not down to 65,536
    plan = kv.plan(dict(LLAMA, version="0.5.23", gpu_memory_mib=183_359, gpu_compute_capability="10.0",
                        page_size=64, speculative={"algorithm": "NGRAM"}))
    assert plan["max_total_tokens"] == 65_600
