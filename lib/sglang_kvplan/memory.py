"""P and A (free GiB before and after the weights load) and SGLang's pool formula.

SGLang sizes the pool once, at startup (model_runner profile_max_num_token, every version 0.4-0.5.23):
    rest_gib = A - P * (1 - mem_fraction_static)      (A less a draft's weights where 0.5.23 loads it first)
    N        = floor(rest_gib * 2**30 / cell_bytes) // page_size * page_size
(a hybrid linear-attention model's state pool takes its share of rest_gib first: linear.py). P and A are MIN
over all ranks, in GiB ("GB" in SGLang's logs is GiB). They are measured by a
calibration (the 'avail mem' that 'Load weight begin/end' logs), or estimated before the first boot.
"""

import math

from .architectures import architecture, release_table
from .geometry import attn_tp_size, text_config
from .linear import state_pool
from .model import cell_bytes, mtp_head_gib, mtp_head_weights
from .pages import pool_page
from .spec import KVPlanError, gpu_major

GIB = 1 << 30
MIB_PER_GIB = 1024


def memory(spec):
    """Return (P, A, calibrated, assumptions) for a normalised spec."""
    if spec["pre_load_avail_gib"] is not None:
        return spec["pre_load_avail_gib"], spec["post_load_avail_gib"], True, []

    if spec["gpu_memory_mib"] is None:
        raise KVPlanError("spec: no memory figures. Give a calibration (pre_load_avail_gib and "
                          "post_load_avail_gib from SGLang's 'Load weight begin/end' log lines) or "
                          "gpu_memory_mib (nvidia-smi memory.total of the smallest GPU) for an estimate.")
    gpus_per_replica = spec["tp_size"] * spec["pp_size"]
    if spec["weights_gib_per_gpu"] is not None:
        weights = spec["weights_gib_per_gpu"]
        weights_note = "weights_gib_per_gpu %.2f GiB as given" % weights
    elif spec["checkpoint_gib"] is not None:
        weights = (spec["checkpoint_gib"] - mtp_head_gib(spec)) / gpus_per_replica  # the MTP head: draft_weights
        weights_note = ("weights %.2f GiB per GPU: checkpoint %.1f GiB%s split evenly over tp x pp = %d GPUs"
                        % (weights, spec["checkpoint_gib"], (" less its MTP head (%.2f GiB, the draft)"
                                                             % mtp_head_gib(spec)) if mtp_head_gib(spec) else "",
                           gpus_per_replica))
    else:
        raise KVPlanError("spec: an uncalibrated plan needs weights_gib_per_gpu or checkpoint_gib "
                          "(the checkpoint's safetensors size); neither is set.")
    pre = spec["gpu_memory_mib"] / MIB_PER_GIB - spec["preload_overhead_gib"]
    assumptions = [
        "P %.2f GiB: nvidia-smi memory.total %d MiB minus preload_overhead_gib %.2f GiB "
        "(CUDA context, NCCL, other processes)" % (pre, spec["gpu_memory_mib"], spec["preload_overhead_gib"]),
        weights_note,
        "A %.2f GiB = P - weights; load-time buffers and uneven shards are not modelled" % (pre - weights),
    ]
    return pre, pre - weights, False, assumptions


def draft_weights(spec):
    """(GiB per GPU, note) of a speculative draft's weights: measured, or its checkpoint over attention TP."""
    spec_cfg = spec["speculative"]
    if not spec_cfg or spec_cfg["algorithm"] == "NGRAM":
        return 0.0, None
    if spec_cfg["draft_weights_gib"] is not None:
        return spec_cfg["draft_weights_gib"], "draft weights %.2f GiB per GPU (measured or given)" % (
            spec_cfg["draft_weights_gib"])
    if spec_cfg["draft_checkpoint_gib"] is not None:
        weights = spec_cfg["draft_checkpoint_gib"] / attn_tp_size(spec)
        return weights, ("draft weights %.2f GiB per GPU: its checkpoint %.2f GiB over attention TP %d "
                         "(an estimate)" % (weights, spec_cfg["draft_checkpoint_gib"], attn_tp_size(spec)))
    if mtp_head_gib(spec):
        return mtp_head_weights(spec)
    return 0.0, "draft weights not known (no draft checkpoint size): counted as 0 until a boot measures them"


def draft_loads_before_profile(spec):
    """0.5.14+ loads the draft before it profiles the pool (its weights come out of f x P); 0.5.9-0.5.13 after."""
    return bool(spec["speculative"]) and spec["_rules"]["draft_load"] == "before_pool"


