"""The double resolves the attention layout as the release does (sglang/_double_attention.py): DP attention,
the page its default backend forces on an SM100 GPU, the multimodal reserve by is_multimodal, DFLASH's inferred
--speculative-num-draft-tokens. Expected numbers are SGLang's arithmetic, written out from the wheels."""

import json
import os
import re
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from run_double import model_dir  # noqa: E402
from sglang import _double_gpu as sim  # noqa: E402
from sglang._double_args import load_table  # noqa: E402
from sglang._double_boot import BootError  # noqa: E402
from sglang._double_nodes import check_launch  # noqa: E402
from sglang.launch_server import boot, prepare_server_args  # noqa: E402

GIB = 1 << 30
LLAMA70_LAYERS = 80


def _gpu(**overrides):
    return {**sim.DEFAULTS, "load_seconds": 0.0, "graph_seconds": 0.0, "weights_gib_per_gpu": 20.0, **overrides}


def _boot(argv, gpu, capsys):
    table = load_table(sim.release(gpu))
    state = boot(prepare_server_args(argv, table), gpu, table)
    return state, capsys.readouterr().out


def _expected_pool(gpu, fraction, cell, page=1):
    pre = gpu["pre_load_avail_gib"]
    tokens = int((pre - gpu["weights_gib_per_gpu"] - pre * (1 - fraction)) * GIB) // cell
    return tokens // page * page


@pytest.mark.parametrize("version", ["0.5.9", "0.5.23"])
def test_dp_attention_splits_attention_tp(tmp_path, capsys, version):
    """--tp-size 8 --dp-size 8 --enable-dp-attention: attention TP 1, so every GPU holds all 8 KV heads
    (0.5.23 resolves it to attn_dp_size 8, dp_size 1: arg_groups/parallel_hook.py)."""
    gpu = _gpu(version=version)
    base = ["--model-path", model_dir(str(tmp_path), "llama-3.1-70b"), "--tp-size", "8",
            "--mem-fraction-static", "0.9", "--max-running-requests", "64"]
    plain, _ = _boot(base, gpu, capsys)
    dp, _ = _boot(base + ["--dp-size", "8", "--enable-dp-attention"], gpu, capsys)
    assert plain["max_total_num_tokens"] == _expected_pool(gpu, 0.9, 1 * 256 * LLAMA70_LAYERS * 2)
    assert dp["max_total_num_tokens"] == _expected_pool(gpu, 0.9, 8 * 256 * LLAMA70_LAYERS * 2)
    # max_num_reqs = max_running_requests // attn_dp_size (0.5.23 kv_cache_configurator.py resolve_max_num_reqs)
    assert (plain["max_running_requests"], dp["max_running_requests"]) == (64, 8)


def test_multi_node_dp_attention_is_accepted_as_0_5_23_resolves_it(tmp_path):
    table = load_table("0.5.23")
    argv = ["--model-path", model_dir(str(tmp_path), "llama-3.1-70b"), "--tp-size", "8", "--nnodes", "2",
            "--node-rank", "0", "--dist-init-addr", "10.0.0.1:20000", "--dp-size", "2"]
    check_launch(prepare_server_args(argv + ["--enable-dp-attention"], table), "0.5.23")  # attn_dp_size 2
    with pytest.raises(BootError, match="multi-node data-parallel replicas are not supported"):
        check_launch(prepare_server_args(argv, table), "0.5.23")


@pytest.mark.parametrize("cap, flags, pool", [
    ("10.0", ["--max-total-tokens", "100000"], 99_968),  # trtllm_mha: page 1 -> 64, the pin floored below
    ("10.0", ["--max-total-tokens", "100032"], 100_032),
    ("10.0", ["--max-total-tokens", "100000", "--page-size", "16"], 100_000),  # a page trtllm_mha keeps
    ("12.0", ["--max-total-tokens", "100000"], 100_000),  # SM120 keeps page 1
])
def test_a_b200_forces_trtllm_mhas_page(tmp_path, capsys, cap, flags, pool):
    argv = ["--model-path", model_dir(str(tmp_path), "llama-3.1-8b"), "--mem-fraction-static", "0.9", *flags]
    state, out = _boot(argv, _gpu(compute_cap=cap, weights_gib_per_gpu=16.0), capsys)
    assert state["max_total_num_tokens"] == pool
    forced = "TensorRT-LLM MHA only supports page_size of 16, 32, 64 or 128, changing page_size from 1 to 64."
    assert (forced in out) == (cap == "10.0" and "--page-size" not in flags)


