"""The double behaves as the release it impersonates: its parser refuses what the release refuses, custom code
needs --trust-remote-code, a draft model loads second, the pool follows the release's rules and the cap."""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from run_double import model_dir  # noqa: E402
from sglang import _double_gpu as sim  # noqa: E402
from sglang._double_args import load_table  # noqa: E402
from sglang._double_boot import BootError  # noqa: E402
from sglang.launch_server import boot, prepare_server_args  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "library"))
import sglang_boot_facts  # noqa: E402

# The public Kimi-K2.6-DFlash drafter's shape (Qwen3 architecture, 5 layers, 8 KV heads of 128).
MM_RESERVE = 100 / 1024  # GiB: SGLANG_VLM_CACHE_SIZE_MB, kept out of a multimodal checkpoint's KV budget (0.5.23)
DFLASH_DRAFT = {"architectures": ["DFlashDraftModel"], "model_type": "qwen3", "num_hidden_layers": 5,
                "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "hidden_size": 4096,
                "torch_dtype": "bfloat16"}
EAGLE_DRAFT = {"architectures": ["LlamaForCausalLMEagle3"], "num_hidden_layers": 1, "num_attention_heads": 32,
               "num_key_value_heads": 8, "head_dim": 128, "hidden_size": 4096, "torch_dtype": "bfloat16"}


def _gpu(**overrides):
    return {**sim.DEFAULTS, "load_seconds": 0.0, "graph_seconds": 0.0, **overrides}


def _draft(tmp_path, config):
    path = tmp_path / "draft"
    path.mkdir()
    (path / "config.json").write_text(json.dumps(config))
    return str(path)


def _boot(argv, gpu, capsys):
    table = load_table(sim.release(gpu))
    state = boot(prepare_server_args(argv, table), gpu, table)
    out = capsys.readouterr()
    return state, out.out, out.err


def _run(argv, gpu, tmp_path):
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(gpu))
    env = dict(os.environ, SGLANG_DOUBLE_GPU=str(path), PYTHONPATH=HERE)
    return subprocess.run([sys.executable, "-m", "sglang.launch_server", *argv], env=env, capture_output=True,
                          text=True, timeout=60)


# ---- the parser is the release's -------------------------------------------------------------------------

@pytest.mark.parametrize("version, argv, expected", [
    ("0.5.23", ["--kv-cache-dtype", "fp16"], "sglang serve: error: argument --kv-cache-dtype: invalid choice: 'fp16'"),
    ("0.5.9", ["--kv-cache-dtype", "fp16"], "launch_server.py: error: argument --kv-cache-dtype: invalid choice: 'fp16'"),  # noqa: E501
    ("0.5.9", ["--speculative-algorithm", "DFLASH"], "argument --speculative-algorithm: invalid choice: 'DFLASH'"),
    ("0.5.23", ["--no-such-flag"], "sglang serve: error: unrecognized arguments: --no-such-flag"),
    ("0.5.23", ["--tp-size", "eight"], "argument --tp-size/--tensor-parallel-size: invalid int value: 'eight'"),
    ("0.5.9", ["--kv-cache-dtype", "mxfp8"], "invalid choice: 'mxfp8'"),
])
def test_the_parser_refuses_what_the_release_refuses(tmp_path, version, argv, expected):
    result = _run(["--model-path", model_dir(str(tmp_path)), *argv], {"version": version}, tmp_path)
    assert result.returncode == 2
    assert expected in result.stderr.splitlines()[-1]


def test_the_parser_accepts_what_only_the_newer_release_has(tmp_path, capsys):
    state, out, _ = _boot(["--model-path", model_dir(str(tmp_path)), "--kv-cache-dtype", "mxfp8",
                           "--max-total-tokens", "100k", "--trust-remote-code"], _gpu(), capsys)
    assert state["max_total_num_tokens"] == 100_000  # human_readable_int, as 0.5.23 parses it
    assert "dtype: torch.float8_e4m3fn" in out


