"""Parsing SGLang's boot lines (as the double prints them, and as SGLang 0.5.23 words them)."""
# ruff: noqa: E501 - real log lines, kept whole

import sglang_boot_facts as module

LOG_059 = """[2026-11-29 07:05:21 TP0] Load weight begin. avail mem=85.33 GB
[2026-11-29 07:05:21 TP1] Load weight begin. avail mem=85.41 GB
[2026-11-29 07:05:59 TP0] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=19.42 GB, mem usage=65.92 GB.
[2026-11-29 07:05:59 TP1] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=19.50 GB, mem usage=65.91 GB.
[2026-11-29 07:06:00 TP0] KV Cache is allocated. #tokens: 200230, KV size: 13.10 GB
[2026-11-29 07:06:00 TP1] KV Cache is allocated. #tokens: 200230, KV size: 13.10 GB
[2026-11-29 07:06:40 TP0] max_total_num_tokens=200230, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=1, context_len=200000, available_gpu_mem=5.71 GB
"""
LOG_0523 = """[TP0] Memory baseline taken. mem usage=0.55 GB
[TP0] Load weight begin. avail mem=85.33 GB
[TP0] Load weight end. elapsed=312.40 s, type=DeepseekV3ForCausalLM, quant=compressed-tensors, avail mem=19.42 GB, mem usage=65.92 GB.
[TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 218484, KV size: 14.30 GB
"""


def test_min_over_ranks():
    facts = module.parse_boot_log(LOG_059)
    assert facts["pre_load_avail_gib"] == 85.33 and facts["post_load_avail_gib"] == 19.42
    assert facts["pool_tokens"] == 200_230 and facts["context_len"] == 200_000
    assert facts["max_running_requests"] == 1 and facts["ranks"] == 2 and facts["error"] is None


def test_newer_wording():
    facts = module.parse_boot_log(LOG_0523)
    assert (facts["pre_load_avail_gib"], facts["post_load_avail_gib"], facts["pool_tokens"]) == (85.33, 19.42, 218_484)


def test_not_enough_memory_is_reported():
    facts = module.parse_boot_log(LOG_0523.split("[TP0] KV")[0]
                                  + "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n")
    assert facts["pool_tokens"] is None
    assert facts["error"].startswith("RuntimeError: Not enough memory")
