"""Parsing SGLang's boot lines: real logs from public threads (tests/fixtures/sglang_logs/, sources.yml has
the URLs), the double's speculative boots, and the wording of 0.5.9 and 0.5.23."""
# ruff: noqa: E501 - real log lines, kept whole

import os

import pytest
import sglang_boot_facts as module
import yaml
from ansible.module_utils.sglang_journal import split_prefix
from sglang_wait_ready import boot_progress

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "sglang_logs")


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return module.parse_boot_log(handle.read())


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

# A 0.5.23 DFLASH boot in the double's wording, two ranks (TP1 has 0.5 GiB more; wording from model_runner.py, memory_pool.py,
# kv_cache_configurator.py, cuda_graph_setup.py; the draft loads BEFORE the target's pool in 0.5.23).
LOG_0523_DFLASH = """[2026-11-29 14:15:29 TP0] Load weight begin. avail mem=85.33 GB
[2026-11-29 14:15:29 TP1] Load weight begin. avail mem=85.83 GB
[2026-11-29 14:15:29 TP0] Load weight end. elapsed=0.20 s, type=KimiK25ForConditionalGeneration, avail mem=19.42 GB, mem usage=65.92 GB.
[2026-11-29 14:15:29 TP1] Load weight end. elapsed=0.20 s, type=KimiK25ForConditionalGeneration, avail mem=19.92 GB, mem usage=65.92 GB.
[2026-11-29 14:15:29 TP0] Load weight begin. avail mem=19.42 GB
[2026-11-29 14:15:29 TP1] Load weight begin. avail mem=19.92 GB
[2026-11-29 14:15:29 TP0] Load weight end. elapsed=0.02 s, type=DFlashDraftModel, avail mem=18.22 GB, mem usage=1.20 GB.
[2026-11-29 14:15:29 TP1] Load weight end. elapsed=0.02 s, type=DFlashDraftModel, avail mem=18.72 GB, mem usage=1.20 GB.
[2026-11-29 14:15:29 TP0] max_total_tokens=250000 is larger than the profiled value 180533. Use the profiled value instead.
[2026-11-29 14:15:29 TP1] max_total_tokens=250000 is larger than the profiled value 180533. Use the profiled value instead.
[2026-11-29 14:15:29 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 180533, KV size: 11.82 GB
[2026-11-29 14:15:29 TP0] Memory pool end. avail mem=6.40 GB
[2026-11-29 14:15:29 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 180533, K size: 0.22 GB, V size: 0.22 GB
[2026-11-29 14:15:29 TP0] Memory pool end. avail mem=5.97 GB
[2026-11-29 14:15:29 TP1] Memory pool end. avail mem=6.47 GB
[2026-11-29 14:15:29 TP0] Capture target verify CUDA graph end. bs=[1, 2, 4, 8, 12, 16, 24, 32], elapsed=0.05 s, mem usage=0.60 GB, avail mem=5.37 GB.
[2026-11-29 14:15:29 TP0] Capture draft verify CUDA graph end. bs=[1, 2, 4, 8, 12, 16, 24, 32], elapsed=0.05 s, mem usage=0.15 GB, avail mem=5.22 GB.
[2026-11-29 14:15:29 TP0] max_total_num_tokens=180533, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=2048, context_len=200000, available_gpu_mem=5.22 GB
"""


def test_min_over_ranks():
    facts = module.parse_boot_log(LOG_059)
    assert facts["pre_load_avail_gib"] == 85.33 and facts["post_load_avail_gib"] == 19.42
    assert facts["pool_tokens"] == 200_230 and facts["context_len"] == 200_000
    assert facts["max_running_requests"] == 1 and facts["ranks"] == 2 and facts["error"] is None
    assert facts["found"] is True and facts["draft"] is None and facts["cap_exceeds_profile"] is False
    assert facts["after_graph_avail_gib"] == 5.71  # no capture line: the summary's available_gpu_mem


def test_newer_wording():
    facts = module.parse_boot_log(LOG_0523)
    assert (facts["pre_load_avail_gib"], facts["post_load_avail_gib"], facts["pool_tokens"]) == (85.33, 19.42, 218_484)


