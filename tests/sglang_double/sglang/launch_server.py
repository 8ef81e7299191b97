"""`python -m sglang.launch_server <flags>`, as SGLang's, for the TEST DOUBLE (see sglang/__init__.py).

Boot, as the impersonated release (SGLANG_DOUBLE_GPU "version": 0.5.23 by default, or 0.5.9) logs it:
parse the flags with the release's own flag table (a flag, alias, type or choice the release does not have
is refused with argparse's error and exit code 2; `--config <yaml>` merged first), read the model's
config.json (and the draft's), refuse custom code without --trust-remote-code, "load" the target's and the
draft's weights on the simulated GPU, size the KV pool with that release's formula (draft KV, the
--max-total-tokens cap, page rounding), capture CUDA graphs, then serve HTTP. See sglang/_double_boot.py.

Across nodes (`--nnodes N --node-rank R --dist-init-addr host:port`): each node runs its slice of the ranks, meets
the others over TCP at the rendezvous, sizes the pool from the least-free rank of every node; node 0 serves the API,
the others only SGLang's dummy health endpoints. See sglang/_double_nodes.py.
"""

import json
import logging
import os
import sys
import threading
import warnings
from datetime import datetime

from sglang import __version__
from sglang import _double_gpu as sim
from sglang._double_args import (
    build_parser,
    check_speculative_algorithm,
    load_table,
    num_reserved_tokens,
    resolve_chunked_prefill,
    resolve_speculative,
    server_args,
)
from sglang._double_attention import attn_dp_size, dflash_draft_backend, resolve_dp_attention, resolve_page_size
from sglang._double_boot import Boot, BootError, check_tokenizer, kv_dtype_name, log, read_config
from sglang._double_config import ConfigArgumentMerger
from sglang._double_http import release_tuple, serve, serve_dummy_health
from sglang._double_multimodal import mm_reservation_gib
from sglang._double_nodes import Cluster, check_launch, init_parallel


def prepare_server_args(argv, table=None):
    """As SGLang's `prepare_server_args` (0.5.9 and 0.5.23 `srt/server_args.py`): the release's parser; a
    `--config` YAML file's options merged in before parsing (sglang/_double_config.py)."""
    table = table or load_table(sim.exact_release(sim.load_gpu()))
    parser = build_parser(table)
    if "--config" in argv:
        argv = ConfigArgumentMerger(parser).merge_config_with_args(argv)
    has_attn_dp_size = any("--attn-dp-size" in flag["names"] for flag in table["flags"])
    return resolve_dp_attention(server_args(parser.parse_args(argv)), has_attn_dp_size)


# The keys SGLang reads a model's window from, first present wins (0.5.15 and 0.5.23 utils/hf_transformers/
# common.py CONTEXT_LENGTH_KEYS).
_WINDOW_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings")


def _derived_context_len(text):
    """get_context_length (0.5.23 common.py:677-695): the window times rope_scaling's factor, a factor that counts
    only when the scaling names no original_max_position_embeddings and is not llama3's."""
    scaling = text.get("rope_scaling") or {}
    factor = scaling.get("factor", 1)
    if "original_max_position_embeddings" in scaling or scaling.get("rope_type") == "llama3":
        factor = 1
    window = next((text[key] for key in _WINDOW_KEYS if text.get(key) is not None), None)
    return 2048 if window is None else int(factor * window)


def _context_len(args, config):
    text = sim.language_config(config)
    override = json.loads(getattr(args, "json_model_override_args", None) or "{}")
    if text is config:  # --json-model-override-args updates the top-level config (hf_transformers get_config)
        text = dict(config, **override)
    derived = _derived_context_len(text)
    context_len = args.context_length or derived
    if context_len > derived and os.environ.get("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN") != "1":
        raise BootError(
            "ValueError",
            "User-specified context_length (%d) is greater than the derived context_length (%d). This may lead "
            "to incorrect model outputs or CUDA errors. Note that the derived context_length may differ from "
            "max_position_embeddings in the model's config. To allow overriding this maximum, set the env var "
            "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" % (context_len, derived))
    return context_len


