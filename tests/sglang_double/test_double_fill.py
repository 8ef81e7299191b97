"""Issue 35's Qwen3-32B host on the double: TP4 on 4x H100 80GB at 40,960 tokens, planned from the estimate with the
default sglang_pool_policy fill, booted on simulated GPUs whose P and weights are not the estimate's. The double
sizes the pool by SGLang's rule, written apart from the planner (sglang/_double_gpu.py), and the role's own
journal reader reads the boot (module_utils/sglang_journal.py)."""

import os
import sys

import pytest
import sglang_kvplan as kv
from ansible.module_utils.sglang_journal import parse_boot_log
from sglang_state.correction import correction
from sglang_state.transaction import _calibration

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from run_double import running_double  # noqa: E402

H100_MIB = 81_559
QWEN = {"model": "qwen3-32b", "tp_size": 4, "gpu_memory_mib": H100_MIB, "gpu_compute_capability": "9.0",
        "checkpoint_gib": 61.0, "context_target": 40_960, "version": "0.5.23"}
ESTIMATE_P = H100_MIB / 1024 - 1.5  # the planner's estimate: memory.total less preload_overhead_gib
GPU = {"gpu_memory_mib": H100_MIB, "compute_cap": "9.0", "load_seconds": 0.0, "graph_seconds": 0.0,
       "graph_gib": 0.6}


def boot(plan, true_p, weights):
    """The double started with the plan's flags, as the role's unit would; the boot as the role reads it."""
    gpu = dict(GPU, pre_load_avail_gib=true_p, weights_gib_per_gpu=weights)
    with running_double(["--tp-size", "4"] + plan["args"], gpu, preset="qwen3-32b") as (_url, log_path):
        with open(log_path, encoding="utf-8") as handle:
            text = handle.read()
    facts = parse_boot_log(text)
    assert facts.get("found"), text
    return dict(facts, found=True), text


@pytest.mark.parametrize("true_p, weights", [
    (ESTIMATE_P + 1.2, 61.0 / 4),  # an empty GPU: more free than the estimate
    (ESTIMATE_P - 4.0, 61.0 / 4 * 1.1),  # 4 GiB in use before the weights, the shards 10 % heavier
    (ESTIMATE_P / 1.2 + 0.1, 61.0 / 4),  # P at the least the fraction is planned for
])
def test_the_first_boot_holds_the_target_uses_the_memory_and_the_next_run_changes_nothing(true_p, weights):
    plan = kv.plan(QWEN)
    assert plan["max_total_tokens"] is None and plan["max_running_requests"] > 8
    facts, text = boot(plan, true_p, weights)
    pool, left = facts["pool_tokens"], facts["pool_end_avail_gib"]
    assert pool >= 40_960, text
    # the headroom asked (4 GiB), and the rest of the GPU in the pool: 'target' would have left ~60 GiB a GPU idle
    assert 4.0 - 0.01 <= left <= 4.0 * 1.25 + 0.1, text
    assert pool > 15 * 40_960, text
    assert not correction({}, facts, {}, pool, plan, 40_960, 4.0)["correct"]
    # the run after: planned from the calibration this boot left, it renders the same flags (no restart)
    cal = _calibration(QWEN, facts, plan, pool)
    again = kv.plan(dict(QWEN, pre_load_avail_gib=cal["pre_load_avail_gib"],
                         post_load_avail_gib=cal["post_load_avail_gib"], boot_flags=cal["boot_flags"]))
    assert again["args"] == plan["args"]
    assert again["predicted_pool_tokens"] == pool  # the calibration predicts the boot it came from
