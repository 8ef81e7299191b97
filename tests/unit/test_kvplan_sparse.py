"""DeepSeek-V3.2 (DeepSeek sparse attention) is planned by its release's own rules (issue 35 item 1; sparse.py).

SGLang's sizing written out here apart from the planner, from 0.5.23 model_executor/pool_configurator.py
_compute_cell_size :340-409, mem_cache/kv_cache_configurator.py calculate_mla_kv_cache_dim :3412-3475 and
arg_groups/overrides.py _dsa_kv_cache_dtype_default / _dsa_split_backend_resolution. The real 0.5.23 and 0.5.15
code is given the same plans by the real contract (tests/contract/real/cases.py dsv32-*)."""

import pytest
import sglang_kvplan as kv
from sglang_checks import planspec
from sglang_kvplan import pages, sparse

H200 = {"gpu_memory_mib": 143_771, "gpu_compute_capability": "9.0"}
B200 = {"gpu_memory_mib": 183_359, "gpu_compute_capability": "10.0"}
LAYERS, INDEXER = 61, 128 + 128 // 128 * 4  # the indexer's fp8 key and its fp32 scale per 128, per layer


def spec(gpu=H200, **more):
    out = dict(gpu, model="deepseek-v3.2", tp_size=8, context_target=131_072, version="0.5.23")
    out.update(more)
    return out


@pytest.mark.parametrize("gpu, dtype, row", [
    (H200, "auto", (512 + 64) * 2),  # bfloat16 below SM100
    (B200, "auto", 512 + 64),  # fp8 on the trtllm kernels: the raw row
    (H200, "fp8_e4m3", 512 + 512 // 128 * 4 + 64 * 2),  # fp8 on flashmla_kv: scales, the rope in bf16
    (B200, "bf16", (512 + 64) * 2),
])
def test_the_cell_is_the_row_the_release_picks_and_the_indexer(gpu, dtype, row):
    assert kv.cell_bytes(spec(gpu, kv_cache_dtype=dtype)) == (row + INDEXER) * LAYERS


@pytest.mark.parametrize("gpu, dtype", [(H200, "bfloat16"), (B200, "fp8_e4m3")])
def test_the_plan_names_the_dtype_auto_resolves_to_and_page_64(gpu, dtype):
    got = kv.plan(spec(gpu))
    assert got["args"][got["args"].index("--kv-cache-dtype") + 1] == dtype
    assert got["predicted_pool_tokens"] % 64 == 0
    assert pages.pool_page(kv.normalize_spec(spec(gpu, page_size=16))) == 64  # SGLang sets 64 whatever is asked
    assert any(line.startswith("sparse attention: %s B a token" % format(kv.cell_bytes(spec(gpu)), ","))
               for line in got["tradeoff"])


def refusal(**more):
    with pytest.raises(kv.KVPlanError) as caught:
        kv.plan(spec(**more))
    return str(caught.value)


@pytest.mark.parametrize("more, words", [
    ({"version": "0.5.14"}, "0.5.15 or newer"),
    ({"version": "0.5.15", "kv_cache_dtype": "fp8_e4m3"}, "counts the pool's tokens by the raw one"),
    ({"gpu_compute_capability": None}, "sglang_gpu_compute_capability"),
    ({"kv_cache_dtype": "fp8_e5m2"}, "only supports bf16/bfloat16 or fp8_e4m3"),
    ({"speculative": {"algorithm": "NEXTN"}, "version": "0.5.15"}, "on SGLang 0.5.17 and newer only"),
    ({"speculative": {"algorithm": "NGRAM"}}, "a NGRAM draft beside DeepSeek-V3.2"),
    ({"pp_size": 2}, "sglang_pp_size"),
    ({"dp_size": 8, "enable_dp_attention": True}, "sglang_enable_dp_attention"),
    ({"dsa_option": "--dsa-decode-backend"}, "--dsa-decode-backend"),
    ({"model": None, "model_config": dict(kv.load_presets()["deepseek-v3.2"]["config"], index_kpool=2)},
     "index_kpool"),
    ({"model": None, "model_config": dict(kv.load_presets()["deepseek-v3.2"]["config"], learnable_sink=True)},
     "learnable attention sinks"),
])
def test_what_the_formula_does_not_describe_is_refused_with_the_knob(more, words):
    assert words in refusal(**more)


def test_its_nextn_draft_adds_one_mla_row_and_one_indexer_row_per_token():
    # 0.5.23 pool_configurator.py: int(target_kv x Ld / L) + the indexer of Ld layers; the real 0.5.23 configurator
    # counts the same pool (tests/contract/real/cases.py dsv32-nextn-h200, dsv32-nextn-b200)
    nextn = {"speculative": {"algorithm": "NEXTN"}}
    assert kv.cell_bytes(spec(H200, **nextn)) - kv.cell_bytes(spec(H200)) == (512 + 64) * 2 + 128 + 4 == 1284
    plan = kv.plan(spec(H200, **nextn))
    assert plan["kv_bytes_per_token"] == kv.cell_bytes(spec(H200)) + 1284


def test_the_older_release_plans_what_it_counts_the_same_way():
    # 0.5.15 counts by the raw row: equal to 0.5.23's where the row is raw (bf16, and fp8 on SM100)
    for gpu in (H200, B200):
        assert kv.cell_bytes(spec(gpu, version="0.5.15")) == kv.cell_bytes(spec(gpu))


def test_a_dsa_kernel_in_sglang_extra_args_reaches_the_refusal():
    values = {name: None for name in planspec.KNOBS}
    values.update(sglang_model="deepseek-v3.2", sglang_context_target=131_072, sglang_version="0.5.23",
                  sglang_tp_size=8, sglang_gpu_memory_mib=143_771, sglang_gpu_compute_capability="9.0",
                  sglang_extra_args=["--dsa-prefill-backend", "flashmla_sparse"])
    spec_, server, _ = planspec.spec("h", values, [planspec.node_inputs("h", values)], "h")
    assert spec_["dsa_option"] == "--dsa-prefill-backend"
    with pytest.raises(kv.KVPlanError, match="--dsa-prefill-backend"):
        planspec.plan(spec_, server)


def test_the_release_rule_is_read_from_each_wheel():
    rules = kv.RULES
    assert [v for v in rules if rules[v]["dsa_layout"] == "v32_raw_sized"] == ["0.5.15", "0.5.15.post1", "0.5.16"]
    assert rules["0.5.14"]["dsa_layout"] is None and rules["0.5.23"]["dsa_layout"] == "v32_by_major"
    assert sparse.PAGE == 64
