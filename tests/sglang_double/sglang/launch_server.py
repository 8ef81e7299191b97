"""`python -m sglang.launch_server <flags>`, as SGLang's, for the TEST DOUBLE (see sglang/__init__.py).

Boot, as SGLang 0.5.x logs it: parse the real flags, read the model's config.json, "load" the
weights on the simulated GPU, size the KV pool with SGLang's formula, then serve HTTP. A flag SGLang
does not have is refused as SGLang's argparse refuses it; a pool <= 0 fails as SGLang fails.
"""

import argparse
import json
import os
import sys
import time
from datetime import datetime

from sglang import __version__
from sglang._double_config import ConfigArgumentMerger
from sglang._double_gpu import cell_size, default_mem_fraction_static, load_gpu, profile_max_num_token
from sglang._double_http import serve

GB = 1 << 30


def _parser():
    p = argparse.ArgumentParser(prog="launch_server")
    p.add_argument("--model-path", "--model", required=True)
    p.add_argument("--tokenizer-path")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=30000)
    p.add_argument("--tp-size", "--tensor-parallel-size", "--tp", dest="tp_size", type=int, default=1)
    p.add_argument("--pp-size", "--pipeline-parallel-size", dest="pp_size", type=int, default=1)
    p.add_argument("--dp-size", "--data-parallel-size", "--dp", dest="dp_size", type=int, default=1)
    p.add_argument("--enable-dp-attention", action="store_true")
    p.add_argument("--context-length", type=int)
    p.add_argument("--mem-fraction-static", type=float)
    p.add_argument("--max-running-requests", type=int)
    p.add_argument("--max-total-tokens", type=int)
    p.add_argument("--kv-cache-dtype", default="auto",
                   choices=["auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1"])
    p.add_argument("--page-size", type=int, default=1)
    p.add_argument("--chunked-prefill-size", type=int)
    p.add_argument("--api-key")
    p.add_argument("--served-model-name")
    p.add_argument("--trust-remote-code", action="store_true")
    p.add_argument("--attention-backend")
    p.add_argument("--tool-call-parser")
    p.add_argument("--reasoning-parser")
    p.add_argument("--log-level", default="info")
    p.add_argument("--speculative-algorithm")
    p.add_argument("--speculative-draft-model-path")
    p.add_argument("--speculative-num-draft-tokens", type=int)
    p.add_argument("--allow-auto-truncate", action="store_true")
    p.add_argument("--enable-cache-report", action="store_true")
    p.add_argument("--enable-metrics", action="store_true")
    p.add_argument("--cuda-graph-max-bs", type=int)
    p.add_argument("--disable-cuda-graph", action="store_true")
    p.add_argument("--disable-radix-cache", action="store_true")
    p.add_argument("--skip-server-warmup", action="store_true")
    p.add_argument("--watchdog-timeout", type=float, default=300)
    p.add_argument("--random-seed", type=int)
    p.add_argument("--download-dir")
    p.add_argument("--json-model-override-args", default="{}")
    p.add_argument("--dist-init-addr")
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--config", type=str)
    p.add_argument("--node-rank", type=int, default=0)
    return p


def log(message, rank=None):
    stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    print("[%s%s] %s" % (stamp, "" if rank is None else " TP%d" % rank, message), flush=True)