def _max_running_requests(args, tokens, context_len, version):
    """(max running requests per DP worker, the requested number per worker or None), as the release resolves it.
    Unset, every release takes min(estimated, pool // 2). A given --max-running-requests is
    - 0.5.9: given // dp_size, never capped by the pool (model_executor/model_runner.py:593-600; the request
      table is sized to the given number, model_runner_kv_cache_mixin.py:340, 473-476);
    - 0.5.10 to 0.5.13.post1: min(given // dp_size, estimated) (model_runner_kv_cache_mixin.py
      _resolve_max_num_reqs, 0.5.10:840-851);
    - 0.5.14 to 0.5.22: min(given // attn_dp_size, pool // 2), with a warning when reduced (0.5.14
      model_runner_kv_cache_mixin.py:981-1017; 0.5.16+ mem_cache/kv_cache_configurator.py resolve_max_num_reqs);
    - 0.5.23: the same with at least 1 per worker (kv_cache_configurator.py:3119-3172)."""
    estimated = min(max(int(tokens / context_len * 512), 2048), 4096)
    if args.max_running_requests is None:
        return min(estimated, tokens // 2), None
    release = release_tuple(version)
    per_worker = args.max_running_requests // attn_dp_size(args)
    if release < (0, 5, 10):
        return per_worker, None
    if release < (0, 5, 14):
        return min(per_worker, estimated), None
    if release >= (0, 5, 23):
        per_worker = max(1, per_worker)
    return min(per_worker, tokens // 2), per_worker


def _resolve_dflash_draft_tokens(args, draft_config):
    """0.5.23 arg_groups/speculative_hook.py _handle_dflash (:368-420; 0.5.11 server_args.py:3358-3420):
    --speculative-dflash-block-size is the draft tokens (a different --speculative-num-draft-tokens is refused);
    unset, the draft's block_size (its dflash_config's key if present, even null, else the top level:
    speculative/dflash_utils.py:608-617), int() of it, 16 with a warning when absent or unusable."""
    block_flag = getattr(args, "speculative_dflash_block_size", None)
    if block_flag is not None:
        if int(block_flag) <= 0:
            raise ValueError("DFLASH requires --speculative-dflash-block-size to be positive, got %s." % block_flag)
        if args.speculative_num_draft_tokens is not None and int(args.speculative_num_draft_tokens) != int(block_flag):
            raise ValueError(
                "Both --speculative-num-draft-tokens and --speculative-dflash-block-size are set but they differ. "
                "For DFLASH they must match. speculative_num_draft_tokens=%s, speculative_dflash_block_size=%s."
                % (args.speculative_num_draft_tokens, block_flag))
        args.speculative_num_draft_tokens = int(block_flag)
    if args.speculative_num_draft_tokens is not None:
        return
    nested = draft_config.get("dflash_config")
    raw = (nested if isinstance(nested, dict) else {}).get("block_size", draft_config.get("block_size"))
    try:  # dflash_utils.py _parse_optional_int:501-516, its messages
        try:
            block = None if raw is None else int(raw)
        except (TypeError, ValueError, OverflowError):
            raise ValueError("Invalid DFLASH block_size=%r." % (raw,)) from None
        if block is not None and block < 1:
            raise ValueError("DFLASH block_size must be positive, got %d." % block)
    except ValueError as error:
        log("Failed to infer DFLASH block_size from draft model config; defaulting speculative_num_draft_tokens "
            "to 16. Error: %s" % error)
        block = None
    if block is None:
        block = 16
        log("speculative_num_draft_tokens is not set; defaulting to %d for DFLASH." % block)
    args.speculative_num_draft_tokens = block


def boot(args, gpu, table, cluster=None):
    """Everything SGLang does before serving; returns the scheduler's view for the HTTP layer. With a `cluster`
    (multi-node), this node's ranks only, their MINs taken over every node."""
    algorithm = check_speculative_algorithm(table, args.speculative_algorithm)
    config = read_config(args.model_path)
    check_tokenizer(args, config)
    context_len = _context_len(args, config)
    draft_path = args.speculative_draft_model_path
    draft_config = read_config(draft_path) if draft_path and algorithm not in (None, "NGRAM") else None
    nextn = sim.language_config(config).get("num_nextn_predict_layers") or 0
    if draft_config is None and algorithm in ("EAGLE", "NEXTN") and nextn:
        # MTP from the target's own checkpoint (DeepSeek-V3-style NextN layers): the draft worker loads those
        # layers as a second model (0.5.23 spec_aux_hidden_state.py: a path-less NEXTN/MTP head is the target
        # checkpoint in its MTP form; 0.5.9 server_args.py points the draft path at the model path).
        arch = (config.get("architectures") or ["Model"])[0]
        draft_config = dict(sim.language_config(config), architectures=[arch + "NextN"])
        draft_path = args.model_path
    if algorithm in ("DFLASH", "DSPARK"):
        _resolve_dflash_draft_tokens(args, draft_config or {})
    fraction = args.mem_fraction_static
    if fraction is None:
        fraction = sim.default_mem_fraction_static(gpu["gpu_memory_mib"], args.tp_size, args.pp_size)

    run = Boot(args, gpu, table, cluster)
    rules = sim.release_rules(gpu)
    backend = resolve_page_size(args, config, gpu, run.rel, lambda message: run.all(message.replace("%", "%%")),
                                rules)
    if algorithm == "DFLASH" and draft_config is not None:
        args.dflash_draft_backend = dflash_draft_backend(backend, draft_config, gpu, rules)
    resolve_speculative(args, config)
    resolve_chunked_prefill(args, gpu["gpu_memory_mib"], attn_dp_size(args))
    if cluster:
        pre = init_parallel(run)  # the rendezvous with the other nodes, then P as the MIN over all of them
    else:
        for rank in run.ranks:
            log("Init torch distributed ends. mem usage=%.2f GB" % 0.55, rank)
        pre = min(run.avail)  # pre_model_load_memory, MIN over ranks
    run.load(config, args.model_path, gpu["weights_gib_per_gpu"], gpu["load_seconds"])
    weights_gib = gpu["weights_gib_per_gpu"]
    draft_seconds = gpu["draft_load_seconds"] if gpu["draft_load_seconds"] is not None else gpu["load_seconds"] / 10
    # 0.5.14+ (rules.json draft_load 'before_pool', managers/scheduler.py init_model_worker): the draft loads
    # before the target's pool; 0.5.9-0.5.13: the target's ModelRunner builds its pool while it loads, the
    # draft worker comes after the target is ready
    before_pool = draft_config is not None and rules["draft_load"] == "before_pool"
    if before_pool:
        run.load(draft_config, draft_path, gpu["draft_weights_gib_per_gpu"], draft_seconds, draft=True)
        weights_gib += gpu["draft_weights_gib_per_gpu"]

    target_part, draft_part, beside = sim.pool_cells(config, draft_config, args, rules, algorithm)
    tokens, profiled, capped = run.size_pool(pre, fraction, target_part + draft_part,
                                             mm_reservation_gib(config, args, run.rel, gpu.get("version", __version__)))
    dtype_name = kv_dtype_name(args.kv_cache_dtype, config)
    kv_gib = run.allocate(tokens, target_part, config, dtype_name)
    graph_gib = gpu["graph_gib"]
    draft_dtype = kv_dtype_name(args.speculative_draft_kv_cache_dtype or args.kv_cache_dtype, draft_config or {})
    if before_pool:
        # the draft runner's own pool, same token count, the part its cell budgeted (scheduler.init_memory_pools)
        if draft_part:
            kv_gib += run.allocate(tokens, draft_part, draft_config, draft_dtype)
        run.capture(graph_gib)
        run.capture(graph_gib / 4, role="draft")
        graph_gib += graph_gib / 4
    else:
        run.capture(graph_gib)
    if draft_config is not None and not before_pool:
        run.load(draft_config, draft_path, gpu["draft_weights_gib_per_gpu"], draft_seconds, draft=True)
        weights_gib += gpu["draft_weights_gib_per_gpu"]
        # its own pool of the same token count: the part the scaled cell budgeted, or one beside the budget
        kv_gib += run.allocate(tokens, draft_part or beside, draft_config, draft_dtype)
        run.capture(graph_gib / 4)
        graph_gib += graph_gib / 4

    running, requested = _max_running_requests(args, tokens, context_len, gpu.get("version", __version__))
    if requested is not None and running < requested:
        run.all("max_running_requests was reduced from the requested %d to %d (per dp worker) due to the "
                "available KV cache capacity." % (requested, running))
    chunked = args.chunked_prefill_size
    if 0 in run.ranks:  # scheduler.py logs it on tp_rank 0 only
        log("max_total_num_tokens=%d, chunked_prefill_size=%d, max_prefill_tokens=%d, max_running_requests=%d, "
            "context_len=%d, available_gpu_mem=%.2f GB" % (tokens, chunked, 16384, running, context_len,
                                                           run.avail[0]), 0)
    return {
        "config": config,
        "context_len": context_len,
        "max_total_num_tokens": tokens,
        "profiled_tokens": profiled,
        "capped": capped,
        "max_req_input_len": min(context_len - 1, tokens - 1) - 5,
        "num_reserved_tokens": num_reserved_tokens(args),
        "max_running_requests": running,
        "mem_fraction_static": fraction,
        "kv_gb": kv_gib,
        "weight_gb": weights_gib,
        "graph_gb": graph_gib,
        "startup_available": pre,
        "avail_after_boot": min(run.avail),
    }


def _fail(error, rank=0):
    """As SGLang's scheduler process reports a failed start: the traceback on the node's first rank, then the
    parent exits."""
    cause = ("%s\n\nThe above exception was the direct cause of the following exception:\n\n"
             "Traceback (most recent call last):\n" % error.cause) if getattr(error, "cause", None) else ""
    kind = getattr(error, "kind", type(error).__name__)
    log("Scheduler hit an exception: Traceback (most recent call last):\n%s%s: %s" % (cause, kind, error), rank)
    print("%s: %s" % (kind, error), file=sys.stderr, flush=True)
    print("[%s] Received sigquit from a child process. It usually means the child failed."
          % datetime.now().strftime("%Y-%m-%d %H:%M:%S"), flush=True)
    return 1


def _refuse(error):
    """A check that fails in the launch process itself (check_server_args), before any scheduler starts: Python's
    traceback, exit 1."""
    print("Traceback (most recent call last):\n%s: %s" % (error.kind, error), file=sys.stderr, flush=True)
    return 1


def _log_server_args(args, release):
    """The start-up line the launching process logs at INFO once check_server_args passed, api_key in clear, to
    stderr with configure_logger's format: 0.5.23 entrypoints/engine.py:1185 `logger.info(f"server_args=
    {_server_args_for_logging(server_args)}")` (a dict of the resolved fields; only watermark secrets redacted),
    0.5.9 entrypoints/engine.py:1031 `logger.info(f"{server_args=}")` (the dataclass's repr)."""
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(message)s", datefmt="%Y-%m-%d %H:%M:%S",
                        force=True)
    fields = {name: value for name, value in sorted(vars(args).items()) if not name.startswith("_")}
    logger = logging.getLogger("sglang.srt.entrypoints.engine")
    if release == "0.5.9":
        logger.info(f"server_args=ServerArgs({', '.join('%s=%r' % item for item in fields.items())})")
    else:
        logger.info(f"server_args={fields}")


def _crash_later(seconds, rank=0):
    def crash():
        _fail(BootError("RuntimeError", "CUDA error: an illegal memory access was encountered\nCUDA kernel "
                        "errors might be asynchronously reported at some other API call, so the stacktrace below "
                        "might be incorrect."), rank)
        os._exit(1)

    timer = threading.Timer(seconds, crash)
    timer.daemon = True
    timer.start()


def main(argv=None):
    gpu = sim.load_gpu()
    table = load_table(sim.exact_release(gpu))
    if sim.release(gpu) == "0.5.23":  # 0.5.23 launch_server.py's __main__
        warnings.warn("'python -m sglang.launch_server' is still supported, but 'sglang serve' is the recommended "
                      "entrypoint.\n  Example: sglang serve --model-path <model> [options]", UserWarning, stacklevel=1)
    args = prepare_server_args(list(sys.argv[1:] if argv is None else argv), table)
    try:
        check_launch(args, sim.release(gpu), sim.release_rules(gpu))
    except BootError as error:
        return _refuse(error)
    _log_server_args(args, sim.release(gpu))
    cluster = Cluster(args) if args.nnodes > 1 else None
    first_rank = cluster.ranks[0] if cluster else 0
    try:
        state = boot(args, gpu, table, cluster)
    except (BootError, ValueError, OSError) as error:
        return _fail(error, first_rank)
    state["version"] = gpu.get("version", __version__)
    if gpu["fault"] == "crash":
        _crash_later(float(gpu["fault_after_seconds"]) + 0.01, first_rank)
    if cluster and args.node_rank >= 1:
        return _serve_follower(args, cluster)
    if cluster:  # a node that goes away takes the server down (its gloo broadcast fails)
        cluster.wait_while_peers_live(lambda error: (_fail(error, 0), os._exit(1)))
    serve(args, gpu, state, log)
    return 0


def _serve_follower(args, cluster):
    """A node of rank >= 1 once its schedulers are ready (0.5.23 entrypoints/engine.py _launch_subprocesses,
    node_rank >= 1): no tokenizer, no API; the dummy health server on --host/--port; it lasts as long as node 0."""
    serve_dummy_health(args, log)
    lost = []
    done = threading.Event()
    cluster.wait_while_peers_live(lambda error: (lost.append(error), done.set()))
    done.wait()
    return _fail(lost[0], cluster.ranks[0])


if __name__ == "__main__":
    sys.exit(main())
