"""The double is each release it claims to be (shared/reference/sglang-wheels-audit.md, second audit, D1, D3, D4,
D6): that release's flag table, its draft load order and EAGLE/DFLASH cells, its SM100 pages and its launch
refusals, all read from its wheel (lib/sglang_kvplan/releases/flags-<release>.json and rules.json)."""

import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from run_double import model_dir  # noqa: E402
from sglang import _double_gpu as sim  # noqa: E402
from sglang._double_args import load_table  # noqa: E402
from sglang._double_nodes import check_launch  # noqa: E402
from sglang.launch_server import boot, prepare_server_args  # noqa: E402
from test_double_release import DFLASH_DRAFT, EAGLE_DRAFT, _draft, _gpu, _run  # noqa: E402

GIB = 1 << 30


def _boot_as(version, argv, capsys, **gpu):
    gpu = _gpu(version=version, **gpu)
    table = load_table(sim.exact_release(gpu))
    args = prepare_server_args(argv, table)
    check_launch(args, sim.release(gpu), sim.release_rules(gpu))
    state = boot(args, gpu, table)
    return state, capsys.readouterr().out


def test_as_0_5_12_the_parser_is_0_5_12s(tmp_path):
    base = ["--model-path", model_dir(str(tmp_path)), "--tp-size", "8", "--trust-remote-code"]
    refused = _run(base + ["--attn-dp-size", "1"], {"version": "0.5.12"}, tmp_path)
    assert refused.returncode == 2 and "unrecognized arguments: --attn-dp-size" in refused.stderr
    accepted = _run(base + ["--cuda-graph-max-bs", "8", "--mem-fraction-static", "0.93"],
                    {"version": "0.5.12", "load_seconds": 0.0, "graph_seconds": 0.0, "fault": "crash"}, tmp_path)
    assert "ambiguous option" not in accepted.stderr and "Load weight begin" in accepted.stdout
    # 0.5.23 has no --cuda-graph-max-bs (only -decode/-prefill): its argparse calls the prefix ambiguous
    as_new = _run(base + ["--cuda-graph-max-bs", "8"], {"version": "0.5.23"}, tmp_path)
    assert as_new.returncode == 2 and "ambiguous option: --cuda-graph-max-bs" in as_new.stderr


def test_as_0_5_15_kimi_with_dflash_is_sized_by_0_5_15s_layer_scaled_cell(tmp_path, capsys):
    # the audit's case: P 85.334, A 19.419, draft 0.5 GiB loaded before the pool (0.5.14+), f 0.945, and the cell
    # ceil(70,272 x (61 + 5) / 61) = 76,032 (0.5.15 model_executor/pool_configurator.py:157-173)
    argv = ["--model-path", model_dir(str(tmp_path)), "--tp-size", "8", "--trust-remote-code",
            "--mem-fraction-static", "0.945", "--speculative-algorithm", "DFLASH",
            "--speculative-draft-model-path", _draft(tmp_path, DFLASH_DRAFT)]
    state, out = _boot_as("0.5.15", argv, capsys)
    assert state["max_total_num_tokens"] == int((19.419 - 0.5 - 85.334 * 0.055) * GIB) // 76_032 == 200_897
    lines = out.splitlines()
    second_end = [i for i, line in enumerate(lines) if "Load weight end" in line][8]
    assert second_end < min(i for i, line in enumerate(lines) if "KV Cache is allocated" in line)  # before the pool


def test_as_0_5_12_the_draft_loads_after_the_pool_and_nextn_has_a_pool_of_its_own(tmp_path, capsys):
    argv = ["--model-path", model_dir(str(tmp_path)), "--tp-size", "8", "--trust-remote-code",
            "--mem-fraction-static", "0.945", "--speculative-algorithm", "DFLASH",
            "--speculative-draft-model-path", _draft(tmp_path, DFLASH_DRAFT)]
    state, _ = _boot_as("0.5.12", argv, capsys)  # layer-scaled cell, the draft's weights out of the headroom
    assert state["max_total_num_tokens"] == int((19.419 - 85.334 * 0.055) * GIB) // 76_032 == 207_958
    eagle = ["--model-path", model_dir(str(tmp_path / "e")), "--tp-size", "8", "--trust-remote-code",
             "--mem-fraction-static", "0.9", "--speculative-algorithm", "EAGLE3",
             "--speculative-draft-model-path", _draft(tmp_path / "e", EAGLE_DRAFT)]
    (tmp_path / "e").mkdir(exist_ok=True)
    state, _ = _boot_as("0.5.12", eagle, capsys)  # 'separate': the target's cell alone
    assert state["max_total_num_tokens"] == int((19.419 - 85.334 * 0.1) * GIB) // 70_272
    state, _ = _boot_as("0.5.15", eagle, capsys)  # 'scaled_product': int(70,272 x (1 + 1/61))
    assert state["max_total_num_tokens"] == int((19.419 - 1.0 * 0.5 - 85.334 * 0.1) * GIB) // int(
        70_272 * (1 + 1 / 61))