def is_multimodal(spec):
    """SGLang's ModelConfig.is_multimodal (configs/model_config.py) with its defaults: the architecture is in the
    release's multimodal list (or the checkpoint nests its language model under text_config), multimodal is not
    off by default for it (Gemma3, Llama4, ... need --enable-multimodal), and the checkpoint is not
    language_model_only."""
    config, rules = spec["model_config"], spec["_rules"]
    archs = config.get("architectures") or []
    if not isinstance(archs, list) or not archs or config.get("language_model_only"):
        return False
    if archs[0] in rules["multimodal_off_archs"]:
        return False
    return bool(set(archs) & set(rules["multimodal_archs"])) or text_config(config) is not config


# 0.5.23 arg_groups/model_overrides/qwen3_vl.py large_hopper_qwen3_vl_model_type and _qwen3vl_hopper_serving_overrides:
# on an SM 9.x GPU of 60 GiB or more, for these model types, on one node with no --mm-feature-transport given, the
# override sets SGLANG_VLM_CACHE_SIZE_MB to 0 and the cuda_ipc transport on, and at --max-running-requests 400 or
# more SGLANG_MM_FEATURE_CACHE_MB to 3 GiB.
HOPPER_MM_MIN_MIB = 60 * 1024
HOPPER_MM_MODEL_TYPES = ("qwen3_vl", "qwen3_vl_moe")
HOPPER_MM_WAVE = 400
HOPPER_MM_WAVE_MIB = 3 * 1024


def transport_override(spec):
    """The model override's file:line where the release turns the cuda_ipc feature transport on by itself for
    this checkpoint and GPU (releases/architectures.json `mm_transport_override`, conditions above), else None."""
    arch = architecture(spec["model_config"])
    entry = (release_table(spec["_release"]) or {}).get(arch) or {}
    where = entry.get("mm_transport_override")
    if (where is None or gpu_major(spec) != 9 or (spec.get("gpu_memory_mib") or 0) < HOPPER_MM_MIN_MIB
            or spec.get("nnodes", 1) != 1 or spec.get("mm_feature_transport") is not None
            or spec["model_config"].get("model_type") not in HOPPER_MM_MODEL_TYPES):
        return None
    return where


def mm_reserve_gib(spec):
    """GiB the release keeps out of the profile for a multimodal checkpoint (0.5.18+
    mem_cache/kv_cache_configurator.py mm_runtime_reservation_gb, 0.5.23:202-219): its embedding cache
    (SGLANG_VLM_CACHE_SIZE_MB), plus the GPU feature-transport pools (SGLANG_MM_FEATURE_CACHE_MB) when
    --mm-feature-transport is cuda_ipc or cuda_vmm (the spec's mm_feature_transport, read from sglang_extra_args;
    the release auto-selects it on multi-node GB200/GB300 MNNVL, arg_groups/serving_hook.py:810-858, which
    the planner does not model)."""
    rules = spec["_rules"]
    if not rules["mm_reserve_mib"] or not is_multimodal(spec):
        return 0.0
    if transport_override(spec):  # the embedding cache off, the feature pools on (transport_override)
        wave = (spec.get("max_running_requests") or 0) >= HOPPER_MM_WAVE
        return (HOPPER_MM_WAVE_MIB if wave else rules.get("mm_feature_reserve_mib") or 0) / MIB_PER_GIB
    mib = rules["mm_reserve_mib"]
    if spec.get("mm_feature_transport") in ("cuda_ipc", "cuda_vmm"):
        mib += rules.get("mm_feature_reserve_mib") or 0
    return mib / MIB_PER_GIB


def profile_post(spec, post):
    """The free memory SGLang profiles from: A (after the target's weights) less a draft loaded before it
    (0.5.23) and less what 0.5.23 keeps for a multimodal checkpoint."""
    early = draft_weights(spec)[0] if draft_loads_before_profile(spec) else 0.0
    return post - early - mm_reserve_gib(spec)


FRACTION_LIMIT = 0.98  # never plan 0.99+: SGLang would keep nothing for itself if the profile fell short


def floor3(value):
    return math.floor(round(value * 1000, 6)) / 1000


def fraction_ceiling(pre, min_headroom):
    """The largest fraction (3 decimals) that leaves min_headroom GiB of `pre` unreserved."""
    return min(floor3(1 - min_headroom / pre), FRACTION_LIMIT)


