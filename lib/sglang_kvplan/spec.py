"""The planner's input: one dict `spec`, its keys with their kinds and defaults, and the ground floor every planner
file stands on (KVPlanError, the GPU family, the presets). It imports no planner file: normalize.py, above the
math, checks and normalises a spec before any of it runs.

Every key is named like the group_vars knob that feeds it, minus the `sglang_` prefix
(`tp_size` comes from `sglang_tp_size`), so an error can name both.
"""

import copy
import functools
import os

import yaml

SM100_MAJOR = 10  # is_sm100_supported: device_capability_majors=[10] (0.5.9 utils/common.py)


def gpu_major(spec):
    """The GPU's compute-capability major (9 for H100/H200, 10 for B200, 12 for RTX PRO 6000), or None when the
    family is not known (sglang_gpu_compute_capability, validated where it enters)."""
    cap = spec["gpu_compute_capability"]
    return None if cap is None else int(cap.split(".")[0])


def gpu_is_sm100(spec):
    """True, False, or None when the GPU family is not known."""
    major = gpu_major(spec)
    return None if major is None else major == SM100_MAJOR


class KVPlanError(ValueError):
    """Bad input or a target that cannot fit; the message says what to change."""


# The fix a refusal of a model or release the planner cannot size offers (architectures.py, sliding.py).
HAND_SIZING = ("size it by hand: set sglang_max_total_tokens to the pool you want (the planner then plans "
               "--mem-fraction-static from the headroom), or choose a model the planner sizes")


_PRESETS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "model_presets.yml")

# The --kv-cache-dtype values the planner can size (each release's full list is in releases.py; fp16 is
# not among SGLang 0.5.x's choices, and the fp4/mxfp8 ones carry scale tensors the planner does not model).
KV_DTYPES = ("auto", "bf16", "bfloat16", "fp8_e4m3", "fp8_e5m2")
POOL_POLICIES = ("fill", "target", "max", "fraction")
SPECULATIVE_KEYS = ("algorithm", "draft_model", "draft_model_path", "draft_model_config", "num_steps",
                    "eagle_topk", "num_draft_tokens", "draft_weights_gib", "draft_checkpoint_gib")
# Below this, CUDA graphs, activations and NCCL buffers do not fit on any GPU SGLang serves from.
MIN_HEADROOM_FLOOR_GIB = 1.0

