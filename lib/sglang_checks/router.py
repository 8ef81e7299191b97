"""What a router host's settings need of the other hosts: its workers (inventory hosts, each the rank 0 of its server,
reachable, one API key, one URL each), the ports the router host serves, and who may use its admin API.

    refusals(host, value, inventory_hosts, peer) -> [one sentence per refusal]

value(name): the router host's variable with the roles' defaults applied; peer(name): an inventory host's variables
as plain values ({} for a name the inventory does not have). The check phase calls this for every router host of the
run before anything connects, and roles/sglang_router/tasks/assert.yml calls it through the same function
(inputs.host_refusals) when the role is used alone, so both accept the same inventories. Before this module the
worker checks ran only in the router play, after every server had been deployed (probe-5 N-S5-6).
"""

import difflib
import ipaddress
import re

from sglang_checks import urls
from sglang_checks.kinds import Refusal, integer

# Listeners only this host reaches (the sglang role's and the router's own rule).
LOOPBACK = ("127.0.0.1", "localhost", "::1")
# An inventory host name as a worker entry may give it: the names Ansible's YAML inventory takes and the check phase
# accepts for a host (values.HOST_NAME, without the length), never a path, a URL or a word with spaces.
WORKER_NAME = re.compile(r"^[A-Za-z0-9_:\[\]][A-Za-z0-9_.:\[\]-]*$")
EXAMPLE = "List the inventory names of each replica's rank-0 host (e.g. [ct200, ct400-a]) in the router host's vars."


