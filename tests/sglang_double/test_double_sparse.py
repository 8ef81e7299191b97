"""DeepSeek-V3.2 on the double: the plan's pool is the one the double sizes by SGLang's DSA rule (written apart from
the planner in sglang/_double_gpu.py dsa_cell and sglang/_double_attention.py _resolve_dsa) from the same memory,
with the KV dtype and page 64 the release resolves on each GPU."""

import os
import sys

import pytest
import sglang_kvplan as kv
from ansible.module_utils.sglang_journal import parse_boot_log

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from run_double import running_double  # noqa: E402

H200 = {"gpu_memory_mib": 143_771, "compute_cap": "9.0"}
B200 = {"gpu_memory_mib": 183_359, "compute_cap": "10.0"}


@pytest.mark.parametrize("version", ["0.5.23", "0.5.15"])
@pytest.mark.parametrize("gpu, dtype, cell", [(H200, "bfloat16", 78_324), (B200, "fp8_e4m3", 43_188)])
def test_the_double_boots_the_planned_sparse_pool(version, gpu, dtype, cell):
    pre, weights = gpu["gpu_memory_mib"] / 1024 - 2.0, 641.3 / 8
    spec = {"model": "deepseek-v3.2", "tp_size": 8, "gpu_memory_mib": gpu["gpu_memory_mib"],
            "gpu_compute_capability": gpu["compute_cap"], "context_target": 131_072, "version": version,
            "pre_load_avail_gib": pre, "post_load_avail_gib": pre - weights}
    plan = kv.plan(spec)
    assert plan["kv_bytes_per_token"] == cell and plan["sparse_kv_cache_dtype"] == dtype
    assert "--kv-cache-dtype" in plan["args"]
    sim = dict(gpu, version=version, pre_load_avail_gib=pre, weights_gib_per_gpu=weights, load_seconds=0.0,
               graph_seconds=0.0)
    with running_double(["--tp-size", "8"] + plan["args"], sim, preset="deepseek-v3.2") as (_url, log_path):
        with open(log_path, encoding="utf-8") as handle:
            text = handle.read()
    facts = parse_boot_log(text)
    assert "Setting page size to 64 for DeepSeek DSA." in text, text
    assert facts["pool_tokens"] == plan["predicted_pool_tokens"], text
