"""The planner's spec for one host, from its sglang_* knobs and what is known of its server's nodes.

The one derivation of the spec: the sglang role's plan.yml calls it (through the sglang_plan_spec filter) with
the role's variables and what model.yml read on the host, and the check phase calls it for every host of a run
at once, from the inventory, before anything connects. Spec keys are the knob names without `sglang_`, so the
planner's errors name the knob to change (lib/sglang_kvplan/spec.py).
"""

import sglang_kvplan
from sglang_kvplan import loader

from sglang_checks import extra_args, flags

# Knobs whose value the spec takes as it is, under the knob's name less the prefix.
KNOB_KEYS = ("model", "model_config", "weights_gib_per_gpu", "context_target", "tp_size", "pp_size", "dp_size",
             "enable_dp_attention", "kv_cache_dtype", "page_size", "version", "pool_policy",
             "max_running_requests", "preload_overhead_gib", "min_headroom_gib", "uncalibrated_margin",
             "dist_init_port", "dist_timeout", "rope_scaling", "max_total_tokens")
# Every knob the spec reads (plan.yml passes exactly these; the check phase reads them from the inventory).
KNOBS = tuple("sglang_" + key for key in KNOB_KEYS) + (
    "sglang_checkpoint_gib", "sglang_speculative", "sglang_pool_rules", "sglang_gpu_memory_mib",
    "sglang_calibration", "sglang_nodes", "sglang_dist_init_host", "sglang_gpu_compute_capability",
    "sglang_extra_args", "sglang_gpu_count", "sglang_load_accelerate")
# Only the role uses these speculative keys (where the draft comes from), not the planner.
ROLE_ONLY_SPECULATIVE = ("draft_model_hf_repo", "draft_model_hf_revision")


def node_inputs(node, knobs, gpu=None, calibration=None):
    """One node's {node, gpu_memory_mib, gpu_compute_capability, calibration}: its GPU facts (nvidia_gpu, when
    preflight read them) over its knobs, the calibration the role has in use on it (model.yml's stored one, or
    the one the deploy's calibrate phase measured, lib/sglang_state/transaction.py) over its inventory's
    sglang_calibration."""
    gpu = gpu or {}
    return {"node": node,
            "gpu_memory_mib": gpu.get("memory_mib_min") or knobs.get("sglang_gpu_memory_mib"),
            # The page SGLang's attention backend forces depends on the GPU family (lib/sglang_kvplan/pages.py).
            "gpu_compute_capability": gpu.get("compute_capability") or knobs.get("sglang_gpu_compute_capability"),
            # How many GPUs the node has: preflight's count, or one the inventory (or a fact cache) already holds,
            # so that a plan needing more is refused before anything connects; None until then.
            "gpu_count": gpu.get("count") or knobs.get("sglang_gpu_count"),
            "calibration": calibration if calibration is not None else (knobs.get("sglang_calibration") or {})}


def gpus_per_node(tp_size, pp_size=1, dp_size=1, enable_dp_attention=False, nnodes=1, extra_args=()):
    """The GPUs SGLang takes on each node: tp x pp per data-parallel rank, dp ranks (DP attention keeps them
    inside the tp group: 0.5.23 resolves it to attn_dp_size, dp_size 1), shared by the server's nodes
    (managers/data_parallel_controller.py launch_dp_schedulers: base_gpu_id += tp_size x pp_size per DP rank).
    0 with SGLang's CPU engine (--device cpu among the extra args: molecule/real_server)."""
    if cpu_engine(extra_args):
        return 0
    ranks = 1 if enable_dp_attention else max(int(dp_size or 1), 1)
    return int(tp_size or 1) * int(pp_size or 1) * ranks // max(int(nnodes or 1), 1)


def cpu_engine(extra_args):
    """Whether the extra launch flags run SGLang's CPU engine (--device cpu, or --device=cpu)."""
    args = [str(arg) for arg in extra_args or () if isinstance(arg, str | int | float)]
    return "--device=cpu" in args or any(a == "--device" and b == "cpu" for a, b in zip(args, args[1:], strict=False))


