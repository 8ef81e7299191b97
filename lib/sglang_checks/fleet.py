"""What only the whole run can tell: sglang_serial's batches and the servers that span nodes.

sglang_serial is site.yml's `serial:`, a play keyword. Ansible evaluates play keywords before any host's
variables exist, so only an extra variable (-e) reaches it: set in group_vars or host_vars it would be
ignored and every host would restart at once. Such a setting is refused, with the -e form to use.
"""

SERIAL_HELP = ("a batch size (1), a percentage ('30%'), or a list of those ([2, 1]) given with -e, e.g. "
               "-e sglang_serial=1 or -e '{\"sglang_serial\": [2, 1]}'")


def _serial_item(item, total):
    """Hosts in one batch for one item of serial (Ansible's rules: a percentage of the play, at least 1)."""
    if isinstance(item, bool):
        raise ValueError
    if isinstance(item, int):
        size = item
    elif isinstance(item, str) and item.strip().endswith("%"):
        size = int(float(item.strip()[:-1]) / 100.0 * total)
        size = max(size, 1)
    elif isinstance(item, str) and item.strip().isdigit():
        size = int(item.strip())
    else:
        raise ValueError
    if size < 0:
        raise ValueError
    return size or total


def parse_serial(serial, total):
    """The batch sizes for `serial` over `total` hosts (the last size repeats), or ValueError."""
    if serial in (None, "", 0, "0"):
        return [total]
    items = serial if isinstance(serial, list) else [serial]
    if not items:
        raise ValueError
    return [_serial_item(item, total) for item in items]


def batches(hosts, serial):
    """The run's hosts split as Ansible's serial splits them, in play order."""
    sizes = parse_serial(serial, len(hosts))
    out, index = [], 0
    while index < len(hosts):
        size = sizes[min(len(out), len(sizes) - 1)] or len(hosts)
        out.append(list(hosts[index:index + size]))
        index += size
    return out


def play_hosts(run_hosts, group_hosts):
    """The hosts a play over a group batches, as Ansible lists them: the group's hosts in the group's inventory order
    (groups['<group>'], the order InventoryManager.get_hosts('<group>') returns), those of this run (-l applied).
    The check phase runs over every host of the run (routers too); site.yml's deploy play, the one with serial,
    runs over sglang_servers alone."""
    run = set(run_hosts)
    return [host for host in group_hosts if host in run]


def serial_refusals(hosts, hostvars, extra_vars, batched=None):
    """sglang_serial set outside -e, a value Ansible cannot use, or batches that split a server.

    hosts: every host of the run; batched: the hosts the play with serial batches, in its order (play_hosts();
    default: hosts)."""
    in_inventory = sorted(h for h in hosts if "sglang_serial" in hostvars[h]) if "sglang_serial" not in extra_vars \
        else []
    if in_inventory:
        return ["sglang_serial is set in the inventory (%s): serial is a play keyword, which Ansible evaluates "
                "before any host's variables exist, so it would be ignored there and every host of the run would "
                "restart at once. Remove it from group_vars/host_vars and pass it on the command line: %s."
                % (", ".join(in_inventory[:5]) + (", ..." if len(in_inventory) > 5 else ""), SERIAL_HELP)]
    serial = extra_vars.get("sglang_serial")
    batched = list(hosts if batched is None else batched)
    try:
        run_batches = batches(batched, serial)
    except (TypeError, ValueError):
        return ["sglang_serial is %r: expected %s." % (serial, SERIAL_HELP)]
    refusals, run = [], set(hosts)
    batch_of = {host: number for number, batch in enumerate(run_batches) for host in batch}
    for host in batched:
        nodes = hostvars[host].get("sglang_nodes") or []
        if isinstance(nodes, list) and len(nodes) > 1 and host == nodes[0]:
            # A node outside the run is node_refusals' sentence; one in the run but not batched is split off.
            split = {batch_of.get(node) for node in nodes if node in run}
            if len(split) > 1:
                refusals.append(
                    "sglang_serial %r splits the server of %s (nodes %s) over several batches: every node of a "
                    "server restarts together. List its nodes together in the inventory and make each batch a "
                    "multiple of %d (e.g. -e '{\"sglang_serial\": [%d, 1]}')."
                    % (serial, host, ", ".join(nodes), len(nodes), len(nodes)))
    return refusals


def node_refusals(hosts, hostvars, inventory_hosts):
    """Every node a server names is an inventory host, and in this run (a server is deployed whole)."""
    refusals, seen, run = [], set(), set(hosts)
    for host in hosts:
        nodes = hostvars[host].get("sglang_nodes") or []
        if not isinstance(nodes, list) or len(nodes) < 2 or tuple(nodes) in seen:
            continue
        seen.add(tuple(nodes))
        missing = [n for n in nodes if n not in inventory_hosts]
        if missing:
            refusals.append("sglang_nodes of %s names %s, which the inventory does not have: list each node of the "
                            "server as an inventory host (in rank order), or correct sglang_nodes."
                            % (host, ", ".join(map(str, missing))))
            continue
        outside = [n for n in nodes if n not in run]
        if outside:
            refusals.append("%s is a node of a server across nodes (%s), but %s %s not in this run: a server "
                            "changes on every node together. Run it whole (-l with the server's group)."
                            % (host, ", ".join(nodes), ", ".join(outside), "is" if len(outside) == 1 else "are"))
    return refusals
