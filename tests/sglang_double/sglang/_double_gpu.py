"""The simulated GPU and SGLang's pool sizing, written from SGLang's source independently of the
repository's planner (a double that shared the planner's code could not catch the planner's bugs).

The simulated GPU is a JSON file named by SGLANG_DOUBLE_GPU (only molecule, the demo and the tests set
it). Every key, with its default:

  version                  "0.5.23"  the SGLang release impersonated: its own flag table (argument parser,
                                     flags-<release>.json), its pool rules (rules.json: the draft's load order,
                                     the EAGLE and DFLASH cells, the SM100 pages), its launch refusals, request
                                     checks and refusal shapes, --max-running-requests and multimodal reserve;
                                     a release between two of the table takes the older one's. Log lines are
                                     each release's own (LOG_LINES, read from the wheels).
  pre_load_avail_gib       85.334    free GiB on (this node's) least-free rank before the weights load, as the GPU
                                     would show it to an empty process (ct200)
  in_use_before_load_gib   0.0       GiB something else already holds on every GPU when SGLang starts
                                     (ct200 had ~10): the logged P is pre_load_avail_gib minus this
  rank_extra_avail_gib     []        extra free GiB of this node's GPU i over pre_load_avail_gib (list; missing
                                     = 0). Across nodes each node reads its own file, and the pool follows the
                                     least-free rank of all of them (sglang/_double_nodes.py)
  weights_gib_per_gpu      65.915    what the target's weights take per GPU (A = P - this; ct200: 19.419)
  draft_weights_gib_per_gpu 0.5      what a speculative draft model's weights take per GPU
  graph_gib                0.6       what CUDA-graph capture takes per GPU (target; a draft's takes a quarter)
  gpu_memory_mib           97887     total memory per GPU (the default --mem-fraction-static uses it)
  compute_cap              "12.0"    nvidia-smi compute_cap of the simulated GPU ("10.0": a B200, where the default
                                     attention backend forces its page size, sglang/_double_attention.py)
  load_seconds             0.2       time to load the target's weights; progress lines are paced over it
  draft_load_seconds       null      time to load the draft's weights (null: a tenth of load_seconds)
  graph_seconds            0.05      time to capture CUDA graphs
  checkpoint_shards        null      safetensors shards shown in the progress lines (null: counted from the
                                     checkpoint's model.safetensors.index.json, else 4)
  api                      "new"     "new" (0.5.9+: /server_info, /tokenize) or "old" (0.4.6)
  prefill_tokens_per_s     5.0e6     simulated prefill speed
  decode_seconds_per_token 0.0       simulated decode speed
  fault                    null      a failure to inject, as the real one looks:
                                       "cuda_oom_at_load"   torch.OutOfMemoryError half-way through the weights
                                       "not_enough_memory"  the release's own pool error, whatever the numbers
                                       "hang_at_load"       stops logging after 'Load weight begin' (timeouts)
                                       "crash"              serves, then dies fault_after_seconds after ready
                                       "wrong_when_batched" answers " Unknown." to a request decoded beside another
  fault_after_seconds      0.0       for "crash"
"""

import json
import math
import os
import re

GIB = 1 << 30

DEFAULTS = {
    "version": "0.5.23",
    "pre_load_avail_gib": 85.334,
    "in_use_before_load_gib": 0.0,
    "rank_extra_avail_gib": [],
    "weights_gib_per_gpu": 65.915,
    "draft_weights_gib_per_gpu": 0.5,
    "graph_gib": 0.6,
    "gpu_memory_mib": 97887,
    "compute_cap": "12.0",
    "load_seconds": 0.2,
    "draft_load_seconds": None,
    "graph_seconds": 0.05,
    "checkpoint_shards": None,
    "api": "new",
    "prefill_tokens_per_s": 5.0e6,
    "decode_seconds_per_token": 0.0,
    "fault": None,
    "fault_after_seconds": 0.0,
}
FAULTS = (None, "cuda_oom_at_load", "not_enough_memory", "hang_at_load", "crash", "wrong_when_batched")


