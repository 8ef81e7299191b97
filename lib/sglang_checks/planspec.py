"""The planner's spec for one host, from its sglang_* knobs and what is known of its server's nodes.

The one derivation of the spec: the sglang role's plan.yml calls it (through the sglang_plan_spec filter) with
the role's variables and what model.yml read on the host, and the check phase calls it for every host of a run
at once, from the inventory, before anything connects. Spec keys are the knob names without `sglang_`, so the
planner's errors name the knob to change (lib/sglang_kvplan/spec.py).
"""

import sglang_kvplan

from sglang_checks import extra_args, flags

# Knobs whose value the spec takes as it is, under the knob's name less the prefix.
KNOB_KEYS = ("model", "model_config", "weights_gib_per_gpu", "context_target", "tp_size", "pp_size", "dp_size",
             "enable_dp_attention", "kv_cache_dtype", "page_size", "version", "pool_policy",
             "max_running_requests", "preload_overhead_gib", "min_headroom_gib", "uncalibrated_margin",
             "dist_init_port", "dist_timeout")
# Every knob the spec reads (plan.yml passes exactly these; the check phase reads them from the inventory).
KNOBS = tuple("sglang_" + key for key in KNOB_KEYS) + (
    "sglang_checkpoint_gib", "sglang_speculative", "sglang_pool_rules", "sglang_gpu_memory_mib",
    "sglang_calibration", "sglang_nodes", "sglang_dist_init_host", "sglang_gpu_compute_capability",
    "sglang_extra_args")
# Only the role uses these speculative keys (where the draft comes from), not the planner.
ROLE_ONLY_SPECULATIVE = ("draft_model_hf_repo", "draft_model_hf_revision")


def node_inputs(node, knobs, gpu=None, calibration=None):
    """One node's {node, gpu_memory_mib, gpu_compute_capability, calibration}: its GPU facts (nvidia_gpu, when
    preflight read them) over its knobs, the calibration the role has in use on it (model.yml's stored one, or
    calibrate.yml's measured one) over its inventory's sglang_calibration."""
    gpu = gpu or {}
    return {"node": node,
            "gpu_memory_mib": gpu.get("memory_mib_min") or knobs.get("sglang_gpu_memory_mib"),
            # The page SGLang's attention backend forces depends on the GPU family (lib/sglang_kvplan/pages.py).
            "gpu_compute_capability": gpu.get("compute_capability") or knobs.get("sglang_gpu_compute_capability"),
            "calibration": calibration if calibration is not None else (knobs.get("sglang_calibration") or {})}


def gpus_per_node(tp_size, pp_size=1, dp_size=1, enable_dp_attention=False, nnodes=1):
    """The GPUs SGLang takes on each node: tp x pp per data-parallel rank, dp ranks (DP attention keeps them
    inside the tp group: 0.5.23 resolves it to attn_dp_size, dp_size 1), shared by the server's nodes
    (managers/data_parallel_controller.py launch_dp_schedulers: base_gpu_id += tp_size x pp_size per DP rank)."""
    ranks = 1 if enable_dp_attention else max(int(dp_size or 1), 1)
    return int(tp_size or 1) * int(pp_size or 1) * ranks // max(int(nnodes or 1), 1)


def dist_init_host(knobs, rank0_address):
    """--dist-init-addr's host: the knob, else rank 0's address (its ansible_host, else its name)."""
    return knobs.get("sglang_dist_init_host") or rank0_address


def spec(host, knobs, per_node, rank0_address, measured=None):
    """(spec, server inputs, node placement) for `host`.

    knobs: this host's sglang_* values, defaults applied (KNOBS); per_node: node_inputs() of every node of its
    server in rank order; rank0_address: rank 0's ansible_host (or name); measured: what was read on the host
    (checkpoint_gib, draft_model_config, draft_checkpoint_gib), when it was."""
    measured = measured or {}
    node = sglang_kvplan.node_placement(knobs.get("sglang_nodes") or [], host, knobs.get("sglang_tp_size"),
                                        knobs.get("sglang_pp_size"))
    server = sglang_kvplan.server_inputs(per_node)
    calibration = server["calibration"]
    out = {key: knobs.get("sglang_" + key) for key in KNOB_KEYS}
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
        # this host's GPU family (a server's nodes are expected to be alike)
        gpu_compute_capability=next((n["gpu_compute_capability"] for n in per_node if n["node"] == host
                                     and n.get("gpu_compute_capability")), None),
        pre_load_avail_gib=calibration.get("pre_load_avail_gib"),
        post_load_avail_gib=calibration.get("post_load_avail_gib"),
        nnodes=node["nnodes"], node_rank=node["node_rank"],
        dist_init_host=dist_init_host(knobs, rank0_address),
        limiting_node=server["limiting_node"],
        mm_feature_transport=mm_feature_transport(knobs))
    return out, server, node


def mm_feature_transport(knobs):
    """--mm-feature-transport as the release's parser reads it from sglang_extra_args (the role renders them as
    they are): the one extra option that changes the pool (lib/sglang_kvplan/memory.py mm_reserve_gib)."""
    table = flags.sglang_table(knobs.get("sglang_version") or "")
    return extra_args.option_value(table, knobs.get("sglang_extra_args"), "mm_feature_transport")


def plan(spec_, server):
    """The planner's plan, with what the nodes' inputs say (they differ, one lacks a calibration) in its
    assumptions."""
    result = sglang_kvplan.plan(spec_)
    return dict(result, assumptions=list(result["assumptions"]) + list(server["notes"]))