def test_an_unknown_speculative_algorithm_fails_at_launch_in_0_5_23(tmp_path):
    result = _run(["--model-path", model_dir(str(tmp_path)), "--speculative-algorithm", "DDTREE"], {}, tmp_path)
    assert result.returncode == 1
    assert "ValueError: Unknown speculative algorithm name: DDTREE" in result.stderr


# ---- custom code --------------------------------------------------------------------------------------------

def test_custom_code_needs_trust_remote_code(tmp_path):
    path = model_dir(str(tmp_path))
    config = json.load(open(os.path.join(path, "config.json")))
    config["auto_map"] = {"AutoConfig": "configuration_kimi.KimiK25Config"}
    with open(os.path.join(path, "config.json"), "w") as handle:
        json.dump(config, handle)
    result = _run(["--model-path", path], {}, tmp_path)
    assert result.returncode == 1
    assert ("RuntimeError: Failed to load the tokenizer. If the tokenizer is a custom tokenizer not yet available in "
            "the HuggingFace transformers library, consider setting `trust_remote_code=True` in LLM or using the "
            "`--trust-remote-code` flag in the CLI.") in result.stderr
    assert "Load weight begin" not in result.stdout
    assert sglang_boot_facts.parse_boot_log(result.stdout)["error"].startswith("RuntimeError: Failed to load")


# ---- speculative decoding -----------------------------------------------------------------------------------

def test_dflash_draft_loads_second_and_sits_in_each_tokens_cell(tmp_path, capsys):
    gpu = _gpu(draft_weights_gib_per_gpu=1.2)
    argv = ["--model-path", model_dir(str(tmp_path)), "--tp-size", "8", "--trust-remote-code",
            "--mem-fraction-static", "0.93", "--speculative-algorithm", "DFLASH",
            "--speculative-draft-model-path", _draft(tmp_path, DFLASH_DRAFT)]
    state, out, _ = _boot(argv, gpu, capsys)
    # target cell (512 + 64) x 61 x 2 = 70,272; draft cell max(1, 8 // 8) x (128 + 128) x 5 x 2 = 2,560
    # (dflash_utils.dflash_draft_cell_size_per_token); the profile sees A minus the draft's weights.
    # Kimi K2.6 is multimodal: 0.5.23 also keeps 100 MiB out (kv_cache_configurator.py mm_runtime_reservation_gb)
    a_after_draft = 85.334 - 65.915 - 1.2 - MM_RESERVE
    assert state["max_total_num_tokens"] == int((a_after_draft - 85.334 * 0.07) * (1 << 30)) // (70_272 + 2_560)
    facts = sglang_boot_facts.parse_boot_log(out)
    assert facts["pre_load_avail_gib"] == 85.33 and facts["post_load_avail_gib"] == 19.42  # the target's
    assert facts["draft"] == {"pre_load_avail_gib": 19.42, "post_load_avail_gib": 18.22, "ranks": 8}
    lines = out.splitlines()
    second_end = [i for i, line in enumerate(lines) if "Load weight end" in line][8]
    assert "type=DFlashDraftModel" in lines[second_end]
    assert second_end < min(i for i, line in enumerate(lines) if "KV Cache is allocated" in line)  # before the pool


def test_eagle_draft_layers_scale_the_cell_in_0_5_23(tmp_path, capsys):
    argv = ["--model-path", model_dir(str(tmp_path)), "--tp-size", "8", "--trust-remote-code",
            "--mem-fraction-static", "0.93", "--speculative-algorithm", "EAGLE3",
            "--speculative-draft-model-path", _draft(tmp_path, EAGLE_DRAFT)]
    state, _, _ = _boot(argv, _gpu(draft_weights_gib_per_gpu=1.0), capsys)
    cell = 70_272 + int(70_272 * 1 / 61)  # pool_configurator.py: cell += int(cell * draft_layers / layers)
    profile = 85.334 - 65.915 - 1.0 - MM_RESERVE - 85.334 * 0.07
    assert state["max_total_num_tokens"] == int(profile * (1 << 30)) // cell


