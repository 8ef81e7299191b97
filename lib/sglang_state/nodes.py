"""A server across nodes, checked on every node before anything restarts (roles/sglang/tasks/nodes.yml): every
node of the server is in this run's batch, and every node runs the same SGLang, kernels and checkpoint (a rank on
other code or other weights hangs or corrupts the boot)."""

from __future__ import annotations

import json


def nodes_refusals(nodes, server, host, batch, versions, checkpoints):
    """One sentence per problem, [] when there is none.

    nodes: the server's nodes in rank order; batch: the hosts of this batch of the play; versions / checkpoints:
    {node: the versions of the runtime it installed} and {node: its checkpoint's config.json sha256}."""
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
