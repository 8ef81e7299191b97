"""The check phase's filter: every host of a run checked on the controller, with no connection.

  {{ hostvars | sglang_check_extra_vars }}    -e names with a leading _ (they would replace the check's own result)
  {{ ansible_play_hosts_all | sglang_check_hosts(hostvars, groups) }}          every refusal, one sentence each
  {{ inventory_hostname | sglang_check_host(hostvars, group, knobs, seen, groups['all']) }}
      one host's own, as its role checks it on every run
  {{ inventory_hostname | sglang_plan_host(hostvars, knobs, measured, gpus, calibrations) }}
      {spec, plan, node, server} or {error}
  {{ ansible_play_hosts_all | sglang_plan_hosts(hostvars) }}               the same for every server host at once
  {{ sglang_host | sglang_local_host }}     where a check on the host reaches a server listening there ([::1])
  {{ ansible_host | sglang_url_host }}      the host part of a URL (an IPv6 address in brackets)

The checks are plain Python in lib/sglang_checks/ (tested without Ansible); this layer only reads hostvars.
"""

import json
import os
import sys

from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader
from ansible.utils.vars import load_extra_vars

# As in sglang_kv.py: Ansible loads filter plugins by path; the checks live in lib/.
_LIB = os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib")
sys.path.insert(0, _LIB)

import sglang_kvplan  # noqa: E402
from sglang_checks import fleet, inputs, kept, planspec, urls  # noqa: E402
from sglang_checks.planhost import Once, plain, plan_host  # noqa: E402

_ROLES = os.path.realpath(os.path.join(_LIB, os.pardir, "roles"))
# Where the role's report step writes (roles/sglang/tasks/report.yml: role_path/../../reports), unless
# sglang_report_dir says otherwise: each host's kept calibration is read from there.
_REPORTS = os.path.realpath(os.path.join(_LIB, os.pardir, "reports"))


def _variables(host, hostvars, given=()):
    """The host's role-prefixed variables as plain values (each templated once; a broken template is refused).
    given: names the caller templated already (a role's knobs with its defaults), which replace these: not templated
    twice."""
    source = hostvars[host]
    out, broken = {}, []
    known = inputs.roles_at(_ROLES).known
    for name in list(source):
        if name in given or not inputs.is_checked_name(name, known):  # the roles' names, and near misses (tp_size)
            continue
        try:
            out[str(name)] = plain(source[name])
        except AnsibleError as error:
            broken.append("%s: %s does not template: %s" % (host, name, str(error).splitlines()[0]))
    out["group_names"] = plain(list(source.get("group_names", [])))
    return out, broken


# What a router's checks read of another host (lib/sglang_checks/router.py): where it listens, its key, its nodes.
_PEER_NAMES = ("ansible_host", "sglang_host", "sglang_port", "sglang_api_key", "sglang_nodes", "sglang_dist_init_port",
               "group_names")


def _others(hostvars, inventory_hosts):
    """inputs.Others over hostvars: a host's variables read once each, as plain values (a broken template there is
    that host's own refusal, so it is left out here)."""
    cache = {}

    def peer(name):
        if name not in cache:
            cache[name] = {}
            if isinstance(name, str) and name in inventory_hosts:
                source = hostvars[name]
                for key in _PEER_NAMES:
                    if key in source:
                        try:
                            cache[name][key] = plain(source[key])
                        except AnsibleError:
                            continue
        return cache[name]
    return inputs.Others(inventory_hosts, peer)


def _extra_vars(hostvars):
    manager = getattr(hostvars, "_variable_manager", None)
    return manager.extra_vars if manager is not None else load_extra_vars(DataLoader())


def _outside(host, hostvars, names, extra_vars):
    """The sglang role's run facts among `names` (what this host's task sees) that come from outside the role: every
    one -e gives (extra vars beat set_fact, so it would replace the role's own), and every one that no set_fact or
    register of this run has set (the inventory's, a play's). The role's own facts are the variable manager's
    non-persistent facts (ansible-core keeps set_fact and register there: VariableManager.set_nonpersistent_facts);
    where that store cannot be read (hostvars that are not Ansible's), a name is outside when present, which is
    right for the check phase, the first play of a run. tests/integration/test_check_phase.py runs both through
    ansible-playbook."""
    run_facts = inputs.roles_at(_ROLES).run_facts
    given = {name for name in names if name in run_facts}
    manager = getattr(hostvars, "_variable_manager", None)
    own = getattr(manager, "_nonpersistent_fact_cache", None)
    own = set(own.get(host, {})) if own is not None else set()
    return {name for name in given if name in extra_vars or name not in own}


