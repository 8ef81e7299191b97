"""Everything the TEST DOUBLE does before serving, in the order and wording of the release it impersonates.

0.5.23 (managers/scheduler.py init_model_worker): target weights -> draft weights (a second 'Load weight
begin/end' pair) -> the target's pool, sized AFTER both loads (mem_cache/kv_cache_configurator.py
_profile_available_bytes: "Loaded weights (target + draft)"), with the draft's KV inside each token's cell
-> the draft's pool -> CUDA graphs (target, then draft).
0.5.9 (model_executor/model_runner.py initialize): target weights -> target pool -> CUDA graphs; then the
draft worker: its weights, its pool of the same token count (draft_runner_cache_size) and its graphs, all
out of the memory the target's pool left free.
"""

import json
import math
import os
import sys
import time
from datetime import datetime

from sglang import _double_gpu as sim

GB = 1 << 30


class BootError(Exception):
    """What SGLang raises; `kind` is the exception's class name as the traceback shows it."""

    def __init__(self, kind, message, cause=None):
        super().__init__(message)
        self.kind, self.cause = kind, cause


def log(message, rank=None):
    stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    print("[%s%s] %s" % (stamp, "" if rank is None else " TP%d" % rank, message), flush=True)


def _interval(seconds):
    return "%02d:%02d" % divmod(int(seconds), 60)


def _progress(desc, done, total, elapsed):
    """tqdm's line as SGLang's loaders print it (weight_utils.py: bar_format '{desc}: {percentage:3.0f}%
    Completed | {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]'); e.g., from a public log
    (https://github.com/sgl-project/sglang/pull/7181):
    'Loading safetensors checkpoint shards:  74% Completed | 120/163 [00:37<00:12,  3.40it/s]'."""
    if done == 0:
        tail = "%s<?, ?it/s" % _interval(0)
    else:
        rate = done / elapsed if elapsed > 0 else float("inf")
        remaining = (total - done) / rate if rate != float("inf") else 0
        speed = ("%5.2fit/s" % rate) if rate >= 1 else ("%5.2fs/it" % (1 / rate))
        tail = "%s<%s, %s" % (_interval(elapsed), _interval(remaining), speed)
    print("%s: %3.0f%% Completed | %d/%d [%s]" % (desc, 100.0 * done / total, done, total, tail),
          file=sys.stderr, flush=True)


def shard_bar(args, release):
    """The shard bar's text as the release's loader picks it: "Multi-thread loading shards" where multi-threaded
    loading is on (0.5.10+ by default: model_loader/loader.py:482, 0.5.23 :613; 0.5.9 only when
    --model-loader-extra-config says enable_multithread_load, loader.py:479; 0.5.23 turns it off beside
    --weight-loader-prefetch-checkpoints unless that config names it, loader.py:665-690), else "Loading safetensors
    checkpoint shards" (weight_utils.py: 0.5.9 :723/:817, 0.5.23 :1166/:1371)."""
    try:
        extra = json.loads(getattr(args, "model_loader_extra_config", None) or "{}")
    except ValueError:
        extra = {}
    extra = extra if isinstance(extra, dict) else {}
    on = extra.get("enable_multithread_load", sim.version_tuple(release) >= (0, 5, 10))
    if (sim.version_tuple(release) >= (0, 5, 23) and getattr(args, "weight_loader_prefetch_checkpoints", False)
            and not {"enable_multithread_load", "num_threads"} & extra.keys()):
        on = False
    return "Multi-thread loading shards" if on else "Loading safetensors checkpoint shards"


def read_config(model_path):
    path = os.path.join(model_path, "config.json")
    if not os.path.isfile(path):
        raise BootError("OSError",
                        "Can't load the configuration of '%s'. If you were trying to load it from "
                        "'https://huggingface.co/models', make sure you don't have a local directory with the "
                        "same name. Otherwise, make sure '%s' is the correct path to a directory containing a "
                        "config.json file" % (model_path, model_path))
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _has_remote_code(model_path, config):
    if config.get("auto_map"):
        return True
    try:
        with open(os.path.join(model_path, "tokenizer_config.json"), encoding="utf-8") as handle:
            return bool(json.load(handle).get("auto_map"))
    except (OSError, ValueError):
        return False