# key -> (kind, default). kind is checked by normalize.py (_check_value); None as default means "absent".
KEYS = {
    "model": ("str", None),
    "model_config": ("dict", None),
    "tp_size": ("pos_int", 1),
    "pp_size": ("pos_int", 1),
    "dp_size": ("pos_int", 1),
    "enable_dp_attention": ("bool", False),
    "kv_cache_dtype": ("kv_dtype", "auto"),
    "page_size": ("pos_int", 1),
    "speculative": ("speculative", None),
    "version": ("version", None),
    "pool_rules": ("version", None),
    "pool_policy": ("pool_policy", "fill"),
    "mem_fraction_static": ("fraction", None),
    "pre_load_avail_gib": ("pos_float", None),
    "post_load_avail_gib": ("float", None),
    "gpu_memory_mib": ("pos_float", None),
    # nvidia-smi compute_cap ("10.0" on a B200): which attention backend, and so which page size, SGLang picks.
    "gpu_compute_capability": ("compute_cap", None),
    "weights_gib_per_gpu": ("nonneg_float", None),
    "checkpoint_gib": ("nonneg_float", None),
    "preload_overhead_gib": ("nonneg_float", 1.5),
    "context_target": ("pos_int", None),
    "max_running_requests": ("pos_int", None),
    # A pool sized by hand (hand_pool.py): --max-total-tokens pinned to it, the cell not sized, the architecture
    # not checked (what the planner refuses, the operator sizes).
    "max_total_tokens": ("pos_int", None),
    "min_headroom_gib": ("headroom", 4.0),
    "uncalibrated_margin": ("nonneg_float", 0.10),
    # A server across nodes (server.py): derived by the role from sglang_nodes and rank 0's address.
    "nnodes": ("pos_int", 1),
    "node_rank": ("nonneg_int", 0),
    "dist_init_host": ("host", None),
    "dist_init_port": ("port", None),
    "dist_timeout": ("pos_int", None),
    "limiting_node": ("host", None),
    # --mm-feature-transport as the server gets it (sglang_extra_args): cuda_ipc/cuda_vmm reserve 1 GiB more of a
    # multimodal checkpoint's KV budget (0.5.18+ mem_cache/kv_cache_configurator.py mm_runtime_reservation_gb).
    "mm_feature_transport": ("transport", None),
    # --enable-dp-lm-head as sglang_extra_args give it: 0.5.23 runs DFLASH with DP attention only with it
    # (refusals.py).
    "enable_dp_lm_head": ("bool", False),
    # The sglang_extra_args item that turns LoRA serving on (--enable-lora, --lora-paths), refused: its buffers
    # are allocated before the pool and not modelled.
    "lora_option": ("str_or_none", None),
    # What the headroom is for (concurrency.py): --chunked-prefill-size from sglang_extra_args (0: chunking off),
    # and the CUDA graphs' GiB a boot measured (the calibration's graph_gib).
    "chunked_prefill_size": ("nonneg_int", None),
    "graph_gib": ("nonneg_float", None),
    # A sliding-window model's split (sliding.py): --swa-full-tokens-ratio from sglang_extra_args (None: the
    # release's default), and --disable-radix-cache, under which 0.5.15+ sizes the sliding pool another way.
    "swa_full_tokens_ratio": ("ratio", None),
    "disable_radix_cache": ("bool", False),
    # A hybrid linear-attention model's state pool (linear.py): --mamba-full-memory-ratio from sglang_extra_args
    # (None: the release's default), and the sglang_extra_args item that sizes the state another way, refused.
    "mamba_full_memory_ratio": ("pos_float", None),
    "mamba_option": ("str_or_none", None),
    # The sglang_extra_args item that changes DeepSeek-V3.2's KV layout (its DSA kernels, HiSparse, DCP): refused
    # (sparse.py).
    "dsa_option": ("str_or_none", None),
    # The RoPE scaling the model card documents, to serve past the model's window (rope.py); {} or None: none.
    "rope_scaling": ("rope_scaling", None),
    # The flags of the boot a stored calibration measured (fill.py keeps them while that boot met the rules).
    "boot_flags": ("boot_flags", None),
}

# The keys a spec (and a measured boot's `setup`) may hold.
SPEC_KEYS = frozenset(KEYS)

# Spec keys that no knob sets directly: where their value comes from, for the error messages.
DERIVED = {
    "nnodes": "the number of hosts in sglang_nodes",
    "node_rank": "this host's index in sglang_nodes",
    "limiting_node": "the node of sglang_nodes with the least free GPU memory",
    "mm_feature_transport": "--mm-feature-transport in sglang_extra_args",
    "enable_dp_lm_head": "--enable-dp-lm-head in sglang_extra_args",
    "lora_option": "--enable-lora or --lora-paths in sglang_extra_args",
    "chunked_prefill_size": "--chunked-prefill-size in sglang_extra_args",
    "swa_full_tokens_ratio": "--swa-full-tokens-ratio in sglang_extra_args",
    "disable_radix_cache": "--disable-radix-cache in sglang_extra_args",
    "mamba_full_memory_ratio": "--mamba-full-memory-ratio in sglang_extra_args",
    "mamba_option": "--max-mamba-cache-size or --mamba-ssm-dtype in sglang_extra_args",
    "dsa_option": "--dsa-*-backend, --enable-hisparse or --dcp-size in sglang_extra_args",
    "graph_gib": "sglang_calibration's graph_gib, measured by a boot",
    "boot_flags": "the stored calibration's boot_flags, the flags of the boot it measured",
}


@functools.lru_cache(maxsize=1)
def _parsed_presets():
    with open(_PRESETS_FILE, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def load_presets():
    """The presets, parsed once per process (a fleet's check phase plans hundreds of hosts); a copy each call."""
    return copy.deepcopy(_parsed_presets())


# Bounds no server reaches: beyond them a number is a typo, and the planner's float arithmetic would overflow.
MAX_NUMBER = 1 << 40
MAX_GPU_MIB = 1 << 24  # 16 TiB per GPU
MIN_GPU_MIB = 256  # below that not even a CUDA context fits

# The flags of the boot a stored calibration measured (spec key boot_flags; fill.py keeps them).
BOOT_FLAG_KEYS = ("mem_fraction_static", "max_total_tokens", "max_running_requests", "context_length", "pool_policy")