def _read_config(model_path):
    path = os.path.join(model_path, "config.json")
    if not os.path.isfile(path):
        raise OSError("Can't load the configuration of '%s'. If you were trying to load it from "
                      "'https://huggingface.co/models', make sure you don't have a local directory with the "
                      "same name. Otherwise, make sure '%s' is the correct path to a directory containing a "
                      "config.json file" % (model_path, model_path))
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def boot(args, gpu):
    """Everything SGLang does before serving; returns the scheduler's view for the HTTP layer."""
    config = _read_config(args.model_path)
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    derived = text.get("max_position_embeddings") or 4096
    context_len = args.context_length or derived
    if context_len > derived and os.environ.get("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN") != "1":
        raise ValueError(
            "User-specified context_length (%d) is greater than the derived context_length (%d). This may lead "
            "to incorrect model outputs or CUDA errors. Note that the derived context_length may differ from "
            "max_position_embeddings in the model's config. To allow overriding this maximum, set the env var "
            "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" % (context_len, derived))
    fraction = args.mem_fraction_static
    if fraction is None:
        fraction = default_mem_fraction_static(gpu.get("gpu_memory_mib", 97887), args.tp_size, args.pp_size)
    pre, post = gpu["pre_load_avail_gib"], gpu["pre_load_avail_gib"] - gpu["weights_gib_per_gpu"]
    ranks = range(args.tp_size * args.pp_size)

    for rank in ranks:
        log("Init torch distributed ends. mem usage=%.2f GB" % 0.55, rank)
    for rank in ranks:
        log("Load weight begin. avail mem=%.2f GB" % pre, rank)
    time.sleep(gpu["load_seconds"])
    arch = (config.get("architectures") or ["LlamaForCausalLM"])[0]
    for rank in ranks:
        log("Load weight end. type=%s, dtype=torch.bfloat16, avail mem=%.2f GB, mem usage=%.2f GB."
            % (arch, post, pre - post), rank)

    cell = cell_size(config, args)
    tokens = profile_max_num_token(pre, post, fraction, cell)
    if args.max_total_tokens is not None:
        tokens = min(tokens, args.max_total_tokens)
    tokens = tokens // args.page_size * args.page_size
    if tokens <= 0:
        raise RuntimeError("Not enough memory. Please try to increase --mem-fraction-static.")
    max_num_reqs = args.max_running_requests or min(max(int(tokens / context_len * 512), 2048), 4096)
    kv_gb = (tokens + args.page_size) * cell / GB
    for rank in ranks:
        if text.get("kv_lora_rank"):
            log("KV Cache is allocated. #tokens: %d, KV size: %.2f GB" % (tokens, kv_gb), rank)
        else:
            log("KV Cache is allocated. #tokens: %d, K size: %.2f GB, V size: %.2f GB"
                % (tokens, kv_gb / 2, kv_gb / 2), rank)
        log("Memory pool end. avail mem=%.2f GB" % (post - kv_gb), rank)
    graph_gb = 0.6
    avail_after = post - kv_gb - graph_gb
    for rank in ranks:
        log("Capture cuda graph begin. This can take up to several minutes. avail mem=%.2f GB" % (post - kv_gb), rank)
        log("Capture cuda graph end. Time elapsed: %.2f s. mem usage=%.2f GB. avail mem=%.2f GB."
            % (gpu["load_seconds"], graph_gb, avail_after), rank)

    if args.max_running_requests is None:
        running = min(tokens // 2, max_num_reqs)
    else:
        running = min(args.max_running_requests // (args.dp_size if args.enable_dp_attention else 1), tokens // 2)
    max_req_len = min(context_len - 1, tokens - 1)
    chunked = args.chunked_prefill_size or 8192
    log("max_total_num_tokens=%d, chunked_prefill_size=%d, max_prefill_tokens=%d, max_running_requests=%d, "
        "context_len=%d, available_gpu_mem=%.2f GB" % (tokens, chunked, 16384, running, context_len, avail_after), 0)
    return {
        "config": config,
        "context_len": context_len,
        "max_total_num_tokens": tokens,
        "max_req_input_len": max_req_len - 5,
        "max_running_requests": running,
        "mem_fraction_static": fraction,
        "kv_gb": kv_gb,
        "weight_gb": pre - post,
        "graph_gb": graph_gb,
        "startup_available": pre,
    }


def prepare_server_args(argv):
    """As SGLang's `prepare_server_args` (0.5.9 and 0.5.23 `srt/server_args.py`): a `--config` YAML
    file's options are merged in before parsing (sglang/_double_config.py)."""
    parser = _parser()
    if "--config" in argv:
        argv = ConfigArgumentMerger(parser).merge_config_with_args(argv)
    return parser.parse_args(argv)


def main(argv=None):
    args = prepare_server_args(list(sys.argv[1:] if argv is None else argv))
    gpu = load_gpu()
    try:
        state = boot(args, gpu)
    except (ValueError, RuntimeError, OSError) as error:
        log("Scheduler hit an exception: Traceback (most recent call last):\n%s: %s"
            % (type(error).__name__, error), 0)
        print("%s: %s" % (type(error).__name__, error), file=sys.stderr, flush=True)
        return 1
    state["version"] = gpu.get("version", __version__)
    serve(args, gpu, state, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
