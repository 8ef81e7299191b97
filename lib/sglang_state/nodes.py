"""A server across nodes, checked on every node before anything restarts (roles/sglang/tasks/nodes.yml): every
node of the server is in this run's batch, every node runs the same SGLang, kernels and checkpoint (a rank on
other code or other weights hangs or corrupts the boot), and the NCCL and Gloo interfaces named exist on it."""

from __future__ import annotations

import json


def interface_refusals(host, named, interfaces):
    """named: sglang_nccl_socket_ifname and sglang_gloo_socket_ifname (empty ones left out); interfaces: the host's
    (its facts). NCCL and Gloo would wait on a socket that never connects."""
    absent = sorted({name for name in named if name} - set(interfaces or []))
    if not absent:
        return []
    return ["%s has no network interface %s (sglang_nccl_socket_ifname / sglang_gloo_socket_ifname); it has %s. NCCL "
            "and Gloo would wait on a socket that never connects; name one of those interfaces."
            % (host, " or ".join(absent), ", ".join(sorted(interfaces or [])) or "none")]


def nodes_refusals(nodes, server, host, batch, versions, checkpoints, named_interfaces=(), interfaces=()):
    """One sentence per problem, [] when there is none.

    nodes: the server's nodes in rank order; batch: the hosts of this batch of the play; versions / checkpoints:
    {node: the versions of the runtime it installed} and {node: its checkpoint's config.json sha256};
    named_interfaces / interfaces: as interface_refusals takes them."""
    found = interface_refusals(host, named_interfaces, interfaces)
    return _server_refusals(nodes, server, host, batch, versions, checkpoints) + found


def _server_refusals(nodes, server, host, batch, versions, checkpoints):
    if host not in nodes:
        return ["%s spans %s (sglang_nodes), but this host %s is not one of them: all nodes of a server render, "
                "restart and are proven together." % (server, ", ".join(nodes), host)]
    missing = [node for node in nodes if node not in batch]
    if missing:
        return ["%s spans %s (sglang_nodes), but %s is not in this batch of the play: all nodes of a server render, "
                "restart and are proven together. Run with -l %s (the group of its nodes) and, with sglang_serial, "
                "a batch size that is a multiple of %d with the nodes listed together."
                % (server, ", ".join(nodes), ", ".join(missing), server, len(nodes))]
    mine = {"versions": versions.get(host) or {}, "checkpoint": checkpoints.get(host)}
    differ = ["%s has %s %s where %s has %s" % (node, key, json.dumps(theirs[key]), host, json.dumps(mine[key]))
              for node in nodes if node != host
              for theirs in [{"versions": versions.get(node) or {}, "checkpoint": checkpoints.get(node)}]
              for key in ("versions", "checkpoint") if theirs[key] != mine[key]]
    if differ:
        return ["The nodes of %s differ: %s. Every rank must load the same weights with the same code (a mismatch "
                "hangs or corrupts the boot); re-run so that install and download converge on every node, or check "
                "sglang_package / sglang_model_path per host." % (server, "; ".join(differ))]
    return []


def peers_results(nodes, found, name, step):
    """{node: its result} for the nodes of a server that move in step. found: {node: its `name`} for the nodes that
    have one. A node without one did not run `step`: its peers must not go on as if it had (a missing result read
    as {} made a server decide for fewer nodes than it has), so it is refused, naming the node and the causes."""
    missing = [node for node in nodes if node not in found]
    if missing:
        raise ValueError(
            "the nodes of a server move in step, and %s ha%s no %s: %s did not run there (a node that failed or was "
            "unreachable at an earlier step, one left out by --limit, or a play run with a strategy other than "
            "linear). Run again with every node of the server in the play (site.yml pins strategy: linear)"
            % (", ".join(missing), "s" if len(missing) == 1 else "ve", name, step))
    return {node: found[node] for node in nodes}
