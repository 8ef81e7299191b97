"""What a deploy restarts and what it notes (transaction.py's phases).

A node restarts when its unit, env file or config changed, or, on a server across nodes, when another node of the
server changed: SGLang's ranks start together, so a node left running the old state would wait for peers that
restarted. The notes: whether this run changed the host (the rescue acts only then), the store entry of the state
that served before the run (the rescue's fallback target), whether this run (re)started SGLang (only then are
there boot lines to read), and the server's boot (the least-free rank over its nodes, as SGLang's all-reduce MIN).
"""

from __future__ import annotations


def _entry_path(before, name):
    for entry in (before or {}).get("entries") or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry.get("path") or ""
    return ""


def deploy_changes(files_changed, changed_this_run, run_backup, before):
    """{files_changed, changed_this_run, run_backup} after rendering the service's files.

    files_changed: the unit, env file or config changed in this deploy; changed_this_run: whether the run changed
    the host before (a corrective deploy re-enters); run_backup: the entry path noted so far ("" when none);
    before: the store's snapshot of the state found before rendering ({name, entries}).
    """
    files_changed = bool(files_changed)
    if files_changed and not run_backup:
        run_backup = _entry_path(before, (before or {}).get("name"))
    return {"files_changed": files_changed, "changed_this_run": bool(changed_this_run) or files_changed,
            "run_backup": run_backup or ""}


def peer_restart(nodes_changed, host, multinode, changed):
    """{restart, changed}: the other nodes of this host's server whose files this deploy changed, and whether this
    host restarts with them (changed: whether this run changed this host).

    nodes_changed: {node: whether this deploy changed its unit, env file or config} for the server's nodes in
    this batch, gathered from every node's render phase once all of them rendered, so the answer does
    not depend on which node's note lands first. A run changes the nodes of a server together: a node that
    changed nothing before this deploy has peers that changed nothing before it either (a corrective deploy
    follows a start, which restarted every node of the server)."""
    if not multinode:
        return {"restart": False, "changed": []}
    rendered = [node for node, node_changed in (nodes_changed or {}).items() if node != host and node_changed]
    return {"restart": not changed and len(rendered) > 0, "changed": rendered}


def _read(boot):
    """A boot read as sglang_boot_facts returned it; one without `found` (a read that was skipped because
    nothing started, or never ran on that node) is no boot read."""
    return dict(boot) if isinstance(boot, dict) and "found" in boot else {"found": False}


def server_boot(boots, rank0, multinode, own_boot):
    """What the server's boot measured: this node's boot lines (own_boot), or across nodes rank 0's with P, A
    and the headroom of the least-free node (named as limiting_node). A run that started nothing read no lines:
    {found: false}.

    boots: {node: that node's sglang_boot_facts result} for every node of the server (the phases gather them
    once every node has read its journal); rank0: the node whose boot names the server's pool."""
    boot = _read((boots or {}).get(rank0)) if multinode else _read(own_boot)
    if not multinode or not boot.get("found"):
        return boot
    found = [dict(read, node=node) for node, read in (boots or {}).items() if _read(read).get("found")]
    least = min(found, key=lambda each: each["pre_load_avail_gib"])
    least_after = min(found, key=lambda each: each["post_load_avail_gib"])
    ends = [each.get("pool_end_avail_gib") for each in found]
    ends = [end for end in ends if isinstance(end, int | float) and not isinstance(end, bool)]
    return dict(boot, pre_load_avail_gib=least["pre_load_avail_gib"],
                post_load_avail_gib=least_after["post_load_avail_gib"],
                pool_end_avail_gib=min(ends) if ends else None, limiting_node=least_after["node"])
