"""The planner's input: one dict `spec`, checked and normalised before any math.

Every key is named like the group_vars knob that feeds it, minus the `sglang_` prefix
(`tp_size` comes from `sglang_tp_size`), so an error can name both.
"""

import copy
import functools
import math
import os
import re

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


_PRESETS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "model_presets.yml")

# The --kv-cache-dtype values the planner can size (each release's full list is in releases.py; fp16 is
# not among SGLang 0.5.x's choices, and the fp4/mxfp8 ones carry scale tensors the planner does not model).
KV_DTYPES = ("auto", "bf16", "bfloat16", "fp8_e4m3", "fp8_e5m2")
POOL_POLICIES = ("fill", "target", "max", "fraction")
SPECULATIVE_KEYS = ("algorithm", "draft_model", "draft_model_path", "draft_model_config", "num_steps",
                    "eagle_topk", "num_draft_tokens", "draft_weights_gib", "draft_checkpoint_gib")
# Below this, CUDA graphs, activations and NCCL buffers do not fit on any GPU SGLang serves from.
MIN_HEADROOM_FLOOR_GIB = 1.0

# key -> (kind, default). kind is checked by _check_value; None as default means "absent".
_KEYS = {
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
SPEC_KEYS = frozenset(_KEYS)

# Keys normalize_spec adds (the release's rules, resolved once per plan); a normalised spec may be normalised again.
_RESOLVED = ("_release", "_rules")

# Spec keys that no knob sets directly: where their value comes from, for the error messages.
_DERIVED = {
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


def _where(key):
    return "spec key '%s' (%s)" % (key, _DERIVED.get(key) or "group_vars sglang_" + key)


def _check_value(key, kind, value):
    """Return the value converted to its kind, or raise naming the key, the value and the fix."""
    is_bool = isinstance(value, bool)
    if kind == "str":
        if isinstance(value, str) and value:
            return value
        raise KVPlanError("%s: expected a preset name, got %r. Known presets: %s."
                          % (_where(key), value, ", ".join(sorted(load_presets()))))
    if kind == "str_or_none":
        if isinstance(value, str):
            return value
        raise KVPlanError("%s: expected the option as given, got %r." % (_where(key), value))
    if kind == "dict":
        if isinstance(value, dict):
            return value
        raise KVPlanError("%s: expected the model's config.json as a mapping, got %s %r."
                          % (_where(key), type(value).__name__, value))
    if kind == "bool":
        if is_bool:
            return value
        raise KVPlanError("%s: expected true or false, got %r." % (_where(key), value))
    if kind == "kv_dtype":
        if value in KV_DTYPES:
            return value
        hint = " (SGLang 0.5.x has no fp16 KV cache; bf16 is the 16-bit choice)" if value in ("fp16", "float16") else ""
        raise KVPlanError("%s: %r is not a KV cache dtype the planner can size%s; use one of %s."
                          % (_where(key), value, hint, ", ".join(KV_DTYPES)))
    if kind == "host":
        if isinstance(value, str) and value and not any(c.isspace() for c in value):
            return value
        raise KVPlanError("%s: expected a host name or address, got %r." % (_where(key), value))
    if kind == "port":
        if not is_bool and str(value).isdigit() and 0 < int(value) < 65536:
            return int(value)
        raise KVPlanError("%s: expected a TCP port between 1 and 65535, got %r." % (_where(key), value))
    if kind == "version":
        if isinstance(value, str) and value:
            return value
        raise KVPlanError("%s: expected an SGLang release like '0.5.23', got %r." % (_where(key), value))
    if kind == "pool_policy":
        if value in POOL_POLICIES:
            return value
        raise KVPlanError("%s: expected one of %s, got %r. 'fill': the target guaranteed and the rest of the "
                          "memory to the pool; 'target': the pool is pinned to the target with --max-total-tokens "
                          "(GPUs shared with other work); 'max': pinned to the most the calibrated headroom allows; "
                          "'fraction': no pin, the smallest fraction that reaches the target."
                          % (_where(key), ", ".join(POOL_POLICIES), value))
    if kind == "speculative":
        return _check_speculative(value)
    if kind == "boot_flags":
        return _check_boot_flags(value)
    if kind == "rope_scaling":
        from .rope import check_rope_scaling  # rope.py imports this module
        return check_rope_scaling(value)
    if kind == "transport":
        if isinstance(value, str) and value:
            return value
        raise KVPlanError("%s: expected an --mm-feature-transport value (cpu, cuda_ipc, cuda_vmm), got %r."
                          % (_where(key), value))
    if kind == "compute_cap":
        return _check_compute_capability(key, value)
    if kind.endswith("int"):
        if not is_bool and isinstance(value, (int, float, str)):
            try:
                number = int(str(value).replace("_", ""))
            except ValueError:
                number = None
            if number is not None and number > MAX_NUMBER:
                raise KVPlanError("%s: %s is beyond any real server (at most %s); set the %s it really has."
                                  % (_where(key), _short(value), format(MAX_NUMBER, ","), _what(key)))
            if number is not None and (number > 0 or (kind == "nonneg_int" and number == 0)):
                return number
        need = "a positive whole number" if kind == "pos_int" else "a whole number >= 0"
        raise KVPlanError("%s: expected %s, got %s." % (_where(key), need, _short(value)))
    # floats
    try:
        number = float(value) if not is_bool else None
    except (TypeError, ValueError, OverflowError):
        number = None
    if number is None or not math.isfinite(number):
        raise KVPlanError("%s: expected a finite number, got %s." % (_where(key), _short(value)))
    limit = MAX_GPU_MIB if key == "gpu_memory_mib" else MAX_NUMBER
    if number > limit:
        raise KVPlanError("%s: %s is beyond any real GPU or checkpoint (at most %s); set the %s it really has "
                          "(nvidia-smi memory.total in MiB for gpu_memory_mib)."
                          % (_where(key), _short(value), format(limit, ","), _what(key)))
    if key == "gpu_memory_mib" and number < MIN_GPU_MIB:
        raise KVPlanError("%s: %s MiB is less than any GPU SGLang serves from (at least %s); set the GPU's "
                          "nvidia-smi memory.total in MiB." % (_where(key), _short(value), format(MIN_GPU_MIB, ",")))
    if kind == "ratio" and not 0.0 < number <= 1.0:
        raise KVPlanError("%s: expected a ratio above 0 and at most 1 (SGLang's own range), got %r."
                          % (_where(key), value))
    if kind == "fraction" and not 0.0 < number < 1.0:
        raise KVPlanError("%s: expected a fraction between 0 and 1 (e.g. 0.9), got %r."
                          % (_where(key), value))
    if kind == "pos_float" and number <= 0:
        raise KVPlanError("%s: expected a number > 0, got %r." % (_where(key), value))
    if kind == "headroom" and number < MIN_HEADROOM_FLOOR_GIB:
        raise KVPlanError("%s: %r GiB leaves nothing for CUDA graphs, activations and NCCL buffers outside "
                          "the KV pool; use at least %.1f (4.0 is a safe default)."
                          % (_where(key), value, MIN_HEADROOM_FLOOR_GIB))
    if kind == "nonneg_float" and number < 0:
        raise KVPlanError("%s: expected a number >= 0, got %r." % (_where(key), value))
    return number


# Bounds no server reaches: beyond them a number is a typo, and the planner's float arithmetic would overflow.
MAX_NUMBER = 1 << 40
MAX_GPU_MIB = 1 << 24  # 16 TiB per GPU
MIN_GPU_MIB = 256  # below that not even a CUDA context fits


def _short(value):
    """repr() of a value, cut to a readable length (10**400 has 401 digits)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:20] + "...(%d characters)" % len(text)


def _what(key):
    return key.replace("_", " ")


def _check_compute_capability(key, value):
    """'10.0' (nvidia-smi --query-gpu=compute_cap), also given as the number 10.0 or 'sm_100'."""
    text = str(value).strip().lower() if not isinstance(value, bool) else ""
    named = re.match(r"^sm_?(\d{1,2})(\d)$", text)
    if named:
        text = "%s.%s" % named.groups()
    if re.match(r"^\d{1,2}\.\d$", text) and 1 <= int(text.split(".")[0]) <= 20:
        return text
    raise KVPlanError("%s: expected the GPU's compute capability as nvidia-smi --query-gpu=compute_cap prints it "
                      "(e.g. '10.0' for a B200, '12.0' for an RTX PRO 6000, '9.0' for an H100), got %r. Leave it "
                      "empty when unknown: the pin is then made to hold on every GPU." % (_where(key), value))


BOOT_FLAG_KEYS = ("mem_fraction_static", "max_total_tokens", "max_running_requests", "context_length", "pool_policy")


def _check_boot_flags(value):
    """`boot_flags`: the flags a stored calibration's boot ran (lib/sglang_kvplan/fill.py keeps them), read back from
    the host's local facts, so checked as any input: {} or None for none."""
    if not value:
        return None
    where = _where("boot_flags")
    fix = ("remove that entry of the host's stored calibrations (ansible_local.sglang_kv, /etc/ansible/facts.d), and "
           "the next boot stores its own")
    if not isinstance(value, dict) or sorted(value) != sorted(BOOT_FLAG_KEYS):
        raise KVPlanError("%s: expected a mapping of exactly %s, got %s: %s." % (
            where, ", ".join(BOOT_FLAG_KEYS), _short(value), fix))
    out = {"pool_policy": value["pool_policy"] if value["pool_policy"] in POOL_POLICIES else None,
           "max_total_tokens": None}
    try:
        out["mem_fraction_static"] = _check_value("boot_flags", "fraction", value["mem_fraction_static"])
        for key in ("max_running_requests", "context_length") + (
                ("max_total_tokens",) if value["max_total_tokens"] not in (None, "") else ()):
            out[key] = _check_value("boot_flags", "pos_int", value[key])
    except KVPlanError as error:
        raise KVPlanError("%s (%s)" % (str(error).rstrip("."), fix)) from None
    if out["pool_policy"] is None:
        raise KVPlanError("%s: pool_policy %s is none of %s: %s." % (
            where, _short(value["pool_policy"]), ", ".join(POOL_POLICIES), fix))
    return out


def _check_speculative(value):
    """`speculative` (group_vars sglang_speculative, with draft_model_config read on the host)."""
    where = _where("speculative")
    if not isinstance(value, dict):
        raise KVPlanError("%s: expected a mapping like {algorithm: DFLASH, draft_model_path: /srv/models/draft}, "
                          "got %s %r." % (where, type(value).__name__, value))
    unknown = sorted(set(value) - set(SPECULATIVE_KEYS))
    if unknown:
        raise KVPlanError("%s has unknown key(s) %s; it reads: %s."
                          % (where, ", ".join(unknown), ", ".join(SPECULATIVE_KEYS)))
    out = {key: value.get(key) for key in SPECULATIVE_KEYS}
    algorithm = out["algorithm"]
    if not isinstance(algorithm, str) or not algorithm:
        raise KVPlanError("%s: 'algorithm' is required (SGLang's --speculative-algorithm, e.g. DFLASH, EAGLE3, "
                          "NEXTN), got %r." % (where, algorithm))
    out["algorithm"] = algorithm.upper()
    for key in ("num_steps", "eagle_topk", "num_draft_tokens"):
        if out[key] is not None:
            out[key] = _check_value("speculative", "pos_int", out[key])
    for key in ("draft_weights_gib", "draft_checkpoint_gib"):
        if out[key] is not None:
            out[key] = _check_value("speculative", "nonneg_float", out[key])
    if out["draft_model_config"] is not None and not isinstance(out["draft_model_config"], dict):
        raise KVPlanError("%s: 'draft_model_config' must be the draft's config.json as a mapping, got %r."
                          % (where, out["draft_model_config"]))
    if out["draft_model"] is not None and out["draft_model_config"] is None:
        # A preset stands in for the draft's config.json where the host is not read (make plan).
        presets = load_presets()
        preset = presets.get(out["draft_model"])
        if not preset:
            raise KVPlanError("%s: 'draft_model' %r is not a preset; known presets: %s."
                              % (where, out["draft_model"], ", ".join(sorted(presets))))
        out["draft_model_config"] = preset["config"]
        if out["draft_checkpoint_gib"] is None:
            out["draft_checkpoint_gib"] = float(preset["checkpoint_gib"])
    return out


def normalize_spec(spec):
    """Check `spec` and return a new dict with defaults filled in and a resolved `model_config`.

    Unknown keys are refused (a typo would otherwise silently fall back to a default).
    `None` means "not set" for every key, so group_vars may leave a knob empty.
    """
    if not isinstance(spec, dict):
        raise KVPlanError("spec: expected a mapping of planner inputs, got %s %r."
                          % (type(spec).__name__, spec))
    unknown = sorted(set(spec) - set(_KEYS) - set(_RESOLVED))
    if unknown:
        raise KVPlanError("spec has unknown key(s) %s; the planner reads: %s."
                          % (", ".join(unknown), ", ".join(sorted(_KEYS))))
    out = {}
    for key, (kind, default) in _KEYS.items():
        value = spec.get(key)
        out[key] = default if value is None else _check_value(key, kind, value)

    if out["model_config"] is None:
        if out["model"] is None:
            raise KVPlanError("spec: neither 'model_config' (the model's config.json) nor 'model' "
                              "(a preset) is set. Set sglang_model to one of: %s."
                              % ", ".join(sorted(load_presets())))
        presets = load_presets()
        if out["model"] not in presets:
            raise KVPlanError("%s: unknown preset %r. Known presets: %s; or give the checkpoint's "
                              "config.json as model_config." % (_where("model"), out["model"],
                                                                ", ".join(sorted(presets))))
        preset = presets[out["model"]]
        out["model_config"] = preset["config"]
        if out["checkpoint_gib"] is None:
            out["checkpoint_gib"] = float(preset["checkpoint_gib"])

    if out["enable_dp_attention"] and out["tp_size"] % out["dp_size"]:
        raise KVPlanError("spec: with enable_dp_attention, tp_size (%d) must be a multiple of "
                          "dp_size (%d), as SGLang requires." % (out["tp_size"], out["dp_size"]))
    has_pre = out["pre_load_avail_gib"] is not None
    if has_pre != (out["post_load_avail_gib"] is not None):
        raise KVPlanError("spec: a calibration needs both pre_load_avail_gib and post_load_avail_gib "
                          "(SGLang's 'Load weight begin/end ... avail mem'); got only %s."
                          % ("pre_load_avail_gib" if has_pre else "post_load_avail_gib"))
    # equal is a model whose weights are under the journal's 0.01 GB (a tiny test model on SGLang's CPU engine)
    if has_pre and out["post_load_avail_gib"] > out["pre_load_avail_gib"]:
        raise KVPlanError("spec: post_load_avail_gib (%s) must not be above pre_load_avail_gib (%s): "
                          "free memory drops when the weights load. Are the two swapped?"
                          % (out["post_load_avail_gib"], out["pre_load_avail_gib"]))
    if has_pre and out["post_load_avail_gib"] <= 0:
        raise KVPlanError("spec: post_load_avail_gib (A) is %s: nothing is free after the weights load, so no "
                          "KV pool fits. Use more GPUs (sglang_tp_size/sglang_pp_size) or a smaller checkpoint."
                          % out["post_load_avail_gib"])
    if has_pre and out["gpu_memory_mib"] is not None and out["pre_load_avail_gib"] > out["gpu_memory_mib"] / 1024:
        raise KVPlanError("sglang_calibration: pre_load_avail_gib %s GiB is more than the GPU has (gpu_memory_mib "
                          "%s MiB = %.2f GiB): the calibration belongs to another GPU or was mistyped. Remove it "
                          "(the next boot measures it again)." % (out["pre_load_avail_gib"], out["gpu_memory_mib"],
                                                                  out["gpu_memory_mib"] / 1024))
    from .releases import rules_for  # releases.py imports this module
    out["_release"], out["_rules"] = rules_for(out["version"], out["pool_rules"])
    from .model import check_geometry  # model.py imports this module
    check_geometry(out)
    _check_nodes(out)
    return out


def _check_nodes(out):
    """A server across nodes: the rank within the node count, SGLang's split rules, and rank 0's address."""
    from .server import check_split  # server.py imports this module
    if out["node_rank"] >= out["nnodes"]:
        raise KVPlanError("%s is %d, but there are %d node(s): the rank is this host's index in sglang_nodes."
                          % (_where("node_rank"), out["node_rank"], out["nnodes"]))
    check_split(out["nnodes"], out["tp_size"], out["pp_size"], out["dp_size"], out["enable_dp_attention"])
    if out["nnodes"] > 1:
        for key, example in (("dist_init_host", "10.0.0.1"), ("dist_init_port", "20000")):
            if out[key] is None:
                raise KVPlanError("%s is not set: a server across %d nodes needs rank 0's rendezvous address for "
                                  "--dist-init-addr (e.g. sglang_%s: %s; the role takes rank 0's ansible_host "
                                  "when sglang_dist_init_host is empty)." % (_where(key), out["nnodes"], key, example))
