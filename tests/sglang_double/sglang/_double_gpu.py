"""The simulated GPU and SGLang's pool sizing, written from SGLang's source independently of the
repository's planner (a double that shared the planner's code could not catch the planner's bugs)."""

import json
import math
import os

DEFAULTS = {
    "pre_load_avail_gib": 85.334,   # P: free GiB before weights, least-free rank (ct200)
    "weights_gib_per_gpu": 65.915,  # what loading takes, so A = P - weights (ct200: 19.419)
    "api": "new",                   # "new" (0.5.9+: /server_info, /tokenize) or "old" (0.4.6)
    "load_seconds": 0.2,            # simulated weight loading + CUDA graph capture
    "prefill_tokens_per_s": 5.0e6,  # simulated prefill speed
    "decode_seconds_per_token": 0.0,
    "version": "0.5.9",
}


def load_gpu():
    """The simulation, from SGLANG_DOUBLE_GPU (a JSON file); defaults imitate ct200."""
    gpu = dict(DEFAULTS)
    path = os.environ.get("SGLANG_DOUBLE_GPU")
    if path:
        with open(path, encoding="utf-8") as handle:
            gpu.update(json.load(handle))
    return gpu


def _language_config(config):
    text = config.get("text_config")
    return text if isinstance(text, dict) and "num_hidden_layers" in text else config


def cell_size(config, args):
    """Bytes per token per GPU, as ModelRunner.get_cell_size_per_token computes it."""
    cfg = _language_config(config)
    dtype_bytes = {"fp8_e4m3": 1, "fp8_e5m2": 1, "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2}
    if args.kv_cache_dtype in dtype_bytes:
        elem = dtype_bytes[args.kv_cache_dtype]
    else:
        quant = cfg.get("quantization_config") or config.get("quantization_config") or {}
        elem = 1 if str(quant.get("kv_cache_quant_algo", "")).upper() == "FP8" else 2
    layers = math.ceil(cfg["num_hidden_layers"] / args.pp_size)
    if cfg.get("kv_lora_rank"):
        return (cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]) * layers * elem
    attn_tp = args.tp_size // args.dp_size if args.enable_dp_attention else args.tp_size
    total_kv = cfg.get("num_key_value_heads") or cfg["num_attention_heads"]
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    return max(1, total_kv // attn_tp) * head_dim * layers * 2 * elem


def profile_max_num_token(pre_gib, post_gib, mem_fraction_static, cell):
    rest_memory = post_gib - pre_gib * (1 - mem_fraction_static)
    return int(rest_memory * (1 << 30) // cell)


def default_mem_fraction_static(gpu_mem_mib, tp_size, pp_size):
    """ServerArgs._handle_gpu_memory_settings (0.5.5-0.5.9) for GPUs of 90-160 GiB with defaults."""
    chunked_prefill_size, cuda_graph_max_bs = 8192, 512 if tp_size >= 4 else 256
    reserved = 512 + max(chunked_prefill_size, 2048) * 1.5 + cuda_graph_max_bs * 2 + tp_size * pp_size / 8 * 1024
    reserved = max(reserved, 10 * 1024) if gpu_mem_mib > 60 * 1024 else reserved
    return round((gpu_mem_mib - reserved) / gpu_mem_mib, 3)