def check_tokenizer(args, config):
    """A checkpoint with custom code (`auto_map`) and no --trust-remote-code: transformers refuses, and SGLang
    rewords it (0.5.9 utils/hf_transformers_utils.py get_tokenizer; 0.5.23 utils/hf_transformers/tokenizer.py
    _auto_tokenizer_from_pretrained)."""
    path = args.tokenizer_path or args.model_path
    if args.trust_remote_code or not _has_remote_code(path, config):
        return
    raise BootError(
        "RuntimeError",
        "Failed to load the tokenizer. If the tokenizer is a custom tokenizer not yet available in the "
        "HuggingFace transformers library, consider setting `trust_remote_code=True` in LLM or using the "
        "`--trust-remote-code` flag in the CLI.",
        cause="ValueError: Loading %s requires you to execute the tokenizer file in that repo on your local "
              "machine. Make sure you have read the code there to avoid malicious use, then set the option "
              "`trust_remote_code=True` to remove this error." % path)


def _cuda_oom(gpu, rank_free_gib, wanted_gib):
    total = gpu["gpu_memory_mib"] / 1024
    return BootError(
        "torch.OutOfMemoryError",
        "CUDA out of memory. Tried to allocate %.2f GiB. GPU %d has a total capacity of %.2f GiB of which %.2f "
        "GiB is free. Including non-PyTorch memory, this process has %.2f GiB memory in use. Of the allocated "
        "memory %.2f GiB is allocated by PyTorch, and 0.00 GiB is reserved by PyTorch but unallocated. If "
        "reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
        "to avoid fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
        % (wanted_gib, 0, total, max(rank_free_gib, 0.0), total - max(rank_free_gib, 0.0),
           total - max(rank_free_gib, 0.0)))


