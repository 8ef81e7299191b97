"""A spec checked and normalised before any math: each key's value against its kind (spec.KEYS), defaults filled in,
the model's config.json resolved from a preset, the release's rules attached, and the geometry, the speculative
draft and a server across nodes checked.

It sits above the math on purpose: the checks it runs are the sizing files' own (rope.py's RoPE scaling,
releases.py's rules, model.py's geometry, server.py's split), so no file below imports it back.
"""

import math
import re

from .model import check_geometry
from .releases import rules_for
from .rope import check_rope_scaling
from .server import check_split
from .spec import (
    BOOT_FLAG_KEYS,
    DERIVED,
    KEYS,
    KV_DTYPES,
    MAX_GPU_MIB,
    MAX_NUMBER,
    MIN_GPU_MIB,
    MIN_HEADROOM_FLOOR_GIB,
    POOL_POLICIES,
    SPECULATIVE_KEYS,
    KVPlanError,
    load_presets,
)

# Keys normalize_spec adds (the release's rules, resolved once per plan); a normalised spec may be normalised again.
RESOLVED_KEYS = ("_release", "_rules")


def _where(key):
    return "spec key '%s' (%s)" % (key, DERIVED.get(key) or "group_vars sglang_" + key)


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
    unknown = sorted(set(spec) - set(KEYS) - set(RESOLVED_KEYS))
    if unknown:
        raise KVPlanError("spec has unknown key(s) %s; the planner reads: %s."
                          % (", ".join(unknown), ", ".join(sorted(KEYS))))
    out = {}
    for key, (kind, default) in KEYS.items():
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
    out["_release"], out["_rules"] = rules_for(out["version"], out["pool_rules"])
    check_geometry(out)
    _check_nodes(out)
    return out


def _check_nodes(out):
    """A server across nodes: the rank within the node count, SGLang's split rules, and rank 0's address."""
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