@pytest.mark.parametrize("version, words", [
    ("0.5.12", "Currently DFLASH speculative decoding does not support dp attention."),
    ("0.5.15", "Currently DFLASH speculative decoding does not support dp attention."),
    ("0.5.23", "DFLASH with dp attention requires --enable-dp-lm-head."),
])
def test_dflash_with_dp_attention_is_refused_in_the_releases_words(tmp_path, version, words):
    argv = ["--model-path", model_dir(str(tmp_path)), "--tp-size", "8", "--dp-size", "8", "--enable-dp-attention",
            "--trust-remote-code", "--speculative-algorithm", "DFLASH",
            "--speculative-draft-model-path", _draft(tmp_path, DFLASH_DRAFT)]
    result = _run(argv, {"version": version}, tmp_path)
    assert result.returncode == 1 and "ValueError: %s" % words in result.stderr
    assert "Load weight begin" not in result.stdout
    if version == "0.5.23":  # with the LM head over attention DP it starts
        table = load_table("0.5.23")
        args = prepare_server_args(argv + ["--enable-dp-lm-head"], table)
        check_launch(args, "0.5.23", sim.release_rules({"version": "0.5.23"}))


@pytest.mark.parametrize("version", ["0.5.12", "0.5.15", "0.5.23"])
def test_dflash_with_pipeline_stages_and_ngram_with_dp_attention_are_refused(tmp_path, version):
    base = ["--model-path", model_dir(str(tmp_path)), "--tp-size", "4", "--trust-remote-code"]
    dflash = _run(base + ["--pp-size", "2", "--speculative-algorithm", "DFLASH",
                          "--speculative-draft-model-path", _draft(tmp_path, DFLASH_DRAFT)], {"version": version},
                  tmp_path)
    assert "ValueError: Currently DFLASH speculative decoding only supports pp_size == 1." in dflash.stderr
    ngram = _run(base + ["--dp-size", "2", "--enable-dp-attention", "--speculative-algorithm", "NGRAM"],
                 {"version": version}, tmp_path)
    assert "ValueError: Currently ngram speculative decoding does not support dp attention." in ngram.stderr


def _qwen3_32b(tmp_path):
    """Qwen3-32B's config.json (the audit's SM100 case) in a folder of its own."""
    qwen = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 64,
            "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128, "hidden_size": 5120,
            "max_position_embeddings": 40960, "torch_dtype": "bfloat16"}
    path = tmp_path / "qwen"
    path.mkdir()
    (path / "config.json").write_text(json.dumps(qwen))
    return path


def test_pages_per_release_on_sm100(tmp_path, capsys):
    path = _qwen3_32b(tmp_path)
    for name in ("tokenizer_config.json", "tokenizer.json"):
        source = os.path.join(model_dir(str(tmp_path / "k")), name)
        if os.path.exists(source):
            (path / name).write_text(open(source, encoding="utf-8").read())
    base = ["--model-path", str(path), "--tp-size", "4", "--mem-fraction-static", "0.5"]
    b200 = {"compute_cap": "10.0", "weights_gib_per_gpu": 16.0}
    # trtllm_mha keeps 128 from 0.5.17 only (0.5.15 arg_groups/overrides.py:1575 forces 64)
    _, out = _boot_as("0.5.15", base + ["--page-size", "128"], capsys, **b200)
    assert "changing page_size from 128 to 64" in out
    _, out = _boot_as("0.5.23", base + ["--page-size", "128"], capsys, **b200)
    assert "changing page_size" not in out
    # EAGLE with topk unset: no trtllm_mha in any release, so page 1 stays
    eagle = ["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", _draft(tmp_path, EAGLE_DRAFT)]
    for version in ("0.5.15", "0.5.23"):
        _, out = _boot_as(version, base + eagle, capsys, **b200)
        assert "changing page_size" not in out, version


def test_as_0_5_23_a_non_causal_dflash_drafter_keeps_its_kv_in_bf16_on_a_b200(tmp_path, capsys):
    target = _qwen3_32b(tmp_path)
    argv = ["--model-path", str(target), "--tp-size", "4", "--mem-fraction-static", "0.5", "--kv-cache-dtype",
            "fp8_e4m3", "--speculative-algorithm", "DFLASH", "--speculative-draft-model-path",
            _draft(tmp_path, DFLASH_DRAFT)]
    gpu = {"compute_cap": "10.0", "weights_gib_per_gpu": 16.0, "pre_load_avail_gib": 178.0}
    rest = 178.0 - 16.0 - 0.5 - 178.0 * 0.5
    state, _ = _boot_as("0.5.23", argv, capsys, **gpu)  # 32,768 + the draft's 2 heads x 256 x 5 x 2 B
    assert state["max_total_num_tokens"] == int(rest * GIB) // 37_888 // 64 * 64
    state, _ = _boot_as("0.5.22", argv, capsys, **gpu)  # 0.5.22: flashinfer, which reads the target's fp8
    assert state["max_total_num_tokens"] == int(rest * GIB) // 35_328