def load_gpu():
    """The simulation, from SGLANG_DOUBLE_GPU (a JSON file); defaults imitate ct200."""
    gpu = dict(DEFAULTS)
    path = os.environ.get("SGLANG_DOUBLE_GPU")
    if path:
        with open(path, encoding="utf-8") as handle:
            gpu.update({k: v for k, v in json.load(handle).items() if not k.startswith("_")})
    if gpu["fault"] not in FAULTS:
        raise ValueError("SGLANG_DOUBLE_GPU fault=%r: use one of %s" % (gpu["fault"], FAULTS))
    return gpu


def release(gpu):
    """0.5.9 or 0.5.23: the family of the releases' launch refusals and pool-error wording (exact_release for the
    rules, log_lines for the start-up lines each release words its own way)."""
    return "0.5.9" if str(gpu.get("version", "")).startswith("0.5.9") else "0.5.23"


# The start-up lines whose wording changed between 0.5.9 and 0.5.23, as each release's wheel has them (sglang/srt/,
# read with `unzip -p` from /work/wheels; a .postN release words them as its base release). Each row: the first
# release of a wording, what changed from the row above. Lines not named here ("Load weight begin. avail mem=",
# "Memory pool end. avail mem=", "max_total_tokens=N is larger than the profiled value M. Use the profiled value
# instead.", the scheduler's "max_total_num_tokens=..." summary) read the same in every release 0.5.9-0.5.23.
#   weight_end  "dtype": "Load weight end. elapsed=, type=, dtype=torch.bfloat16, avail mem=, mem usage=."
#               "quant": the dtype gone, a quantization string (if any) in its place
#   kv_dtype    whether "KV Cache is allocated." names the pool's dtype before "#tokens:"
#   graph       the decode/verify CUDA graph capture lines' wording (see Boot.capture)
LOG_LINES = (
    ((0, 5, 9), {"weight_end": "dtype", "kv_dtype": False, "graph": "0.5.9"}),
    # 0.5.9 model_executor/model_runner.py:1040 `f"dtype={self.dtype}, "`; 0.5.10 model_runner.py:1246
    # `f"{quant_str + ', ' if quant_str else ''}"` in its place
    ((0, 5, 10), {"weight_end": "quant"}),
    # 0.5.12 mem_cache/memory_pool.py:744 "KV Cache is allocated. #tokens: ..."; 0.5.13 memory_pool.py:819 and
    # :825 "KV Cache is allocated. dtype: {self.dtype}, #tokens: ..."
    ((0, 5, 13), {"kv_dtype": True}),
    # 0.5.13 model_runner.py:2895 "Capture cuda graph begin. This can take up to several minutes. avail mem=" and
    # :2913 "Capture cuda graph end. Time elapsed: ... s. mem usage=... GB. avail mem=... GB."; 0.5.14
    # model_runner.py:2562-2566 "Capture {role} {decode|verify} CUDA graph begin. backend=, num_tokens_per_bs=,
    # bs=[...], avail mem=" and :2587-2591 "Capture ... CUDA graph end. elapsed= s, mem usage= GB, avail mem= GB."
    ((0, 5, 14), {"graph": "0.5.14"}),
    # 0.5.16 model_executor/model_runner_components/cuda_graph_setup.py:311-315: num_tokens_per_bs= renamed
    # num_tokens_per_req=
    ((0, 5, 16), {"graph": "0.5.16"}),
    # 0.5.22 cuda_graph_setup.py:715-719: bs=[...] leaves the begin line, and :744-749 the end line gains it
    # before elapsed=
    ((0, 5, 22), {"graph": "0.5.22"}),
)


