"""What a deploy restarts and what it notes (roles/sglang/tasks/deploy.yml performs it).

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


def _changed(result):
    """Ansible's `changed` test on a registered result (a loop's: any of its items)."""
    if not isinstance(result, dict):
        return False
    if "changed" in result:
        return bool(result["changed"])
    return any(isinstance(each, dict) and each.get("changed") for each in result.get("results") or [])


def peer_restart(nodes, host, multinode, changed, hostvars):
    """{restart, changed}: the other nodes of this host's server (nodes: those in this batch) whose files this
    deploy changed, and whether this host restarts with them (changed: whether this run changed this host).

    Read from the nodes' registered renders (_sglang_rendered_unit, _sglang_rendered_secrets), which every node
    has before this is decided, so the answer does not depend on which node's note lands first. A run changes
    the nodes of a server together: a node that changed nothing before this deploy has peers that changed
    nothing before it either (a corrective deploy follows a start, which restarted every node of the server)."""
    if not multinode:
        return {"restart": False, "changed": []}
    rendered = [node for node in nodes if node != host and node in hostvars
                and (_changed(hostvars[node].get("_sglang_rendered_unit"))
                     or _changed(hostvars[node].get("_sglang_rendered_secrets")))]
    return {"restart": not changed and len(rendered) > 0, "changed": rendered}


def _skipped(result):
    return isinstance(result, dict) and bool(result.get("skipped"))


def server_boot(nodes, rank0, multinode, own_boot, hostvars):
    """What the server's boot measured: this node's boot lines, or across nodes rank 0's with P, A and the headroom
    of the least-free node (named as limiting_node). A run that started nothing read no lines: {found: false}."""
    read = (hostvars[rank0].get("_sglang_node_boot") if rank0 in hostvars else None) if multinode else own_boot
    boot = {"found": False} if read is None or _skipped(read) else dict(read)
    if not multinode or not boot.get("found"):
        return boot
    found = []
    for node in nodes:
        node_boot = hostvars[node].get("_sglang_node_boot") if node in hostvars else None
        if isinstance(node_boot, dict) and node_boot.get("found"):
            found.append(dict(node_boot, node=node))
    least = min(found, key=lambda each: each["pre_load_avail_gib"])
    least_after = min(found, key=lambda each: each["post_load_avail_gib"])
    ends = [each.get("pool_end_avail_gib") for each in found]
    ends = [end for end in ends if isinstance(end, int | float) and not isinstance(end, bool)]
    return dict(boot, pre_load_avail_gib=least["pre_load_avail_gib"],
                post_load_avail_gib=least_after["post_load_avail_gib"],
                pool_end_avail_gib=min(ends) if ends else None, limiting_node=least_after["node"])