def check_hosts(hosts, hostvars, groups=None):
    """Every refusal for the run's hosts (per host, then across them), in one list.

    groups: the inventory's groups (`groups`): every inventory host, and the order of sglang_servers, the hosts that
    site.yml's deploy play batches with sglang_serial (not the run's routers)."""
    groups = groups or {}
    roles = inputs.roles_at(_ROLES)
    hosts = list(hosts)
    plain, refusals = {}, []
    extra_vars = _extra_vars(hostvars)
    others = _others(hostvars, set(groups.get("all") or hosts))
    for host in hosts:
        variables, broken = _variables(host, hostvars)
        plain[host] = variables
        refusals += broken or inputs.host_refusals(
            host, variables, variables["group_names"], roles, sglang_kvplan.rules_for, others=others,
            outside=_outside(host, hostvars, list(hostvars[host]), extra_vars))
    deploy = fleet.play_hosts(hosts, groups.get("sglang_servers") or [])
    refusals += fleet.serial_refusals(hosts, plain, extra_vars, deploy)
    refusals += fleet.node_refusals(hosts, plain, set(groups.get("all") or hosts))
    return refusals


def check_host(host, hostvars, group="sglang_servers", knobs=None, seen=None, inventory_hosts=None):
    """One host's refusals, as the check phase makes them, for a role used without it (its own input check runs
    this on every run: roles/sglang/tasks/inputs.yml, roles/sglang_router/tasks/assert.yml). The host is taken to be
    in `group`, whatever the inventory says: a playbook of the operator's own may run the role anywhere.
    knobs: the role's knobs with its defaults applied, so that the values the role will use are the ones checked,
    every rule included; the other role-prefixed names come from hostvars (a misspelled one is refused by name).
    Without knobs the values are left to the role's own check.
    seen: the names the role's task sees (query('varnames', '^sglang_'): the play's vars too); default the host's.
    inventory_hosts: every inventory host (groups['all']), for a router's workers; default hostvars' hosts."""
    variables, broken = _variables(host, hostvars, knobs or ())
    variables.update(knobs or {})
    groups = set(variables["group_names"]) | {group}
    names = list(hostvars[host]) + list(seen or [])
    others = _others(hostvars, set(inventory_hosts if inventory_hosts is not None else hostvars))
    extra_vars = _extra_vars(hostvars)
    return inputs.private_extra_var_refusals(host, extra_vars) + (
        broken or inputs.host_refusals(host, variables, groups, inputs.roles_at(_ROLES), sglang_kvplan.rules_for,
                                       with_values=knobs is not None, others=others,
                                       outside=_outside(host, hostvars, names, extra_vars)))


def check_extra_vars(hostvars):
    """The run's refusals of -e names with a leading _ (check.yml's first task, inline: a fact this play sets could
    itself be replaced by -e)."""
    return inputs.private_extra_var_refusals("-e", _extra_vars(hostvars))


def plan_knobs(ignored=None):
    """The knobs plan.yml hands to sglang_plan_host (planspec.KNOBS)."""
    return list(planspec.KNOBS)


def plan_hosts(hosts, hostvars):
    """{host: plan_host(...)} for every SGLang server host of a run, from the inventory and the role's
    defaults (the check phase: one call for the whole run)."""
    roles = inputs.roles_at(_ROLES)
    hostvars = Once(hostvars)
    out = {}
    for host in hosts:
        source = hostvars[host]
        if "sglang_servers" not in source.get("group_names", []):
            continue
        knobs = {name: source[name] if name in source else roles.default(name) for name in planspec.KNOBS}
        nodes = knobs.get("sglang_nodes") or [host]
        known = [n for n in nodes if n in hostvars and planspec.node_inputs(
            n, knobs if n == host else hostvars[n], hostvars[n].get("nvidia_gpu"))["gpu_memory_mib"] not in (None, "")]
        short = planspec.gpu_count_refusals(host, knobs, [planspec.node_inputs(
            n, {}, hostvars[n].get("nvidia_gpu") if n in hostvars else None) for n in nodes])
        if short:  # a count the inventory (or a fact cache) holds refuses even a plan the memory cannot make yet
            out[host] = {"error": " ".join(short)}
            continue
        if len(known) < len(nodes):  # a new host: nothing knows its GPUs until preflight reads them
            out[host] = {"skipped": "%s: planned once preflight has read the GPUs (no sglang_gpu_memory_mib and no "
                                    "stored facts)" % host}
            continue
        calibrations, notes = _kept(host, source, nodes, roles)
        unread = planspec.model_unread(host, knobs, calibrated=bool(calibrations.get(host)))
        if unread:  # the role reads the checkpoint (config.json, size) on the host, and plans then
            out[host] = {"skipped": unread}
            continue
        out[host] = plan_host(host, hostvars, knobs, calibrations=calibrations)
        if notes and "plan" in out[host]:
            out[host]["plan"] = dict(out[host]["plan"], assumptions=out[host]["plan"]["assumptions"] + notes)
    return out