def log_lines(gpu):
    """The wording of the start-up lines for the release the double impersonates (LOG_LINES)."""
    wanted = version_tuple(exact_release(gpu))
    found = {}
    for first, changes in LOG_LINES:
        if wanted >= first:
            found.update(changes)
    return found


# The real releases' tables (read from their wheels by tests/contract/extract_flags.py and extract_rules.py):
# packed into the wheel as _double_flags/, or the repository's own when run from the source tree.
TABLE_DIRS = (os.path.join(os.path.dirname(os.path.abspath(__file__)), "_double_flags"),
              os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, os.pardir, "lib",
                           "sglang_kvplan", "releases"))


def version_tuple(text):
    return tuple(int(n) for n in re.findall(r"\d+", str(text)))


def _rules_table():
    for folder in TABLE_DIRS:
        path = os.path.join(folder, "rules.json")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                return json.load(handle)["releases"]
    raise FileNotFoundError("SGLang double: no rules.json in %s" % ", ".join(TABLE_DIRS))


def exact_release(gpu):
    """The release of the table the double impersonates: gpu['version'] itself ('0.5.15', '0.5.23+double' ->
    '0.5.23'), else the newest older one of the table, else its oldest."""
    wanted = str(gpu.get("version") or DEFAULTS["version"]).split("+", 1)[0]
    names = sorted(_rules_table(), key=version_tuple)
    if wanted in names:
        return wanted
    older = [name for name in names if version_tuple(name) <= version_tuple(wanted)]
    return older[-1] if older else names[0]


def release_rules(gpu):
    """rules.json's entry for the impersonated release."""
    return _rules_table()[exact_release(gpu)]


def language_config(config):
    text = config.get("text_config")
    return text if isinstance(text, dict) and "num_hidden_layers" in text else config


def _model_dtype_bytes(config):
    """The served dtype's size: --dtype auto serves float32 checkpoints as float16 (bfloat16 for Gemma), 0.5.9 and
    0.5.23 configs/model_config.py _get_and_verify_dtype; every other dtype it serves is 2 bytes too."""
    return 2


def kv_elem_bytes(kv_cache_dtype, config):
    """The KV element size for a --kv-cache-dtype (mem_cache/kv_cache_dtype.py configure_kv_cache_dtype)."""
    if kv_cache_dtype in ("fp8_e4m3", "fp8_e5m2", "mxfp8"):
        return 1
    if kv_cache_dtype in ("bf16", "bfloat16"):
        return 2
    if kv_cache_dtype in ("fp4_e2m1", "nvfp4", "fp4_mx_block16"):
        return 1  # float4_e2m1fn_x2: one byte holds two values; the cell is halved below (MLA)
    quant = language_config(config).get("quantization_config") or config.get("quantization_config") or {}
    if str(quant.get("kv_cache_quant_algo", "")).upper() == "FP8":
        return 1
    return _model_dtype_bytes(config)