def test_the_draft_load_is_reported_apart_and_p_a_stay_the_targets():
    facts = module.parse_boot_log(LOG_0523_DFLASH)
    assert (facts["pre_load_avail_gib"], facts["post_load_avail_gib"]) == (85.33, 19.42)  # not the draft's 19.42/18.22
    assert facts["draft"] == {"pre_load_avail_gib": 19.42, "post_load_avail_gib": 18.22, "ranks": 2}
    assert facts["ranks"] == 2
    assert facts["cap_exceeds_profile"] is True and facts["profiled_tokens"] == 180_533
    assert facts["pool_tokens"] == 180_533
    assert facts["pool_end_avail_gib"] == 5.97 and facts["after_graph_avail_gib"] == 5.22


def test_not_enough_memory_is_reported():
    facts = module.parse_boot_log(LOG_0523.split("[TP0] KV")[0]
                                  + "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n")
    assert facts["pool_tokens"] is None
    assert facts["error"].startswith("RuntimeError: Not enough memory")


def test_a_rotated_journal_is_not_an_error():
    facts = module.parse_boot_log("-- No entries --\n")
    assert facts["found"] is False and facts["pre_load_avail_gib"] is None and facts["error"] is None


# ---- real logs from public threads ---------------------------------------------------------------------

def test_every_fixture_has_a_source():
    with open(os.path.join(FIXTURES, "sources.yml"), encoding="utf-8") as handle:
        sources = yaml.safe_load(handle)
    logs = sorted(n for n in os.listdir(FIXTURES) if n.endswith(".log"))
    assert sorted(sources) == logs
    assert all(entry["url"].startswith("https://github.com/") for entry in sources.values())


def test_tp8_least_free_rank_before_the_load():
    facts = fixture("tp8_load_begin_2025-10.log")
    assert facts["found"] and facts["pre_load_avail_gib"] == 137.29  # TP0 137.34 and TP7 137.52 have more
    assert facts["post_load_avail_gib"] is None and facts["ranks"] == 0


def test_tp4_pool_and_memory_left_after_it():
    facts = fixture("tp4_pool_graph_2025-12.log")
    assert facts["pool_tokens"] == 2_090_351 and facts["pool_end_avail_gib"] == 12.45
    assert facts["after_graph_avail_gib"] is None  # the excerpt stops before any capture ends


def test_hybrid_mamba_model():
    facts = fixture("hybrid_mamba_tp2_2026-02.log")
    assert facts["hybrid"] == "mamba"
    assert facts["post_load_avail_gib"] == 19.08 and facts["ranks"] == 2 and facts["pre_load_avail_gib"] is None
    assert facts["pool_tokens"] == 580_364 and facts["context_len"] == 8192 and facts["max_running_requests"] == 1
    assert facts["pool_end_avail_gib"] == 4.02 and facts["after_graph_avail_gib"] == 3.63


def test_pipeline_ranks_are_told_apart():
    facts = fixture("pp2_tp2_elapsed_2026-01.log")
    assert split_prefix("[2026-01-30 20:54:50 PP1 TP0] Load weight begin. avail mem=78.38 GB")[0] == "PP1 TP0"
    assert facts["pre_load_avail_gib"] == 78.38
    assert facts["post_load_avail_gib"] == 75.94 and facts["ranks"] == 2  # PP1 TP1 and PP0 TP0 ended
    assert facts["draft"] is None  # two ranks' single loads, not one rank's two


def test_dp_tp_ep_prefix_without_boot_lines():
    assert split_prefix("[2025-12-26 23:01:32 DP1 TP1 EP1] [AR] Using sglang CustomAllreduce")[0] == "DP1 TP1 EP1"
    assert fixture("dp_tp_ep_prefix_2025-12.log")["found"] is False


@pytest.mark.parametrize("name, pre", [("tp2_begin_2025-03.log", 77.18), ("single_gpu_2025-12.log", 46.81)])
def test_load_begin_across_releases_and_without_rank(name, pre):
    facts = fixture(name)
    assert facts["found"] and facts["pre_load_avail_gib"] == pre and facts["draft"] is None


def test_sliding_window_pool_is_the_full_layers():
    facts = fixture("swa_tp4_2026-01.log")
    assert facts["hybrid"] == "swa" and facts["pool_tokens"] == 375_360  # '#tokens: 300288' is the SWA pool


def test_progress_lines_alone_are_no_boot_facts():
    assert fixture("dsv3_progress_2025-06.log")["found"] is False


