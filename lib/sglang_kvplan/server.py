"""One SGLang server across several nodes: where a host sits in it, and the P and A the server plans from.

SGLang sizes the pool from the least free GPU of every rank of every node: `get_available_gpu_memory(...,
distributed=True)` all-reduces each rank's free memory with ReduceOp.MIN over the world group (srt/utils/common.py,
0.5.9 and 0.5.23), once for P (0.5.9 model_executor/model_runner.py, 0.5.23 distributed/bootstrap.py) and once
for A (0.5.9 model_runner_kv_cache_mixin.py profile_max_num_token, 0.5.23 mem_cache/kv_cache_configurator.py
_profile_available_bytes). So the server's plan takes the minimum over its nodes of what each node has or
measured, and names the node that sets it.

The node flags are SGLang's (srt/server_args.py 0.5.9, srt/arg_groups/fields/parallel.py 0.5.23): --nnodes,
--node-rank, --dist-init-addr host:port (IPv6 in brackets: srt/utils/network.py NetworkAddress.parse) and
--dist-timeout (seconds, torch.distributed's init timeout); --tp-size stays the whole server's.
"""

import functools
import json
import math
import os

from .spec import KVPlanError

NODES_KNOB = "sglang_nodes"


def node_placement(nodes, host, tp_size=None, pp_size=None):
    """{nnodes, node_rank, nodes, rank0} of `host` in `nodes` (sglang_nodes, rank order); [] is one node.

    With tp_size (and pp_size) given, also checks that the server's GPUs split evenly over the nodes, so a role
    can refuse a bad inventory before it changes anything on a host."""
    if nodes in (None, "", []):
        nodes = [host]
    if not isinstance(nodes, (list, tuple)) or not all(isinstance(n, str) and n for n in nodes):
        raise KVPlanError("%s: expected the server's inventory hostnames in rank order, e.g. [ct400-a, ct400-b] "
                          "(or [] for a server on one host), got %r." % (NODES_KNOB, nodes))
    twice = sorted({n for n in nodes if list(nodes).count(n) > 1})
    if twice:
        raise KVPlanError("%s %s lists %s more than once: each node is one rank set of the server. List every "
                          "node once, in rank order." % (NODES_KNOB, list(nodes), ", ".join(twice)))
    if host not in nodes:
        raise KVPlanError("%s %s does not list this host (%s): set sglang_nodes in the vars of the group of hosts "
                          "that make up the server (every one of them listed), or set it to [] on a host that is a "
                          "server on its own." % (NODES_KNOB, list(nodes), host))
    if tp_size is not None:
        sizes = []
        for knob, size in (("sglang_tp_size", tp_size), ("sglang_pp_size", 1 if pp_size is None else pp_size)):
            try:
                number = int(size) if not isinstance(size, bool) and float(size) == int(float(size)) else None
            except (TypeError, ValueError, OverflowError):
                number = None
            if number is None or number < 1:
                raise KVPlanError("%s is %r: give a whole number of GPUs, 1 or more." % (knob, size))
            sizes.append(number)
        check_split(len(nodes), *sizes)
    return {"nnodes": len(nodes), "node_rank": list(nodes).index(host), "nodes": list(nodes), "rank0": nodes[0]}