def attn_tp_size(args):
    """tp / attention DP, the layout the release resolved (sglang/_double_attention.py)."""
    dp = args.attn_dp_size or (args.dp_size if args.enable_dp_attention else 1)
    return max(1, args.tp_size // max(1, dp))


def num_layers(config, pp_size):
    return math.ceil(language_config(config)["num_hidden_layers"] / pp_size)


def mha_geometry(config):
    cfg = language_config(config)
    total_kv = cfg.get("num_key_value_heads") or cfg["num_attention_heads"]
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    v_head_dim = cfg.get("v_head_dim") or head_dim
    return total_kv, head_dim, v_head_dim


def dsa_cell(cfg, args, layers, rules):
    """DeepSeek-V3.2: 0.5.23 pool_configurator.py _compute_cell_size :379-409 with
    kv_cache_configurator.py calculate_mla_kv_cache_dim :3412-3475 (the raw row under a trtllm kernel or in bf16,
    fp8 with a 4-byte scale per 128 and the rope in bf16 otherwise) and the indexer's fp8 keys and scales per layer;
    0.5.15-0.5.16 (rules.json dsa_layout 'v32_raw_sized') count the raw row whatever the kernels."""
    rank, rope, index = cfg["kv_lora_rank"], cfg["qk_rope_head_dim"], cfg["index_head_dim"]
    elem = 1 if args.kv_cache_dtype == "fp8_e4m3" else 2
    raw = "trtllm" in (args.dsa_prefill_backend, args.dsa_decode_backend) or elem == 2 \
        or (rules or {}).get("dsa_layout") == "v32_raw_sized"
    row = (rank + rope) * elem if raw else rank + rank // 128 * 4 + rope * 2
    return (row + index + index // 128 * 4) * layers


def target_cell(config, args, rules=None):
    """Bytes per token per GPU of the target's pool: 0.5.9 ModelRunner.get_cell_size_per_token
    (model_runner_kv_cache_mixin.py), 0.5.23 DefaultPoolConfigurator._compute_cell_size
    (model_executor/pool_configurator.py)."""
    cfg = language_config(config)
    elem = kv_elem_bytes(args.kv_cache_dtype, config)
    layers = num_layers(config, args.pp_size)
    if cfg.get("kv_lora_rank") and getattr(args, "dsa_decode_backend", None):
        return dsa_cell(cfg, args, layers, rules)
    if cfg.get("kv_lora_rank"):
        cell = (cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]) * layers * elem
        if args.kv_cache_dtype in ("fp4_e2m1", "nvfp4", "fp4_mx_block16"):  # kv_scale_buffer, block 16
            cell = cell // 2 + (cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]) // 16 * layers * elem
        return cell
    total_kv, head_dim, v_head_dim = mha_geometry(config)
    return max(1, total_kv // attn_tp_size(args)) * (head_dim + v_head_dim) * layers * elem


def draft_layers(draft_config):
    """EAGLE/MTP drafts: num_nextn_predict_layers, else the draft's own layers
    (0.5.23 spec_aux_hidden_state.py _resolve_eagle_aux_hidden_state; 0.5.9 profile_max_num_token)."""
    cfg = language_config(draft_config)
    return int(cfg.get("num_nextn_predict_layers") or draft_config.get("num_nextn_predict_layers")
               or cfg["num_hidden_layers"])


def dflash_draft_cell(draft_config, args, rules=None):
    """0.5.23 speculative/dflash_utils.py dflash_draft_cell_size_per_token, with the draft's KV dtype from
    mem_cache/kv_cache_dtype.py (--speculative-draft-kv-cache-dtype, else --kv-cache-dtype; "auto" is the
    draft's own dtype; an fa4 draft keeps the model dtype where the release says so: "DFLASH fa4 draft:
    overriding KV cache dtype", 0.5.16+) and heads split over the draft's attention TP (speculative/
    draft_parallel.py: the target's attention TP when there is no context parallelism), times attn_dcp_size."""
    dtype = args.speculative_draft_kv_cache_dtype or args.kv_cache_dtype
    elem = _model_dtype_bytes(draft_config) if dtype == "auto" else kv_elem_bytes(dtype, draft_config)
    if (rules or {}).get("dflash_draft_backend") and getattr(args, "dflash_draft_backend", None) == "fa4":
        elem = _model_dtype_bytes(draft_config)
    total_kv, head_dim, v_head_dim = mha_geometry(draft_config)
    heads = max(1, total_kv // attn_tp_size(args))  # ModelConfig.get_num_kv_heads
    return heads * (head_dim + v_head_dim) * language_config(draft_config)["num_hidden_layers"] * elem


def draft_cell_059(draft_config, args):
    """0.5.9: the draft worker's own pool (same token count as the target's), cell from the draft config."""
    cfg = language_config(draft_config)
    elem = kv_elem_bytes(args.kv_cache_dtype, draft_config)
    layers = draft_layers(draft_config)
    if cfg.get("kv_lora_rank"):
        return (cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]) * layers * elem
    total_kv, head_dim, v_head_dim = mha_geometry(draft_config)
    return max(1, total_kv // attn_tp_size(args)) * (head_dim + v_head_dim) * layers * elem


def pool_cells(config, draft_config, args, rules, algorithm):
    """(target part, draft part inside the cell, draft cell beside the pool) of each token as the release budgets
    it (rules.json, model_executor/pool_configurator.py of each release):
    - EAGLE/STANDALONE/NEXTN ('eagle_cell'): 'scaled_sum' (0.5.22+) cell + int(cell x Ld / L); 'scaled_product'
      (0.5.14-0.5.21) int(cell x (1 + Ld / L)); 'separate' (0.5.9-0.5.13) the target's cell only, the draft
      runner's own pool of the same token count beside it (its cell from the draft config).
    - DFLASH ('dflash_cell'): 'draft_cell' (0.5.18+) the draft's own cell added; 'layer_scaled' (0.5.11-0.5.17)
      ceil(cell x (L + Ld) / L) (scale_kv_cell_size_per_token_for_dflash)."""
    cell = target_cell(config, args, rules)
    if draft_config is None or algorithm is None:
        return cell, 0, 0
    layers = num_layers(config, args.pp_size)
    if algorithm in ("DFLASH", "DSPARK"):  # is_dflash_family()
        if rules["dflash_cell"] == "draft_cell":
            return cell, dflash_draft_cell(draft_config, args, rules), 0
        if rules["dflash_cell"] == "layer_scaled":
            ld = language_config(draft_config)["num_hidden_layers"]
            return cell, -(-cell * (layers + ld) // layers) - cell, 0
        return cell, 0, draft_cell_059(draft_config, args)
    if algorithm in ("EAGLE", "EAGLE3", "FROZEN_KV_MTP", "NEXTN", "STANDALONE"):  # is_eagle(), NEXTN -> EAGLE
        ld = draft_layers(draft_config)
        if rules["eagle_cell"] == "scaled_sum":
            return cell, int(cell * ld / layers), 0
        if rules["eagle_cell"] == "scaled_product":
            return cell, int(cell * (1 + ld / layers)) - cell, 0
        return cell, 0, draft_cell_059(draft_config, args)
    return cell, 0, 0


def profile_max_num_token(pre_gib, avail_gib, mem_fraction_static, cell):
    """rest = avail - pre x (1 - f), in GiB, then bytes // cell (both releases; 0.5.23
    KVCacheConfigurator._profile_available_bytes + DefaultPoolConfigurator.calculate_pool_sizes)."""
    rest_memory = avail_gib - pre_gib * (1 - mem_fraction_static)
    return int(rest_memory * GIB) // cell, rest_memory


def default_mem_fraction_static(gpu_mem_mib, tp_size, pp_size):
    """ServerArgs._handle_gpu_memory_settings (0.5.5-0.5.9) for GPUs of 90-160 GiB with defaults."""
    chunked_prefill_size, cuda_graph_max_bs = 8192, 512 if tp_size >= 4 else 256
    reserved = 512 + max(chunked_prefill_size, 2048) * 1.5 + cuda_graph_max_bs * 2 + tp_size * pp_size / 8 * 1024
    reserved = max(reserved, 10 * 1024) if gpu_mem_mib > 60 * 1024 else reserved
    return round((gpu_mem_mib - reserved) / gpu_mem_mib, 3)


def checkpoint_shards(model_path, gpu):
    if gpu.get("checkpoint_shards"):
        return int(gpu["checkpoint_shards"])
    index = os.path.join(model_path, "model.safetensors.index.json")
    try:
        with open(index, encoding="utf-8") as handle:
            return max(1, len(set(json.load(handle).get("weight_map", {}).values())))
    except (OSError, ValueError):
        return 4