# A multiprocess launcher's worker prefix in front of SGLang's own lines: the shape of
# tests/fixtures/progress/worker_prefix_shards.log (vllm-project/vllm#38476, "(Worker_TP0 pid=1700) " before each
# line a worker writes), here before LOG_059's lines, with and without SGLang's own bracket after it.
WORKER_PREFIXED = "".join("(Worker_TP%s pid=17%02d) %s\n" % (line.split(" TP")[1][0], i, line if i % 2 else
                                                              line.split("] ", 1)[1])
                          for i, line in enumerate(LOG_059.splitlines()))


def test_a_worker_prefix_changes_nothing_in_either_reading():
    assert WORKER_PREFIXED.startswith("(Worker_TP0 pid=1700) Load weight begin. avail mem=85.33 GB\n")
    assert "(Worker_TP1 pid=1701) [2026-11-29 07:05:21 TP1] Load weight begin" in WORKER_PREFIXED
    facts = module.parse_boot_log(WORKER_PREFIXED)
    # The times alone differ: half the lines here lost their bracket time, which the fallback reads.
    times = ("weight_load_s", "graph_capture_s", "times_source")
    assert {k: v for k, v in facts.items() if k not in times} == {
        k: v for k, v in module.parse_boot_log(LOG_059).items() if k not in times}
    assert facts["pool_tokens"] == 200_230 and facts["ranks"] == 2 and facts["draft"] is None
    # The boot wait reads the same lines to the same pool: one parser, one answer.
    assert boot_progress(WORKER_PREFIXED)["kv_tokens"] == boot_progress(LOG_059)["kv_tokens"] == 200_230


def test_the_worker_prefix_names_the_rank_when_no_bracket_does():
    assert split_prefix("(Worker_TP3 pid=9) Load weight begin. avail mem=1.5 GB") == (
        "TP3", "Load weight begin. avail mem=1.5 GB")
    assert split_prefix("(Worker_TP3 pid=9) [2026-11-29 07:05:21 PP1 TP3] KV Cache is allocated.")[0] == "PP1 TP3"


@pytest.mark.parametrize("line", [
    "[2026-11-29 07:05:21 TP0] Load weight begin. avail mem=1.2.3 GB",
    "[2026-11-29 07:05:59 TP0] Load weight end. type=X, avail mem=19..42 GB, mem usage=65.92 GB.",
    "[2026-11-29 07:06:00 TP0] Memory pool end. avail mem=. GB",
    "[2026-11-29 07:06:00 TP0] KV Cache is allocated. #tokens: 2.0.0, KV size: 13.10 GB",
    "[2026-11-29 07:06:40 TP0] max_total_num_tokens=2e5, chunked_prefill_size=8192, max_running_requests=1, "
    "context_len=200000",
])
def test_a_mangled_number_is_not_read(line):
    facts = module.parse_boot_log(line)
    assert facts["found"] is False, facts
    state = boot_progress(line)
    assert state["avail_mem_gib"] is None and state["kv_tokens"] is None


def test_the_post_capture_sizing_line_of_a_plain_model_is_not_a_hybrid_pool():
    # SGLang 0.5.23 (model_runner_components/kv_pool_runtime.py) logs this for every model when
    # SGLANG_ENABLE_POST_CAPTURE_KV_SIZING=1: a model without a sliding window has swa_layer_tokens=0.
    log = ("[2026-12-01 10:00:00 TP0] Load weight begin. avail mem=85.33 GB\n"
           "[2026-12-01 10:00:10 TP0] Load weight end. elapsed=10.0 s, type=DeepseekV3ForCausalLM, "
           "avail mem=19.42 GB, mem usage=65.91 GB.\n"
           "[2026-12-01 10:00:11 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 200064, "
           "KV size: 13.09 GB\n"
           "[2026-12-01 10:00:20 TP0] Post-capture KV sizing: full_layer_tokens=200064, swa_layer_tokens=0\n"
           "[2026-12-01 10:00:20 TP0] Post-capture KV sizing: KV cache allocated. dtype: torch.bfloat16, "
           "#tokens: 200064, KV size: 13.09 GB, avail mem=5.20 GB\n")
    facts = module.parse_boot_log(log)
    assert facts["hybrid"] is None and facts["pool_tokens"] == 200_064