def check_split(nnodes, tp_size, pp_size, dp_size=1, enable_dp_attention=False):
    """Refuse what SGLang refuses for a server across nodes (check_server_args: 0.5.9 server_args.py, 0.5.23
    arg_groups/validation_hook.py), with the knobs to change."""
    gpus = tp_size * pp_size
    if nnodes > 1 and gpus % nnodes:
        step = nnodes // math.gcd(nnodes, pp_size)  # tp must be a multiple of this for tp x pp to split
        tp_fix = math.ceil(tp_size / step) * step
        counts = [str(n) for n in range(2, gpus + 1) if gpus % n == 0][:6]
        raise KVPlanError(
            "%s lists %d nodes, but sglang_tp_size %d x sglang_pp_size %d = %d GPUs do not split evenly over them "
            "(SGLang refuses it: 'tp_size must be divisible by number of nodes'; each node runs tp x pp / nodes "
            "GPUs). %s sglang_tp_size to a multiple of %d that the model's attention heads divide (e.g. %d: %d "
            "GPU(s) per node)."
            % (NODES_KNOB, nnodes, tp_size, pp_size, gpus,
               ("List %s nodes in %s, or set" % (_either(counts), NODES_KNOB)) if counts else "Set", step, tp_fix,
               tp_fix * pp_size // nnodes))
    if nnodes > 1 and dp_size > 1 and not enable_dp_attention:
        raise KVPlanError(
            "sglang_dp_size %d with %d nodes in %s: SGLang runs data-parallel replicas on one node only ('multi-node "
            "data parallel is not supported unless dp attention'). Set sglang_enable_dp_attention: true, or make each "
            "replica a server of its own behind sglang_routers." % (dp_size, nnodes, NODES_KNOB))


def _either(words):
    return words[0] if len(words) == 1 else "%s or %s" % (", ".join(words[:-1]), words[-1])


def dist_init_addr(host, port):
    """--dist-init-addr for rank 0's host and port; an IPv6 address goes in brackets, as SGLang parses it."""
    host = str(host)
    if ":" in host and not host.startswith("["):
        host = "[%s]" % host
    return "%s:%d" % (host, int(port))


def _number(node, what, value, positive=True):
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = None
    if number is None or not math.isfinite(number) or (positive and number <= 0):
        raise KVPlanError("node %s: %s is %r, not a number%s; fix that node's host_vars (or remove it: the next "
                          "boot measures it)." % (node, what, value, " > 0" if positive else ""))
    return number


def _least(values, order):
    """(value, node) of the smallest value, the first node in rank order on a tie."""
    return min(((v, n) for n, v in values.items()), key=lambda item: (item[0], order.index(item[1])))


def _gib(value):
    return "%.3f GiB" % value


def _draft_clamped(calibration):
    """A calibration stored before the draft's weight was clamped (sglang_kvplan.calibration) can hold the raw
    drop across the draft's load, negative when the load freed memory (a real 0.5.2x boot: 28.81 -> 30.67 GB).
    The draft then took nothing: 0, the raw value kept beside it as a fresh calibration keeps it."""
    raw = calibration.get("draft_weights_gib")
    if raw in (None, ""):
        return calibration
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise KVPlanError("the stored calibration's draft_weights_gib is %r, not a number; remove that entry from "
                          "the host's calibration fact (the next boot measures it)." % (raw,))
    if value < 0:
        calibration.setdefault("draft_load_avail_gib", value)
        calibration["draft_weights_gib"] = 0.0
    else:
        calibration["draft_weights_gib"] = value
    return calibration


def server_inputs(per_node):
    """The GPU memory and calibration a server plans from, over its nodes in rank order.

    per_node: [{node, gpu_memory_mib (memory.total of that node's smallest GPU, or None), calibration (that node's
    {pre_load_avail_gib, post_load_avail_gib[, draft_weights_gib]}, or {})}].
    Returns {gpu_memory_mib, calibration, limiting_node, notes}: the least GPU memory; P and A each the least
    over the nodes (SGLang's MIN over ranks), and the draft's weights the most, when every node has a calibration
    (else {}: the server is planned from the estimate until a boot measured every node); the node with the least
    A (calibrated) or the least GPU memory (estimated); and what the plan should say about the nodes.
    One node's inputs pass through unchanged, but for a stored draft weight below zero (see _draft_clamped).
    """
    if not isinstance(per_node, (list, tuple)) or not per_node or not all(
            isinstance(n, dict) and n.get("node") for n in per_node):
        raise KVPlanError("server inputs: expected one {node, gpu_memory_mib, calibration} per node of the server, "
                          "got %r." % (per_node,))
    if len(per_node) == 1:
        only = per_node[0]
        return {"gpu_memory_mib": only.get("gpu_memory_mib"),
                "calibration": _draft_clamped(dict(only.get("calibration") or {})),
                "limiting_node": only["node"], "notes": []}
    order = [n["node"] for n in per_node]
    gpus, calibrations, notes = {}, {}, []
    for entry in per_node:
        node = entry["node"]
        if entry.get("gpu_memory_mib") not in (None, ""):
            gpus[node] = _number(node, "gpu_memory_mib (nvidia_gpu.memory_mib_min or sglang_gpu_memory_mib)",
                                 entry["gpu_memory_mib"])
        calibration = entry.get("calibration") or {}
        if calibration.get("pre_load_avail_gib") in (None, "") or calibration.get("post_load_avail_gib") in (None, ""):
            continue
        pre = _number(node, "the calibration's pre_load_avail_gib", calibration["pre_load_avail_gib"])
        post = _number(node, "the calibration's post_load_avail_gib", calibration["post_load_avail_gib"])
        if post > pre:  # equal: weights under the log's 0.01 GB, or free memory that rose across the load
            raise KVPlanError("node %s: its calibration has post_load_avail_gib %s > pre_load_avail_gib %s: free "
                              "memory drops when the weights load. Fix or remove that node's sglang_calibration."
                              % (node, post, pre))
        if node in gpus and pre > gpus[node] / 1024:
            raise KVPlanError("node %s: its calibration's pre_load_avail_gib %s GiB is more than its GPU has (%s MiB "
                              "= %.2f GiB): it belongs to another GPU or was mistyped. Remove it (the next boot "
                              "measures it again)." % (node, pre, gpus[node], gpus[node] / 1024))
        calibrations[node] = dict(calibration, pre_load_avail_gib=pre, post_load_avail_gib=post)

    missing_gpu = [n for n in order if n not in gpus]
    gpu_min, gpu_node = _least(gpus, order) if gpus else (None, None)
    if gpus and missing_gpu:
        notes.append("GPU memory unknown on node(s) %s: the least over the others is %s MiB (node %s)"
                     % (", ".join(missing_gpu), _fmt_mib(gpu_min), gpu_node))
    if len(calibrations) == len(order):
        pre, pre_node = _least({n: c["pre_load_avail_gib"] for n, c in calibrations.items()}, order)
        post, limiting = _least({n: c["post_load_avail_gib"] for n, c in calibrations.items()}, order)
        calibration = dict(calibrations[limiting], pre_load_avail_gib=pre, post_load_avail_gib=post)
        drafts = [_draft_clamped(dict(c))["draft_weights_gib"] for c in calibrations.values()
                  if c.get("draft_weights_gib") not in (None, "")]
        if drafts:
            calibration["draft_weights_gib"] = max(drafts)  # the most any node's draft took: the least left
        if len({(c["pre_load_avail_gib"], c["post_load_avail_gib"]) for c in calibrations.values()}) > 1:
            notes.append("the nodes measured different P and A (%s): the plan takes the least P (node %s) and the "
                         "least A (node %s), as SGLang's MIN over every rank does"
                         % ("; ".join("%s P %s, A %s" % (n, _gib(calibrations[n]["pre_load_avail_gib"]),
                                                        _gib(calibrations[n]["post_load_avail_gib"])) for n in order),
                            pre_node, limiting))
    else:
        calibration = {}
        limiting = gpu_node or order[0]
        if calibrations:
            notes.append("no calibration on node(s) %s for this setup: the server is planned from the estimate "
                         "(the least GPU memory, node %s) until a boot has measured every node"
                         % (", ".join(n for n in order if n not in calibrations), limiting))
        if len(set(gpus.values())) > 1:
            notes.append("GPU memory differs over the nodes (%s): the estimate uses the least, node %s"
                         % ("; ".join("%s %s MiB" % (n, _fmt_mib(gpus[n])) for n in order if n in gpus), limiting))
    return {"gpu_memory_mib": gpu_min, "calibration": calibration, "limiting_node": limiting, "notes": notes}


def _fmt_mib(value):
    return ("%d" % value) if float(value).is_integer() else ("%s" % value)


_RELEASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "releases")


@functools.cache
def release_has_flag(release, flag):
    """Whether SGLang `release`'s parser has `flag` (its table, releases/flags-<release>.json, read from the wheel)."""
    path = os.path.join(_RELEASES, "flags-%s.json" % release)
    if not os.path.exists(path):
        return False
    with open(path, encoding="utf-8") as handle:
        return any(flag in entry["names"] for entry in json.load(handle)["flags"])


def parallel_args(spec):
    """The data-parallel flags as the release spells them. 0.5.22 made --enable-dp-attention a deprecated
    switch that turns `--dp-size N` into `--attn-dp-size N` and --dp-size 1 (0.5.23 arg_groups/parallel_hook.py
    _handle_deprecated_dp_attention:39-61): where the release has --attn-dp-size, attention DP is rendered as it
    (nothing at width 1, which is no attention DP); elsewhere as --dp-size N --enable-dp-attention. Replicas
    (DP without DP attention) are --dp-size N in every release. --tp-size and --pp-size are the role's."""
    dp, attention = spec["dp_size"], spec["enable_dp_attention"]
    if attention and release_has_flag(spec["_release"], "--attn-dp-size"):
        return ["--attn-dp-size", str(dp)] if dp > 1 else []
    return (["--dp-size", str(dp)] if dp > 1 else []) + (["--enable-dp-attention"] if attention else [])
