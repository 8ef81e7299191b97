"""What Prometheus scrapes, from the inventory and the check phase's plans, connecting to nothing: one target per
SGLang server (its rank-0 node, the only one that serves HTTP and /metrics) and one per router (its own Prometheus
endpoint), each labelled host, group, model and server; the server's plan numbers beside it."""

import os

from ansible.module_utils.parsing.convert_bool import boolean

LOOPBACK = ("127.0.0.1", "::1", "localhost")
NOT_A_MODEL_GROUP = ("all", "ungrouped", "sglang_servers", "sglang_routers")


def _value(variables, default, name):
    return variables[name] if name in variables else default(name)


def model_group(group_names):
    """The model's child group of sglang_servers (kimi_k26_dflash), the label that tells models apart."""
    found = [g for g in group_names or [] if g not in NOT_A_MODEL_GROUP]
    return found[0] if found else "sglang_servers"


def model_label(variables, default):
    for name in ("sglang_served_model_name", "sglang_model"):
        value = _value(variables, default, name)
        if value:
            return str(value)
    return os.path.basename(str(_value(variables, default, "sglang_model_path") or "").rstrip("/"))


def plan_numbers(planned):
    """{context_length, pool_tokens, max_running_requests} of a check-phase plan entry, or None when the check phase
    could not plan the host (a new host before preflight, an error)."""
    plan = (planned or {}).get("plan")
    if not plan:
        return None
    return {"context_length": int(plan["context_length"]), "pool_tokens": int(plan["predicted_pool_tokens"]),
            "max_running_requests": int(plan["max_running_requests"])}


def server_targets(hosts, plans, default):
    """(servers, notes). hosts: {name: {"groups": group_names, "vars": the inventory's values}} of sglang_servers;
    plans: the check phase's {host: plan_host(...)}; default(name): the sglang role's default of a knob."""
    servers, notes = [], []
    for host in sorted(hosts):
        variables, planned = hosts[host]["vars"], plans.get(host) or {}
        nodes = list(_value(variables, default, "sglang_nodes") or [host])
        rank0 = (planned.get("node") or {}).get("rank0") or nodes[0]
        if host != rank0:
            continue  # a node other than rank 0 serves no HTTP: its scheduler's metrics are rank 0's /metrics
        server = str(_value(variables, default, "sglang_server_name") or rank0)
        # a bool as the role reads it: -e sglang_metrics=false arrives as the string "false"
        if not boolean(_value(variables, default, "sglang_metrics"), strict=False):
            notes.append("%s: sglang_metrics is false, so it serves no /metrics and is not scraped (set "
                         "sglang_metrics: true and re-run site.yml)" % server)
            continue
        listen = str(_value(variables, default, "sglang_host"))
        if listen in LOOPBACK:
            notes.append("%s: sglang_host %s answers on the host only: run Prometheus there, or listen on the "
                         "network Prometheus scrapes from (docs/security.md)" % (server, listen))
        numbers = plan_numbers(planned)
        if numbers is None:
            notes.append("%s: no plan yet (%s): its panels have no plan lines and the plan's alerts wait for one"
                         % (server, planned.get("skipped") or planned.get("error") or "not planned"))
        servers.append({"server": server, "host": host, "address": str(variables.get("ansible_host") or host),
                        "port": int(_value(variables, default, "sglang_port")),
                        "group": model_group(hosts[host]["groups"]), "model": model_label(variables, default),
                        "plan": numbers})
    return servers, notes


def router_targets(hosts, default):
    """(routers, notes): each sglang_routers host's own Prometheus endpoint (--prometheus-host/--prometheus-port)."""
    routers, notes = [], []
    for host in sorted(hosts):
        variables = hosts[host]["vars"]
        listen = str(_value(variables, default, "sglang_router_prometheus_host"))
        if listen in LOOPBACK:
            notes.append("%s: sglang_router_prometheus_host %s answers on the router host only" % (host, listen))
        routers.append({"server": host, "host": host, "address": str(variables.get("ansible_host") or host),
                        "port": int(_value(variables, default, "sglang_router_prometheus_port")),
                        "group": "sglang_routers", "model": "", "plan": None})
    return routers, notes