def test_0_5_9_sizes_the_target_alone_and_loads_the_draft_after_its_graphs(tmp_path, capsys):
    argv = ["--model-path", model_dir(str(tmp_path)), "--tp-size", "8", "--trust-remote-code",
            "--mem-fraction-static", "0.92", "--speculative-algorithm", "EAGLE3",
            "--speculative-draft-model-path", _draft(tmp_path, EAGLE_DRAFT)]
    state, out, _ = _boot(argv, _gpu(version="0.5.9", draft_weights_gib_per_gpu=1.0), capsys)
    assert state["max_total_num_tokens"] == int((85.334 - 65.915 - 85.334 * 0.08) * (1 << 30)) // 70_272
    lines = out.splitlines()
    first_graph_end = min(i for i, line in enumerate(lines) if "Capture cuda graph end" in line)
    draft_begin = [i for i, line in enumerate(lines) if "Load weight begin" in line][8]
    assert draft_begin > first_graph_end
    facts = sglang_boot_facts.parse_boot_log(out)
    assert facts["post_load_avail_gib"] == 19.42 and facts["draft"]["ranks"] == 8


def test_0_5_9_draft_pool_that_does_not_fit_is_a_cuda_oom(tmp_path, capsys):
    argv = ["--model-path", model_dir(str(tmp_path)), "--tp-size", "8", "--trust-remote-code",
            "--mem-fraction-static", "0.99", "--speculative-algorithm", "EAGLE3",
            "--speculative-draft-model-path", _draft(tmp_path, EAGLE_DRAFT)]
    with pytest.raises(BootError, match="CUDA out of memory"):
        _boot(argv, _gpu(version="0.5.9", draft_weights_gib_per_gpu=1.0), capsys)


# ---- --max-total-tokens -------------------------------------------------------------------------------------