def _kept(host, source, nodes, roles):
    """{node: the calibration its last run kept on the controller} for the setup this host's knobs name, and what
    the plan should say of it (lib/sglang_checks/kept.py): the role on each node plans from the same numbers."""
    setup = {"sglang_" + name: source["sglang_" + name] if "sglang_" + name in source
             else roles.default("sglang_" + name) for name in kept.SETUP_KNOBS}
    root = (source.get("sglang_report_dir") if "sglang_report_dir" in source else None) or _REPORTS
    calibrations, notes = {}, []
    for node in nodes:
        calibration, note = kept.read(root, node, setup)
        if calibration:
            calibrations[node] = calibration
        if note:
            notes.append("%s: %s" % (node, note) if len(nodes) > 1 else note)
    return calibrations, notes


def plan_pictures(plans, hostvars):
    """One entry per server (its rank-0 host) with a plan: {host, server, title, key, facts}. `key` is the same
    for servers whose plan and measured boots are the same, so make plan draws each distinct plan once."""
    hostvars, out = Once(hostvars), []
    for host, planned in plans.items():
        if "plan" not in planned or planned["node"]["node_rank"] != 0:
            continue
        node, plan = planned["node"], planned["plan"]
        server = hostvars[host].get("sglang_server_name") or node["rank0"]
        title = server + (" (nodes %s)" % ", ".join(node["nodes"]) if node["nnodes"] > 1 else "")
        boots = list(hostvars[host].get("sglang_measured_boots") or [])
        facts = {"host": server, "title": title, "sglang_kv_spec": planned["spec"], "sglang_kv_plan_result": plan,
                 "sglang_measured_boots": boots}
        key = json.dumps([plan["explanation"], plan["args"], plan["assumptions"], boots], sort_keys=True, default=str)
        out.append({"host": host, "server": server, "title": title, "key": key, "facts": facts})
    return out


def plan_summary(servers, pictures, plans):
    """{lines, disagree} for make plan: each server's plan, flags, picture and measured boots, then the hosts not
    planned yet; `disagree` holds one sentence per server whose calibration does not predict its boots.
    pictures: the registered results of drawing each distinct plan (stdout: sglang_report plan's JSON)."""
    drawn = {r["item"]["key"]: json.loads(r["stdout"]) for r in pictures}
    lines, disagree = [], []
    for server in servers:
        plan, picture = server["facts"]["sglang_kv_plan_result"], drawn[server["key"]]
        lines += ["%s: %s" % (server["title"], plan["explanation"]), "flags: " + " ".join(plan["args"])]
        lines += ["trade-off: " + line for line in plan.get("tradeoff") or []]  # the seed's weighing, in its terms
        lines += ["picture: " + picture["picture"]] + picture["lines"] + list(plan["assumptions"])
        bad = [b for b in picture["boots"] if b["agrees"] is False]
        if bad:
            disagree.append(
                "%s: the calibration (P %s GiB, A %s GiB) does not predict the boot(s) measured on this host: %s; "
                "re-measure sglang_calibration, or drop sglang_measured_boots entries that came from another setup "
                "(model, tp, SGLang release, KV dtype)."
                % (server["title"], plan["pre_load_avail_gib"], plan["post_load_avail_gib"],
                   "; ".join("f %s gave %s tokens, the formula %s" % (b["mem_fraction_static"], b["pool_tokens"],
                                                                      b["predicted"]) for b in bad)))
    lines += [p["skipped"] for p in plans.values() if "skipped" in p]
    return {"lines": lines, "disagree": disagree}


def gpus_per_node(tp_size, pp_size=1, dp_size=1, enable_dp_attention=False, nnodes=1, extra_args=()):
    """GPUs SGLang takes on each node of a server (planspec.gpus_per_node): preflight and the runtime check."""
    return planspec.gpus_per_node(tp_size, pp_size, dp_size, enable_dp_attention, nnodes, extra_args)


class FilterModule:
    def filters(self):
        return {
            "sglang_check_hosts": check_hosts,
            "sglang_check_host": check_host,
            "sglang_check_extra_vars": check_extra_vars,
            "sglang_plan_host": plan_host,
            "sglang_plan_hosts": plan_hosts,
            "sglang_plan_knobs": plan_knobs,
            "sglang_plan_pictures": plan_pictures,
            "sglang_plan_summary": plan_summary,
            "sglang_url_host": urls.url_host,
            "sglang_gpus_per_node": gpus_per_node,
            "sglang_local_host": urls.local_host,
        }