def pool_tokens(pre_gib, post_gib, fraction, cell, page_size=1, state=None):
    """SGLang's max_total_num_tokens for these numbers; 0 where SGLang would refuse to start. `state`: a hybrid
    linear-attention model's state pool (linear.StatePool), which takes its share of the rest first."""
    rest_gib = post_gib - pre_gib * (1 - fraction)
    if state is not None:
        rest_gib -= state.gib(rest_gib)
    tokens = int(rest_gib * GIB // cell)
    tokens = tokens // page_size * page_size
    return max(tokens, 0)


def forward(spec, fraction=None):
    """Predicted pool for a normalised spec at `fraction` (default: spec's mem_fraction_static)."""
    fraction = spec["mem_fraction_static"] if fraction is None else fraction
    if fraction is None:
        raise KVPlanError("spec key 'mem_fraction_static' is needed for a forward prediction "
                          "(or pass it: spec | sglang_kv_pool_tokens(0.92)).")
    if not 0.0 < float(fraction) < 1.0:
        raise KVPlanError("mem_fraction_static must be between 0 and 1, got %r." % (fraction,))
    pre, post, _, _ = memory(spec)
    return pool_tokens(pre, profile_post(spec, post), float(fraction), cell_bytes(spec), pool_page(spec),
                       state_pool(spec))


# -- what the headroom is for: the request table, the CUDA graphs, the prefill activations -------------------------
REQ_TABLE_EXTRA = 4  # columns past the context: 0.5.23 mem_cache/allocation_sizing.py:105 (4 + draft tokens)
GRAPH_MIB_PER_BATCH = 2  # SGLang's own decode-graph reserve per captured batch size (0.5.23 memory_hook.py:368)
GRAPH_MAX_BS = 512  # the largest default decode-graph batch (0.5.23 memory_hook.py:90-170)
ACTIVATION_BUFFERS = 8  # hidden-sized bf16 buffers one prefill chunk keeps alive at once (an estimate)


def request_table_gib(running_per_gpu, context, draft_tokens=0):
    """GiB of SGLang's request-to-token table on each GPU, outside the KV pool: a ReqToTokenPool of
    (max_running_requests + 1) rows of (context_len + 4 + draft tokens) int32 (0.5.23 mem_cache/memory_pool.py:
    399-408, `_alloc_size = size + 1`, torch.zeros(..., dtype=torch.int32); its row width
    mem_cache/kv_cache_configurator.py:1771-1773 with allocation_sizing.py:96-116; its size, per DP worker,
    kv_cache_configurator.py:3119-3140 resolve_max_num_reqs). It is built after the pool is sized, so it comes out
    of the headroom and never shrinks the pool (sglang-memory.md section 2; the seed's three boots agree)."""
    return (running_per_gpu + 1) * (context + REQ_TABLE_EXTRA + draft_tokens) * 4 / GIB


def chunked_prefill_tokens(spec):
    """The --chunked-prefill-size the server runs with: sglang_extra_args' value, else the release's default by
    GPU memory (0.5.23 arg_groups/memory_hook.py:90-170, the tiers of 0.5.9 server_args.py
    _handle_gpu_memory_settings): under 20 GiB 2,048, under 60 GiB 4,096, under 160 GiB 8,192, else 16,384;
    4,096 when the GPU is not known (:171-178). 0 or less: chunking off, one prefill of up to
    --max-prefill-tokens (16,384) at a time (memory_hook.py:306-307).
    With DP attention every release then divides it by the attention-DP width, given or default (0.5.23
    arg_groups/parallel_hook.py:326-336, 0.5.15 server_args.py:4899-4906, 0.5.9 :2114-2121): each DP worker
    prefills its own share, so the activations per GPU are the share's."""
    chunk = _chunk_before_dp(spec)
    if chunk > 0 and spec.get("enable_dp_attention") and spec.get("dp_size", 1) > 1:
        return chunk // spec["dp_size"]
    return chunk if chunk > 0 else 16384


def _chunk_before_dp(spec):
    """--chunked-prefill-size as given, else the release's tier for the GPU (0 or less: chunking off)."""
    given = spec.get("chunked_prefill_size")
    if given is not None:
        return given
    mib = spec["gpu_memory_mib"]
    if mib is None:
        return 4096
    for below, tokens in ((20, 2048), (60, 4096), (160, 8192)):
        if mib < below * MIB_PER_GIB:
            return tokens
    return 16384


def activations_gib(spec, chunk):
    """An ESTIMATE of the activations one prefill chunk needs per GPU: `chunk` tokens x hidden_size x 2 bytes (bf16)
    x ACTIVATION_BUFFERS. SGLang's own reserve (512 MiB + 1.5 MiB per chunk token, memory_hook.py:309-310) only
    sizes its default --mem-fraction-static; at 8,192 it is 12.5 GiB, while the seed's ct200 prefilled a 60k prompt
    in chunks of 8,192 with 5.1 GiB reserved in all: the real need is far smaller, and the full proof measures it."""
    hidden = text_config(spec["model_config"]).get("hidden_size") or 0
    return chunk * int(hidden) * 2 * ACTIVATION_BUFFERS / GIB


def graphs_estimate_gib(running_per_gpu):
    """SGLang's own estimate of the decode CUDA graphs: 2 MiB per batch size, captured up to min(running, the
    default max batch) (0.5.23 memory_hook.py:183-188 caps the batch at --max-running-requests, :368 the 2 MiB).
    A boot measures the real figure (free memory before and after the capture), which replaces this."""
    return min(running_per_gpu, GRAPH_MAX_BS) * GRAPH_MIB_PER_BATCH / MIB_PER_GIB