def _show(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def worker_refusals(host, workers, inventory_hosts, peer):
    """The boot list: a list of inventory names, at least one. Returns (refusals, the names that are hosts)."""
    if not isinstance(workers, list):
        return ["%s: sglang_router_workers is %s, not a list. %s" % (host, _show(workers), EXAMPLE)], []
    if not workers:
        return ["%s: sglang_router_workers is [] on %s: a router needs at least one replica to boot with. %s"
                % (host, host, EXAMPLE)], []
    out, names = [], []
    for item in workers:
        if not isinstance(item, str) or not WORKER_NAME.match(item) or ".." in item:
            # 1, '../../x', 'file:///etc/passwd', 'http://10.0.0.7:30000': the role derives each worker's URL from
            # its inventory host (ansible_host, sglang_port), so anything else is no worker at all
            out.append("%s: sglang_router_workers holds %s, which is not an inventory host name (the role builds "
                       "each worker's URL from the host's ansible_host and sglang_port; no URL, path or number). %s"
                       % (host, _show(item), EXAMPLE))
        elif item not in inventory_hosts:
            close = difflib.get_close_matches(item, sorted(inventory_hosts), n=1, cutoff=0.6)
            out.append("%s: sglang_router_workers is %s: %s not in the inventory. %s%s"
                       % (host, _show(workers), item, "Did you mean %s? " % close[0] if close else "", EXAMPLE))
        else:
            names.append(item)
    return out, names


def _key(item, name):
    value = item.get(name)
    return "" if value is None else value


def member_refusals(host, names, value, peer, server_default):
    """Each worker is rank 0 of its server, reachable from the router, with the others' API key and its own URL."""
    out, keys, seen = [], [], {}
    for name in names:
        vars_ = peer(name)
        nodes = vars_.get("sglang_nodes") or []
        if isinstance(nodes, list) and len(nodes) > 1 and nodes[0] != name:
            out.append("%s: sglang_router_workers names %s, which is node %s of its server (sglang_nodes %s); the "
                       "router must reach rank 0, which serves the API. List %s instead."
                       % (host, name, nodes.index(name) if name in nodes else "?", ", ".join(map(str, nodes)),
                          nodes[0]))
        listen = vars_.get("sglang_host", server_default("sglang_host"))
        if name != host and listen in LOOPBACK:
            out.append("%s: %s listens on %s (its sglang_host; the sglang role's default is 127.0.0.1), which the "
                       "router on %s cannot reach. Set sglang_host: 0.0.0.0 for %s (with sglang_api_key set)."
                       % (host, name, listen, host, name))
        keys.append(_key(vars_, "sglang_api_key"))
        try:
            url = urls.worker_url(vars_.get("ansible_host") or name,
                                  vars_.get("sglang_port", server_default("sglang_port")))
        except (TypeError, ValueError):
            continue  # a port that is no number is that host's own refusal
        seen.setdefault(url, []).append(name)
    differ = [name for name, key in zip(names, keys, strict=True) if key != keys[0]] if keys else []
    if differ:  # the keys themselves are never shown
        out.append("%s: sglang_router_workers do not share one sglang_api_key: %s differ from %s. sglang-router 0.3.2 "
                   "sends a single --api-key to every worker; give them all the same key (from the vault)."
                   % (host, ", ".join(differ), names[0]))
    for url, hosts in seen.items():
        if len(hosts) > 1:
            out.append("%s: sglang_router_workers %s are one worker URL (%s): each must appear once (two inventory "
                       "names for one server?). List each replica once." % (host, ", ".join(hosts), url))
    # (with no worker to read a key from, the list's own refusal comes first)
    if names and value("sglang_router_host") not in LOOPBACK and not value("sglang_router_admin_api_key") and \
            not keys[0]:
        out.append("%s: sglang_router_host is %s but neither sglang_router_admin_api_key nor the workers' "
                   "sglang_api_key is set: the router's admin API (POST /workers) would take anyone's worker. Set "
                   "sglang_router_admin_api_key (from a vault), or keep sglang_router_host at 127.0.0.1."
                   % (host, value("sglang_router_host")))
    return out


def _address(text):
    try:
        return ipaddress.ip_address(str(text).strip("[]"))
    except ValueError:
        return None  # a name: it may resolve to any address of the host


def overlap(one, other):
    """Whether two listen addresses can take the same port on one host: the same address, a wildcard against any
    address of its family ('::' is dual-stack on Linux, so it takes the IPv4 addresses too), or a name (it may
    resolve to either)."""
    a, b = _address(one), _address(other)
    if a is None or b is None or a == b:
        return True
    if a.is_unspecified and (a.version == 6 or b.version == 4):
        return True
    return b.is_unspecified and (b.version == 6 or a.version == 4)


def _port(value):
    try:
        return integer(value, 1, 65535)
    except Refusal:
        return None  # not a port: values.py refuses it by name


def listeners(host, value, own, server_default):
    """[(knob, address, port)] the router host serves: the router, its metrics, and, when it is a server too (in
    sglang_servers), SGLang's port and a server's rendezvous port across nodes (rank 0 listens on every address)."""
    out = [("sglang_router_port", value("sglang_router_host"), value("sglang_router_port")),
           ("sglang_router_prometheus_port", value("sglang_router_prometheus_host"),
            value("sglang_router_prometheus_port"))]
    if "sglang_servers" in (own.get("group_names") or []):
        out.append(("sglang_port (the SGLang server on this host)",
                    own.get("sglang_host", server_default("sglang_host")),
                    own.get("sglang_port", server_default("sglang_port"))))
        nodes = own.get("sglang_nodes") or []
        if isinstance(nodes, list) and len(nodes) > 1 and nodes[0] == host:
            out.append(("sglang_dist_init_port (rank 0's rendezvous)", "0.0.0.0", own.get(
                "sglang_dist_init_port", server_default("sglang_dist_init_port"))))
    return [(knob, address, _port(port)) for knob, address, port in out if _port(port) is not None]


def port_refusals(host, value, own, server_default):
    found = listeners(host, value, own, server_default)
    out = []
    for index, (knob, address, port) in enumerate(found):
        for other, other_address, other_port in found[index + 1:]:
            if port == other_port and overlap(address, other_address):
                out.append("%s: %s and %s are both port %d (on %s and %s): two listeners on one port of this host, "
                           "so the second fails to start. Give each its own port (the router's metrics default to "
                           "29000, the router to 30000)." % (host, other, knob, port, other_address, address))
    return out


def refusals(host, value, inventory_hosts, peer, server_default):
    """Every refusal of a router host's settings that reads other hosts (see the module's docstring)."""
    out, names = worker_refusals(host, value("sglang_router_workers"), inventory_hosts, peer)
    out += member_refusals(host, names, value, peer, server_default)
    own = dict(peer(host))
    if host in names:  # a worker on the router's own host serves SGLang there, whatever its groups say
        own["group_names"] = list(own.get("group_names") or []) + ["sglang_servers"]
    return out + port_refusals(host, value, own, server_default)