def _whole(value):
    """A GPU count as a whole number, or None when it is not one (a bool, text, a fraction, below 0)."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return int(number) if number.is_integer() and number >= 0 else None


def _sizes(knobs):
    """{sglang_tp_size, sglang_pp_size, sglang_dp_size} as whole numbers (unset: 1), or None if one is not."""
    sizes = {}
    for knob in ("sglang_tp_size", "sglang_pp_size", "sglang_dp_size"):
        value = knobs.get(knob)
        sizes[knob] = 1 if value in (None, "") else _whole(value)
        if not sizes[knob]:
            return None
    return sizes


def gpus_needed(knobs, nnodes=1):
    """The GPUs the host's knobs take on each of its server's `nnodes` nodes (gpus_per_node), or None when a size
    is not a GPU count."""
    sizes = _sizes(knobs)
    if sizes is None:
        return None
    return gpus_per_node(sizes["sglang_tp_size"], sizes["sglang_pp_size"], sizes["sglang_dp_size"],
                         bool(knobs.get("sglang_enable_dp_attention")), nnodes,
                         knobs.get("sglang_extra_args") if isinstance(knobs.get("sglang_extra_args"), list) else ())


def gpu_count_refusals(host, knobs, per_node):
    """A sentence per node of `host`'s server whose known GPU count (nvidia_gpu.count) is less than the server
    takes on each node, or is not a count at all. A node whose count is not known yet says nothing here:
    preflight reads it and refuses before any role changes the host (roles/preflight/tasks/main.yml).

    knobs: the host's sglang_* values (tp, pp, dp, DP attention); per_node: node_inputs() of every node in rank
    order. Refused here, the run stops in the check phase, and make plan (which connects to nothing) says so too,
    rather than printing a plan no host can launch."""
    sizes = _sizes(knobs)
    if sizes is None:
        return []  # not a GPU count: node_placement's sentence, or the argument specs', names it
    attention = bool(knobs.get("sglang_enable_dp_attention"))
    nnodes = len(per_node) or 1
    needed = gpus_needed(knobs, nnodes)
    product = "sglang_tp_size %d x sglang_pp_size %d" % (sizes["sglang_tp_size"], sizes["sglang_pp_size"])
    if sizes["sglang_dp_size"] > 1:
        product += (" (sglang_dp_size %d inside the TP group: DP attention)" % sizes["sglang_dp_size"] if attention
                    else " x sglang_dp_size %d" % sizes["sglang_dp_size"])
    if nnodes > 1:
        product += " over the %d nodes of sglang_nodes" % nnodes
    refusals = []
    for entry in per_node:
        count = entry.get("gpu_count")
        if count in (None, ""):
            continue
        number = _whole(count)
        if number is None:
            refusals.append("%s: nvidia_gpu.count of %s is %r, not a number of GPUs: it is preflight's fact (set by "
                            "nvidia_gpu_facts); remove nvidia_gpu from the inventory, or give count as a whole number."
                            % (host, entry["node"], count))
        elif number < needed:
            fit = max(number * nnodes // (sizes["sglang_pp_size"] * (1 if attention else sizes["sglang_dp_size"])),
                      0)
            refusals.append(
                "%s: %s takes %d GPU(s) on %s, but it has %d (nvidia_gpu.count). Lower the parallelism to fit %d "
                "GPU(s)%s, add nodes to sglang_nodes, or run it on a host with more GPUs."
                % (host, product, needed, entry["node"], number, number,
                   " (e.g. sglang_tp_size: %d)" % _power_of_two_at_most(fit) if fit >= 1 else ""))
    return refusals


def _power_of_two_at_most(number):
    """The largest power of two not above `number` (TP sizes the attention heads divide are powers of two)."""
    power = 1
    while power * 2 <= number:
        power *= 2
    return power


def model_unread(host, knobs, calibrated=False):
    """The check phase's word on a host whose plan needs what only the host can tell, else None: the model, when
    nothing names it (no preset in sglang_model, no config.json in sglang_model_config), or the checkpoint's size,
    when no preset carries it and neither sglang_checkpoint_gib, sglang_weights_gib_per_gpu nor a calibration
    (`calibrated`: the inventory's or the one kept on the controller) replaces it. The role reads both on the host
    (model.yml) and plans then. The role has no default model: one would plan another model, with its parsers and
    its checkpoint's size, for this host."""
    if knobs.get("sglang_model") in (None, "") and not knobs.get("sglang_model_config"):
        return ("%s: planned once the role has read the checkpoint's config.json on the host (sglang_model_path): "
                "neither sglang_model (a preset) nor sglang_model_config names the model" % host)
    sized = any(knobs.get(knob) not in (None, "") for knob in ("sglang_checkpoint_gib", "sglang_weights_gib_per_gpu"))
    if knobs.get("sglang_model") in (None, "") and not sized and not calibrated and not knobs.get("sglang_calibration"):
        return ("%s: planned once the role has read the checkpoint's size on the host (sglang_model_path): "
                "sglang_model_config names the model, but no preset, sglang_checkpoint_gib, "
                "sglang_weights_gib_per_gpu or calibration says how much memory its weights take" % host)
    return None


def dist_init_host(knobs, rank0_address):
    """--dist-init-addr's host: the knob, else rank 0's address (its ansible_host, else its name)."""
    return knobs.get("sglang_dist_init_host") or rank0_address


def spec(host, knobs, per_node, rank0_address, measured=None):
    """(spec, server inputs, node placement) for `host`.

    knobs: this host's sglang_* values, defaults applied (KNOBS); per_node: node_inputs() of every node of its
    server in rank order; rank0_address: rank 0's ansible_host (or name); measured: what was read on the host
    (model_config, checkpoint_gib, draft_model_config, draft_checkpoint_gib), when it was: the config.json read on
    the host is the model SGLang loads, so it takes the place of sglang_model_config."""
    measured = measured or {}
    if knobs.get("sglang_rope_scaling") and _extra_switch(knobs, ("json_model_override_args",)) is not None:
        raise sglang_kvplan.KVPlanError(
            "sglang_rope_scaling and --json-model-override-args in sglang_extra_args: the plan renders the RoPE "
            "scaling as --json-model-override-args, and SGLang takes one; put the other overrides' keys in that "
            "one (drop the extra argument) or leave sglang_rope_scaling empty.")
    node = sglang_kvplan.node_placement(knobs.get("sglang_nodes") or [], host, knobs.get("sglang_tp_size"),
                                        knobs.get("sglang_pp_size"))
    server = sglang_kvplan.server_inputs(per_node)
    server = dict(server, notes=list(server["notes"]) + server_notes(per_node))
    calibration = server["calibration"]
    out = {key: knobs.get("sglang_" + key) for key in KNOB_KEYS}
    if measured.get("model_config"):
        out["model_config"] = measured["model_config"]
    checkpoint = knobs.get("sglang_checkpoint_gib")
    speculative = knobs.get("sglang_speculative") or {}
    out.update(
        checkpoint_gib=checkpoint if checkpoint is not None else measured.get("checkpoint_gib"),
        speculative=dict({k: v for k, v in speculative.items() if k not in ROLE_ONLY_SPECULATIVE},
                         draft_model_config=measured.get("draft_model_config"),
                         draft_checkpoint_gib=measured.get("draft_checkpoint_gib"),
                         draft_weights_gib=calibration.get("draft_weights_gib")) if speculative else None,
        pool_rules=knobs.get("sglang_pool_rules") or None,
        gpu_memory_mib=server["gpu_memory_mib"],
        gpu_compute_capability=server_compute_capability(per_node),
        pre_load_avail_gib=calibration.get("pre_load_avail_gib"),
        post_load_avail_gib=calibration.get("post_load_avail_gib"),
        nnodes=node["nnodes"], node_rank=node["node_rank"],
        dist_init_host=dist_init_host(knobs, rank0_address),
        limiting_node=server["limiting_node"],
        mm_feature_transport=mm_feature_transport(knobs),
        enable_dp_lm_head=bool(_extra_switch(knobs, ("enable_dp_lm_head",))),
        lora_option=_extra_switch(knobs, ("enable_lora", "lora_paths")),
        chunked_prefill_size=chunked_prefill_size(knobs),
        swa_full_tokens_ratio=swa_full_tokens_ratio(knobs),
        disable_radix_cache=bool(_extra_switch(knobs, ("disable_radix_cache",))),
        mamba_full_memory_ratio=_extra_number(knobs, "mamba_full_memory_ratio"),
        mamba_option=_extra_switch(knobs, ("max_mamba_cache_size", "mamba_ssm_dtype")),
        dsa_option=_extra_switch(knobs, ("dsa_prefill_backend", "dsa_decode_backend", "nsa_prefill_backend",
                                         "nsa_decode_backend", "enable_hisparse", "dcp_size")),
        graph_gib=calibration.get("graph_gib"),
        boot_flags=calibration.get("boot_flags"))
    return out, server, node


def _extra_switch(knobs, dests):
    """The sglang_extra_args item that sets one of `dests`, as the release's parser reads it, else None."""
    table = flags.sglang_table(knobs.get("sglang_version") or "")
    return extra_args.option_given(table, knobs.get("sglang_extra_args"), dests)


def _family(capability):
    return str(capability).strip().lower().replace("sm_", "").replace("sm", "").split(".", maxsplit=1)[0][:2]


def server_compute_capability(per_node):
    """The GPU family the server's page and pin are planned for, from every node's (SGLang resolves the attention
    backend, so the page, on each node: lib/sglang_kvplan/pages.py). One family: that node's capability. A node
    without facts: None, so the pin is made to hold on every GPU (the plan says which node, server_notes).
    Nodes of different families would get different pages and pools from one set of flags: refused."""
    known = {n["node"]: n["gpu_compute_capability"] for n in per_node if n.get("gpu_compute_capability")}
    families = {_family(c) for c in known.values()}
    if len(families) > 1:
        raise sglang_kvplan.KVPlanError(
            "sglang_nodes: the server's nodes have GPUs of different families (%s): SGLang picks the attention "
            "backend, and so the page size and the pool, on each node, so one plan cannot hold on all of them. Make "
            "a server of nodes with the same GPUs, or set sglang_gpu_compute_capability on each node if the facts "
            "are wrong." % ", ".join("%s %s" % (n, c) for n, c in known.items()))
    if len(known) < len(per_node):
        return None
    return next(iter(known.values()), None)


def server_notes(per_node):
    """What the plan should say about nodes whose GPU family is not known."""
    missing = [n["node"] for n in per_node if not n.get("gpu_compute_capability")]
    if not missing or len(missing) == len(per_node):
        return []
    return ["GPU family unknown on node(s) %s (no GPU facts and no sglang_gpu_compute_capability): the pin is made "
            "to hold on every GPU family" % ", ".join(missing)]


def mm_feature_transport(knobs):
    """--mm-feature-transport as the release's parser reads it from sglang_extra_args (the role renders them as
    they are): the one extra option that changes the pool (lib/sglang_kvplan/memory.py mm_reserve_gib)."""
    table = flags.sglang_table(knobs.get("sglang_version") or "")
    return extra_args.option_value(table, knobs.get("sglang_extra_args"), "mm_feature_transport")


def chunked_prefill_size(knobs):
    """--chunked-prefill-size from sglang_extra_args, as a whole number (0 for SGLang's -1, chunking off); None when
    unset or not a number (the release's default then applies; the launch itself refuses a bad value)."""
    table = flags.sglang_table(knobs.get("sglang_version") or "")
    value = extra_args.option_value(table, knobs.get("sglang_extra_args"), "chunked_prefill_size")
    try:
        return max(int(value), 0) if value is not None else None
    except ValueError:
        return None


def swa_full_tokens_ratio(knobs):
    """--swa-full-tokens-ratio from sglang_extra_args: a sliding-window model's split (lib/sglang_kvplan/sliding.py)."""
    return _extra_number(knobs, "swa_full_tokens_ratio")


def _extra_number(knobs, dest):
    """A number option of sglang_extra_args as the release's parser reads it (--mamba-full-memory-ratio: the state
    pool's share, linear.py); None when unset. Not a number: given as it is, so the planner refuses it by name."""
    table = flags.sglang_table(knobs.get("sglang_version") or "")
    value = extra_args.option_value(table, knobs.get("sglang_extra_args"), dest)
    try:
        return float(value) if value is not None else None
    except ValueError:
        return value


def loader_args(knobs):
    """(args, notes): the weight loader's flags for the release (lib/sglang_kvplan/loader.py), with the
    sglang_extra_args item that already sets one of them, as the release's parser reads it."""
    version = knobs.get("sglang_version") or ""
    given = extra_args.option_given(flags.sglang_table(version), knobs.get("sglang_extra_args"), loader.DESTS)
    return loader.loader_args(version, loader.release_flags(version), knobs.get("sglang_load_accelerate", "auto"),
                              given)


def plan(spec_, server):
    """The planner's plan, with what the nodes' inputs say (they differ, one lacks a calibration) in its
    assumptions."""
    result = sglang_kvplan.plan(spec_)
    return dict(result, assumptions=list(result["assumptions"]) + list(server["notes"]))