class Boot:
    """One node's ranks. Single node: all tp*pp ranks. Multi-node (`cluster`, sglang/_double_nodes.py): this node's
    slice of the world ranks, which its log lines carry; `avail` is per local GPU (index i = rank self.ranks[i])
    and the MINs the pool math takes are over every node's ranks."""

    def __init__(self, args, gpu, table, cluster=None):
        self.args, self.gpu, self.table, self.cluster = args, gpu, table, cluster
        self.rel = sim.release(gpu)
        self.lines = sim.log_lines(gpu)  # each release's own wording of its start-up lines
        self.ranks = cluster.ranks if cluster else list(range(args.tp_size * args.pp_size))
        # tqdm bars show on global rank 0 only (weight_utils.py enable_tqdm; cuda graph runner: tp_rank == 0)
        self.shows_progress = 0 in self.ranks
        extra = list(gpu.get("rank_extra_avail_gib") or [])
        pre = gpu["pre_load_avail_gib"] - gpu["in_use_before_load_gib"]
        self.avail = [pre + (extra[i] if i < len(extra) else 0.0) for i in range(len(self.ranks))]  # free GiB

    def min_avail(self):
        """get_available_gpu_memory(distributed=True): an all-reduce MIN over every rank of every node."""
        local = min(self.avail)
        return self.cluster.all_min(local) if self.cluster else local

    def all(self, fmt, values=None):
        for i, rank in enumerate(self.ranks):
            log(fmt % (values[i] if values else ()), rank)

    # -- weights -------------------------------------------------------------------------------------------
    def load(self, config, model_path, weights_gib, seconds, draft=False):
        arch = (config.get("architectures") or ["LlamaForCausalLM"])[0]
        for i, rank in enumerate(self.ranks):
            log("Load weight begin. avail mem=%.2f GB" % self.avail[i], rank)
        if self.gpu["fault"] == "hang_at_load" and not draft:
            while True:
                time.sleep(3600)
        shards = 1 if draft else sim.checkpoint_shards(model_path, self.gpu)
        desc = shard_bar(self.args, sim.exact_release(self.gpu))
        progress = _progress if self.shows_progress else (lambda *_: None)
        progress(desc, 0, shards, 0.0)
        start = time.monotonic()
        for done in range(1, shards + 1):
            time.sleep(seconds / shards)
            if self.gpu["fault"] == "cuda_oom_at_load" and not draft and done > shards // 2:
                raise _cuda_oom(self.gpu, min(self.avail) - weights_gib * done / shards, weights_gib / shards)
            progress(desc, done, shards, time.monotonic() - start)
        elapsed = time.monotonic() - start
        for i, rank in enumerate(self.ranks):
            self.avail[i] -= weights_gib
            if self.lines["weight_end"] == "dtype":  # 0.5.9 model_runner.py load_model
                log("Load weight end. elapsed=%.2f s, type=%s, dtype=torch.bfloat16, avail mem=%.2f GB, "
                    "mem usage=%.2f GB." % (elapsed, arch, self.avail[i], weights_gib), rank)
            else:  # 0.5.10+ model_runner.py load_model: quant string instead of dtype
                quant = self._quant_str(config)
                log("Load weight end. elapsed=%.2f s, type=%s, %savail mem=%.2f GB, mem usage=%.2f GB."
                    % (elapsed, arch, quant + ", " if quant else "", self.avail[i], weights_gib), rank)

    @staticmethod
    def _quant_str(config):
        """0.5.23 ModelConfig.get_quantization_config_log_str."""
        quant = sim.language_config(config).get("quantization_config") or config.get("quantization_config")
        if not quant:
            return ""
        parts = ["quant=%s" % quant.get("quant_method", "quantized")]
        parts += ["%s=%s" % (k, quant[k]) for k in ("bits", "quant_algo", "fmt", "requantization_method")
                  if k in quant]
        return ", ".join(parts)

    # -- the pool --------------------------------------------------------------------------------------------
    def size_pool(self, pre, fraction, cell, mm_reserve=0.0):
        """Tokens as the release sizes them; the cap and page rounding (0.5.9 init_memory_pool, 0.5.23
        KVCacheConfigurator._apply_token_constraints + calculate_pool_sizes[_from_max_tokens])."""
        args, page = self.args, self.args.page_size or 1
        avail = self.min_avail() - mm_reserve  # SGLang all-reduces MIN over ranks (of every node)
        if mm_reserve:
            log("Reserving %.2f GB of the KV budget for post-sizing multimodal allocations (feature-transport "
                "pools + embedding cache)." % mm_reserve, self.ranks[0])
        tokens, rest = sim.profile_max_num_token(pre, avail, fraction, cell)
        if self.gpu["fault"] == "not_enough_memory":
            tokens, rest = 0, -abs(rest)
        if sim.version_tuple(sim.exact_release(self.gpu)) >= (0, 5, 14):  # the check exists from 0.5.14
            if rest <= 0:  # _profile_available_bytes (0.5.15 model_runner_kv_cache_mixin.py:104-139)
                minimum = 1 - avail / pre
                raise BootError(
                    "ValueError",
                    "Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=%s. Raise "
                    "--mem-fraction-static above %.3f (minimum viable = 1 - available/pre = %.4f). If using "
                    "speculative decoding, draft weights are now counted."
                    % (fraction, math.ceil(minimum * 1000) / 1000, minimum))
            tokens = tokens // page * page  # calculate_pool_sizes
        profiled, capped = tokens, False
        if args.max_total_tokens is not None:
            if args.max_total_tokens > tokens:
                # logging.warning on the root logger, which configure_logger formats with the rank prefix
                self.all("max_total_tokens=%d is larger than the profiled value %d. Use the profiled value "
                         "instead." % (args.max_total_tokens, tokens))
            tokens = min(tokens, args.max_total_tokens)
            capped = tokens < profiled
        tokens = tokens // page * page
        if tokens <= 0:
            if self.rel == "0.5.9":
                raise BootError("RuntimeError", "Not enough memory. Please try to increase --mem-fraction-static. "
                                "Current value: self.server_args.mem_fraction_static=%s" % fraction)
            raise BootError("RuntimeError", "Not enough memory. Please try to increase --mem-fraction-static. "
                            "Current value: mem_fraction_static=%s" % fraction)
        return tokens, profiled, capped

    def allocate(self, tokens, cell, config, kv_dtype_name, label=""):
        """Allocate (tokens + page) x cell on every rank and log it as memory_pool.py does."""
        page = self.args.page_size or 1
        kv_gib = (tokens + page) * cell / GB
        cfg = sim.language_config(config)
        dtype = "dtype: %s, " % kv_dtype_name if self.lines["kv_dtype"] else ""  # 0.5.13+
        for i, rank in enumerate(self.ranks):
            self.avail[i] -= kv_gib
            if self.avail[i] < 0:
                raise _cuda_oom(self.gpu, self.avail[i] + kv_gib, kv_gib)
            if cfg.get("kv_lora_rank"):
                log("%sKV Cache is allocated. %s#tokens: %d, KV size: %.2f GB" % (label, dtype, tokens, kv_gib), rank)
            else:
                log("%sKV Cache is allocated. %s#tokens: %d, K size: %.2f GB, V size: %.2f GB"
                    % (label, dtype, tokens, kv_gib / 2, kv_gib / 2), rank)
        self.all("Memory pool end. avail mem=%.2f GB", [(a,) for a in self.avail])
        return kv_gib

    def capture(self, graph_gib, role="target"):
        seconds = self.gpu["graph_seconds"]
        speculative = self.args.speculative_algorithm is not None
        wording, name = self.lines["graph"], "%s %s" % (role, "verify" if speculative else "decode")
        per_req = (self.args.speculative_num_draft_tokens or 1) if speculative else 1
        sizes = "[1, 2, 4, 8, 12, 16, 24, 32]"
        for i, rank in enumerate(self.ranks):  # the wordings of sim.LOG_LINES, oldest first
            if wording == "0.5.9":
                log("Capture cuda graph begin. This can take up to several minutes. avail mem=%.2f GB"
                    % self.avail[i], rank)
            elif wording in ("0.5.14", "0.5.16"):
                log("Capture %s CUDA graph begin. backend=full, %s=%d, bs=%s, avail mem=%.2f GB"
                    % (name, "num_tokens_per_bs" if wording == "0.5.14" else "num_tokens_per_req", per_req, sizes,
                       self.avail[i]), rank)
            else:  # 0.5.22+ model_runner_components/cuda_graph_setup.py
                log("Capture %s CUDA graph begin. backend=full, num_tokens_per_req=%d, avail mem=%.2f GB"
                    % (name, per_req, self.avail[i]), rank)
        if self.shows_progress:
            print("Capturing batches (bs=1 avail_mem=%.2f GB):   0%%|          | 0/36 [00:00<?, ?it/s]"
                  % min(self.avail), file=sys.stderr, flush=True)
        time.sleep(seconds)
        if self.shows_progress:
            print("Capturing batches (bs=1 avail_mem=%.2f GB): 100%%|##########| 36/36 [%s<00:00, %5.2fit/s]"
                  % (min(self.avail) - graph_gib, _interval(seconds), 36 / max(seconds, 1e-3)), file=sys.stderr,
                  flush=True)
        for i, rank in enumerate(self.ranks):
            self.avail[i] -= graph_gib
            if wording == "0.5.9":
                log("Capture cuda graph end. Time elapsed: %.2f s. mem usage=%.2f GB. avail mem=%.2f GB."
                    % (seconds, graph_gib, self.avail[i]), rank)
            else:  # 0.5.22+ name the sizes here, not in the begin line
                log("Capture %s CUDA graph end. %selapsed=%.2f s, mem usage=%.2f GB, avail mem=%.2f GB."
                    % (name, "bs=%s, " % sizes if wording == "0.5.22" else "", seconds, graph_gib, self.avail[i]),
                    rank)


def kv_dtype_name(kv_cache_dtype, config):
    elem = sim.kv_elem_bytes(kv_cache_dtype, config)
    if kv_cache_dtype in ("fp4_e2m1", "nvfp4", "fp4_mx_block16"):
        return "torch.float4_e2m1fn_x2"
    if elem == 1:
        return "torch.float8_e5m2" if kv_cache_dtype == "fp8_e5m2" else "torch.float8_e4m3fn"
    cfg = sim.language_config(config)
    served = str(cfg.get("torch_dtype") or config.get("torch_dtype") or config.get("dtype") or "float32")
    if kv_cache_dtype != "auto" or served in ("bfloat16", "bf16"):
        return "torch.bfloat16"
    if served in ("float32", "float"):
        # --dtype auto serves float32 (and a config without a dtype) as float16, bfloat16 for Gemma
        # (configs/model_config.py _get_and_verify_dtype)
        return "torch.bfloat16" if str(config.get("model_type", "")).startswith("gemma") else "torch.float16"
    return "torch.float16"