def test_the_cap_sizes_the_pool_and_the_buffers_and_leaves_the_rest_free(tmp_path, capsys):
    base = ["--model-path", model_dir(str(tmp_path)), "--tp-size", "8", "--trust-remote-code",
            "--mem-fraction-static", "0.95", "--page-size", "64"]
    uncapped, _, _ = _boot(base, _gpu(), capsys)
    capped, out, _ = _boot(base + ["--max-total-tokens", "200001"], _gpu(), capsys)
    assert capped["max_total_num_tokens"] == 200_001 // 64 * 64 < uncapped["max_total_num_tokens"]
    assert "is larger than the profiled value" not in out
    facts = sglang_boot_facts.parse_boot_log(out)
    freed = (uncapped["max_total_num_tokens"] - capped["max_total_num_tokens"]) * 70_272 / (1 << 30)
    assert facts["pool_end_avail_gib"] == pytest.approx(19.419 - (200_000 // 64 * 64 + 64) * 70_272 / (1 << 30),
                                                        abs=0.01)
    assert capped["avail_after_boot"] - uncapped["avail_after_boot"] == pytest.approx(freed, abs=1e-6)


@pytest.mark.parametrize("version", ["0.5.9", "0.5.23"])
def test_a_cap_above_the_profile_warns_and_keeps_the_profile(tmp_path, capsys, version):
    argv = ["--model-path", model_dir(str(tmp_path)), "--tp-size", "8", "--trust-remote-code",
            "--mem-fraction-static", "0.85", "--max-total-tokens", "200000"]
    state, out, _ = _boot(argv, _gpu(version=version), capsys)
    reserve = MM_RESERVE if version == "0.5.23" else 0.0  # 0.5.9 keeps no multimodal reserve
    profiled = int((19.419 - reserve - 85.334 * 0.15) * (1 << 30)) // 70_272
    assert state["max_total_num_tokens"] == profiled
    assert ("max_total_tokens=200000 is larger than the profiled value %d. Use the profiled value instead." % profiled
            in out)
    facts = sglang_boot_facts.parse_boot_log(out)
    assert facts["cap_exceeds_profile"] is True and facts["profiled_tokens"] == profiled


# ---- memory in use before the load, faults ------------------------------------------------------------------

def test_memory_in_use_before_the_load_lowers_p(tmp_path, capsys):
    argv = ["--model-path", model_dir(str(tmp_path)), "--tp-size", "8", "--trust-remote-code",
            "--mem-fraction-static", "0.9"]
    _, out, _ = _boot(argv, _gpu(in_use_before_load_gib=10.0, rank_extra_avail_gib=[0.5, 0.0, 1.0]), capsys)
    facts = sglang_boot_facts.parse_boot_log(out)
    assert facts["pre_load_avail_gib"] == 75.33 and facts["post_load_avail_gib"] == 9.42


@pytest.mark.parametrize("version, error", [
    ("0.5.9", "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: "
              "self.server_args.mem_fraction_static=0.5"),
    ("0.5.23", "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.5."),
])
def test_a_fraction_too_low_fails_as_the_release_fails(tmp_path, version, error):
    result = _run(["--model-path", model_dir(str(tmp_path)), "--trust-remote-code", "--mem-fraction-static", "0.5"],
                  {"version": version}, tmp_path)
    assert result.returncode == 1 and error in result.stderr


def test_cuda_oom_fault_half_way_through_the_weights(tmp_path):
    result = _run(["--model-path", model_dir(str(tmp_path)), "--trust-remote-code"],
                  {"fault": "cuda_oom_at_load", "checkpoint_shards": 4}, tmp_path)
    assert result.returncode == 1
    assert "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate" in result.stderr
    assert "Multi-thread loading shards:  50% Completed | 2/4" in result.stderr  # 0.5.23: multi-threaded by default
    facts = sglang_boot_facts.parse_boot_log(result.stdout)
    assert facts["error"].startswith("torch.OutOfMemoryError") and facts["post_load_avail_gib"] is None


def test_progress_lines_are_paced_over_load_seconds(tmp_path, capsys):
    argv = ["--model-path", model_dir(str(tmp_path)), "--trust-remote-code"]
    _, _, err = _boot(argv, _gpu(checkpoint_shards=64, load_seconds=0.32), capsys)
    progress = [line for line in err.splitlines() if line.startswith("Multi-thread loading shards")]
    assert len(progress) == 65
    assert progress[32].startswith("Multi-thread loading shards:  50% Completed | 32/64 [00:00<00:00,")


def test_unknown_fault_is_refused(monkeypatch, tmp_path):
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps({"fault": "meteor"}))
    monkeypatch.setenv("SGLANG_DOUBLE_GPU", str(path))
    with pytest.raises(ValueError, match="fault='meteor'"):
        sim.load_gpu()


@pytest.mark.parametrize("version", ["0.5.9", "0.5.23"])
def test_nextn_mtp_from_the_targets_own_checkpoint(tmp_path, capsys, version):
    argv = ["--model-path", model_dir(str(tmp_path), "deepseek-v3"), "--tp-size", "8", "--trust-remote-code",
            "--mem-fraction-static", "0.9", "--speculative-algorithm", "NEXTN"]
    state, out, _ = _boot(argv, _gpu(version=version, draft_weights_gib_per_gpu=1.5), capsys)
    facts = sglang_boot_facts.parse_boot_log(out)
    assert facts["draft"]["ranks"] == 8 and facts["post_load_avail_gib"] == 19.42
    assert "type=DeepseekV3ForCausalLMNextN" in out
    if version == "0.5.23":  # one NextN layer of 61 scales the cell
        expected = int((85.334 - 65.915 - 1.5 - 85.334 * 0.1) * (1 << 30)) // (70_272 + int(70_272 / 61))
    else:  # the target's cell alone; the MTP layer's pool comes out of the headroom
        expected = int((85.334 - 65.915 - 85.334 * 0.1) * (1 << 30)) // 70_272
    assert state["max_total_num_tokens"] == expected
