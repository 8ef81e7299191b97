"""The double words its start-up lines as the release it impersonates (sim.LOG_LINES, read from each wheel), and
the role's parser (module_utils/sglang_journal.py, which library/sglang_boot_facts.py runs) reads every wording to
the numbers the double booted with. One case per distinct wording: 0.5.9; 0.5.10 (Load weight end without dtype);
0.5.13 (KV Cache is allocated with dtype); 0.5.14, 0.5.16 and 0.5.22 (the CUDA graph lines); 0.5.23; and a .post
release, worded as its base."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from ansible.module_utils.sglang_journal import boot_progress, parse_boot_log  # noqa: E402
from run_double import model_dir  # noqa: E402
from sglang import _double_gpu as sim  # noqa: E402
from sglang._double_args import load_table  # noqa: E402
from sglang.launch_server import boot, prepare_server_args  # noqa: E402
from sglang_kvplan import loader  # noqa: E402
from test_double_release import DFLASH_DRAFT, _draft, _gpu  # noqa: E402

# (release, a phrase only that wording has, a phrase it must not have): each from the wheel's source (sim.LOG_LINES)
WORDINGS = [
    ("0.5.9", ["dtype=torch.bfloat16, avail mem=", "KV Cache is allocated. #tokens: ",
               "Capture cuda graph begin. This can take up to several minutes. avail mem=",
               "Capture cuda graph end. Time elapsed: "], ["num_tokens_per"]),
    ("0.5.10", ["ForConditionalGeneration, avail mem=", "KV Cache is allocated. #tokens: ",
                "Capture cuda graph begin. This can take"], ["dtype=torch", "dtype: torch"]),
    ("0.5.12.post1", ["ForConditionalGeneration, avail mem=", "KV Cache is allocated. #tokens: "], ["dtype: torch"]),
    ("0.5.13", ["KV Cache is allocated. dtype: torch.bfloat16, #tokens: ", "Capture cuda graph end. Time elapsed: "],
     ["dtype=torch", "CUDA graph"]),
    ("0.5.14", ["Capture target decode CUDA graph begin. backend=full, num_tokens_per_bs=1, bs=[1, 2, 4",
                "Capture target decode CUDA graph end. elapsed="], ["num_tokens_per_req", "This can take"]),
    ("0.5.15.post1", ["num_tokens_per_bs=1, bs=["], ["num_tokens_per_req"]),
    ("0.5.16", ["Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, bs=[1, 2, 4",
                "Capture target decode CUDA graph end. elapsed="], ["num_tokens_per_bs", "graph end. bs="]),
    ("0.5.21", ["num_tokens_per_req=1, bs=["], ["graph end. bs="]),
    ("0.5.22", ["Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, avail mem=",
                "Capture target decode CUDA graph end. bs=[1, 2, 4, 8, 12, 16, 24, 32], elapsed="],
     ["num_tokens_per_req=1, bs="]),
    ("0.5.23", ["KV Cache is allocated. dtype: torch.bfloat16, #tokens: ",
                "Capture target decode CUDA graph end. bs=[1, 2, 4, 8, 12, 16, 24, 32], elapsed="],
     ["dtype=torch", "This can take"]),
]


def _boot(version, argv, capsys):
    gpu = _gpu(version=version)
    table = load_table(sim.exact_release(gpu))
    state = boot(prepare_server_args(argv, table), gpu, table)
    return state, gpu, capsys.readouterr().out


@pytest.mark.parametrize("version, present, absent", WORDINGS)
def test_each_release_words_its_lines_and_the_parser_reads_them_to_the_booted_numbers(tmp_path, capsys, version,
                                                                                       present, absent):
    argv = ["--model-path", model_dir(str(tmp_path)), "--tp-size", "8", "--mem-fraction-static", "0.9"]
    state, gpu, out = _boot(version, argv, capsys)
    for phrase in present:
        assert phrase in out, (version, phrase, out)
    for phrase in absent:
        assert phrase not in out, (version, phrase)
    facts = parse_boot_log(out)
    pre = gpu["pre_load_avail_gib"] - gpu["in_use_before_load_gib"]
    assert facts["ranks"] == 8 and facts["error"] is None
    assert facts["pre_load_avail_gib"] == pytest.approx(pre, abs=0.006)
    assert facts["post_load_avail_gib"] == pytest.approx(pre - gpu["weights_gib_per_gpu"], abs=0.006)
    assert facts["pool_tokens"] == state["max_total_num_tokens"]
    after_pool = pre - gpu["weights_gib_per_gpu"] - state["kv_gb"]
    assert facts["pool_end_avail_gib"] == pytest.approx(after_pool, abs=0.006)
    assert facts["after_graph_avail_gib"] == pytest.approx(after_pool - gpu["graph_gib"], abs=0.006)
    # without the scheduler's summary line the pool is read from the KV Cache line itself, in each wording
    alone = parse_boot_log("\n".join(line for line in out.splitlines() if "max_total_num_tokens=" not in line))
    assert alone["pool_tokens"] == state["max_total_num_tokens"]
    # the boot's times, from each wording's own elapsed= / Time elapsed: figures
    assert facts["weight_load_s"] == pytest.approx(gpu["load_seconds"], abs=0.5)
    assert facts["graph_capture_s"] == pytest.approx(gpu["graph_seconds"], abs=0.011)
    # the graph lines of each wording count as the capture stage of a boot in progress
    assert boot_progress(out.split("Capture")[0] + "Capture" + out.split("Capture")[1].split("\n")[0])["stage"] \
        == "capturing CUDA graphs"


@pytest.mark.parametrize("version", ["0.5.14", "0.5.16", "0.5.22"])
def test_a_speculative_boots_verify_and_draft_graph_lines_parse_in_each_wording(tmp_path, capsys, version):
    argv = ["--model-path", model_dir(str(tmp_path)), "--tp-size", "8", "--trust-remote-code",
            "--mem-fraction-static", "0.945", "--speculative-algorithm", "DFLASH",
            "--speculative-draft-model-path", _draft(tmp_path, DFLASH_DRAFT), "--speculative-num-draft-tokens", "16"]
    state, gpu, out = _boot(version, argv, capsys)
    assert "Capture target verify CUDA graph begin" in out and "Capture draft verify CUDA graph end" in out
    assert ("num_tokens_per_bs=16" if version == "0.5.14" else "num_tokens_per_req=16") in out
    facts = parse_boot_log(out)
    assert facts["pool_tokens"] == state["max_total_num_tokens"] and facts["draft"]["ranks"] == 8
    graphs = gpu["graph_gib"] * 1.25  # the target's and the draft's (a quarter)
    expected = gpu["pre_load_avail_gib"] - gpu["in_use_before_load_gib"] - gpu["weights_gib_per_gpu"] \
        - gpu["draft_weights_gib_per_gpu"] - state["kv_gb"] - graphs
    assert facts["after_graph_avail_gib"] == pytest.approx(expected, abs=0.006)


def test_the_table_is_keyed_on_release_and_a_post_release_is_its_base():
    assert sim.log_lines({"version": "0.5.9"}) == {"weight_end": "dtype", "kv_dtype": False, "graph": "0.5.9"}
    assert sim.log_lines({"version": "0.5.12.post1"}) == {"weight_end": "quant", "kv_dtype": False,
                                                          "graph": "0.5.9"}
    assert sim.log_lines({"version": "0.5.15.post1"}) == sim.log_lines({"version": "0.5.15"}) \
        == {"weight_end": "quant", "kv_dtype": True, "graph": "0.5.14"}
    assert sim.log_lines({"version": "0.5.23+double"}) == {"weight_end": "quant", "kv_dtype": True, "graph": "0.5.22"}


# The shard bar each release prints (model_loader/loader.py: multi-threaded by default from 0.5.10), with and
# without the loader flags the plan sets (lib/sglang_kvplan/loader.py), read by the role's boot progress.
MULTI, SINGLE = "Multi-thread loading shards", "Loading safetensors checkpoint shards"


@pytest.mark.parametrize("version, planned, bar", [
    ("0.5.9", False, SINGLE), ("0.5.9", True, MULTI),
    ("0.5.10", False, MULTI), ("0.5.10", True, MULTI),
    ("0.5.15", True, MULTI), ("0.5.23", False, MULTI), ("0.5.23", True, MULTI),
])
def test_each_release_prints_its_loaders_bar_and_the_progress_reads_it(tmp_path, capsys, version, planned, bar):
    args = loader.loader_args(version, loader.release_flags(version), "auto", None)[0] if planned else []
    argv = ["--model-path", model_dir(str(tmp_path)), "--tp-size", "2", "--mem-fraction-static", "0.9"] + args
    gpu = _gpu(version=version, checkpoint_shards=4)
    table = load_table(sim.exact_release(gpu))
    boot(prepare_server_args(argv, table), gpu, table)
    captured = capsys.readouterr()
    bars = [line for line in captured.err.splitlines() if "Completed |" in line]
    assert bars and all(line.startswith(bar + ":") for line in bars), bars
    state = boot_progress(captured.out.split("Load weight end")[0] + "\n".join(bars) + "\n")
    assert state["shard"] == [4, 4] and state["percent"] == 100


def test_prefetch_alone_on_0523_falls_back_to_one_thread_as_the_release_does(tmp_path, capsys):
    argv = ["--model-path", model_dir(str(tmp_path)), "--mem-fraction-static", "0.9",
            "--weight-loader-prefetch-checkpoints"]
    gpu = _gpu(version="0.5.23")
    table = load_table(sim.exact_release(gpu))
    boot(prepare_server_args(argv, table), gpu, table)
    assert SINGLE + ":" in capsys.readouterr().err


def test_a_release_without_prefetch_refuses_the_flag_as_its_parser_does():
    table = load_table("0.5.10")
    with pytest.raises(SystemExit):
        prepare_server_args(["--model-path", "/m", "--weight-loader-prefetch-checkpoints"], table)