def test_a_b200_forces_page_64_for_deepseek_style_mla(tmp_path, capsys):
    argv = ["--model-path", model_dir(str(tmp_path), "kimi-k2.6"), "--tp-size", "8", "--trust-remote-code",
            "--mem-fraction-static", "0.9", "--max-total-tokens", "200016"]
    state, out = _boot(argv, _gpu(compute_cap="10.0", weights_gib_per_gpu=60.0, version="0.5.23"), capsys)
    assert state["max_total_num_tokens"] == 200_016 // 64 * 64 == 200_000
    assert "TensorRT-LLM MLA only supports page_size of 32 or 64, changing page_size from 1 to 64." in out


@pytest.mark.parametrize("architecture, extra, reserved", [
    ("KimiK25ForConditionalGeneration", {}, True),
    ("Gemma3ForConditionalGeneration", {}, False),  # mm_disabled_models: multimodal off by default
    ("KimiK25ForConditionalGeneration", {"language_model_only": True}, False),
])
def test_the_multimodal_reserve_follows_is_multimodal(tmp_path, capsys, architecture, extra, reserved):
    path = model_dir(str(tmp_path), "kimi-k2.6")
    with open(os.path.join(path, "config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    with open(os.path.join(path, "config.json"), "w", encoding="utf-8") as handle:
        json.dump(dict(config, architectures=[architecture], **extra), handle)
    _, out = _boot(["--model-path", path, "--tp-size", "8", "--trust-remote-code", "--mem-fraction-static", "0.9"],
                   _gpu(weights_gib_per_gpu=60.0), capsys)
    assert ("Reserving 0.10 GB of the KV budget" in out) == reserved


def _boot_dflash(tmp_path, capsys, draft_extra, flags=()):
    """Kimi K2.6 at TP8 with a DFlash draft whose config.json has draft_extra; the boot's log."""
    draft = tmp_path / "draft"
    draft.mkdir()
    (draft / "config.json").write_text(json.dumps(dict(
        {"architectures": ["DFlashDraftModel"], "num_hidden_layers": 5, "num_attention_heads": 32,
         "num_key_value_heads": 8, "head_dim": 128, "hidden_size": 4096, "torch_dtype": "bfloat16"}, **draft_extra)))
    argv = ["--model-path", model_dir(str(tmp_path), "kimi-k2.6"), "--tp-size", "8", "--trust-remote-code",
            "--mem-fraction-static", "0.9", "--speculative-algorithm", "DFLASH",
            "--speculative-draft-model-path", str(draft), *flags]
    return _boot(argv, _gpu(weights_gib_per_gpu=60.0), capsys)[1]


@pytest.mark.parametrize("draft_extra, tokens", [({}, 16), ({"dflash_config": {"block_size": 8}}, 8),
                                                 ({"block_size": 10}, 10)])
def test_dflash_infers_its_draft_tokens(tmp_path, capsys, draft_extra, tokens):
    out = _boot_dflash(tmp_path, capsys, draft_extra)
    assert re.search(r"Capture target verify CUDA graph begin\. backend=full, num_tokens_per_req=%d," % tokens, out)
    assert ("defaulting to 16 for DFLASH" in out) == (not draft_extra)


def test_a_float32_checkpoint_is_served_as_float16(tmp_path, capsys):
    path = model_dir(str(tmp_path), "llama-3.1-8b")
    with open(os.path.join(path, "config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    with open(os.path.join(path, "config.json"), "w", encoding="utf-8") as handle:
        json.dump(dict(config, torch_dtype="float32"), handle)
    state, out = _boot(["--model-path", path, "--mem-fraction-static", "0.9"], _gpu(weights_gib_per_gpu=16.0), capsys)
    assert "dtype: torch.float16, #tokens: %d" % state["max_total_num_tokens"] in out
    assert state["max_total_num_tokens"] == _expected_pool(_gpu(weights_gib_per_gpu=16.0), 0.9, 8 * 256 * 32 * 2)


@pytest.mark.parametrize("version, transport, logged", [
    ("0.5.23", "cuda_ipc", "1.10"), ("0.5.23", "cuda_vmm", "1.10"), ("0.5.18", "cuda_ipc", "1.10"),
    ("0.5.23", "cpu", "0.10"), ("0.5.17", "cuda_ipc", None),
])
def test_a_gpu_feature_transport_reserves_1_gib_more(tmp_path, capsys, version, transport, logged):
    """0.5.18+ mm_runtime_reservation_gb (0.5.23 kv_cache_configurator.py:202-219): + SGLANG_MM_FEATURE_CACHE_MB
    with --mm-feature-transport cuda_ipc|cuda_vmm; none before 0.5.18 (the flag exists from 0.5.16)."""
    argv = ["--model-path", model_dir(str(tmp_path), "kimi-k2.6"), "--tp-size", "8", "--trust-remote-code",
            "--mem-fraction-static", "0.9"]
    gpu = _gpu(weights_gib_per_gpu=60.0, version=version)
    with_transport, out = _boot(argv + ["--mm-feature-transport", transport], gpu, capsys)
    plain, _ = _boot(argv, gpu, capsys)
    if logged is None:
        assert "Reserving" not in out and with_transport["max_total_num_tokens"] == plain["max_total_num_tokens"]
        return
    assert "Reserving %s GB of the KV budget" % logged in out
    extra = GIB if logged == "1.10" else 0  # SGLANG_MM_FEATURE_CACHE_MB = 1024 MiB, at Kimi K2.6's 70,272-byte cell
    assert plain["max_total_num_tokens"] - with_transport["max_total_num_tokens"] == pytest.approx(
        extra / 70_272, abs=1)


@pytest.mark.parametrize("draft_extra, flags, tokens, warning", [
    ({"dflash_config": {"block_size": None}, "block_size": 8}, [], 16, "defaulting to 16"),  # the key wins, null
    ({"block_size": "12"}, [], 12, None),  # int() of it
    ({"block_size": 0}, [], 16, "DFLASH block_size must be positive, got 0."),
    ({"block_size": "x"}, [], 16, "Invalid DFLASH block_size='x'."),
    ({"block_size": 8}, ["--speculative-dflash-block-size", "10"], 10, None),  # the flag is the draft tokens
])
def test_dflash_draft_tokens_as_the_wheel_resolves_them(tmp_path, capsys, draft_extra, flags, tokens, warning):
    """0.5.23 arg_groups/speculative_hook.py:368-420, speculative/dflash_utils.py:501-516, 608-617."""
    out = _boot_dflash(tmp_path, capsys, draft_extra, flags)
    assert re.search(r"Capture target verify CUDA graph begin\. backend=full, num_tokens_per_req=%d," % tokens, out)
    if warning:
        assert warning in out
    else:
        assert "DFLASH block_size" not in out and "defaulting to 16" not in out


def test_dflash_block_size_and_a_different_draft_tokens_are_refused(tmp_path):
    table = load_table(sim.release(_gpu()))
    argv = ["--model-path", model_dir(str(tmp_path), "kimi-k2.6"), "--tp-size", "8", "--trust-remote-code",
            "--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", model_dir(str(tmp_path)),
            "--speculative-dflash-block-size", "8", "--speculative-num-draft-tokens", "16"]
    with pytest.raises(ValueError, match="Both --speculative-num-draft-tokens and --speculative-dflash-block-size "
                                         "are set but they differ"):
        boot(prepare_server_args(argv, table), _gpu(weights_gib_per_gpu=60.0), table)
