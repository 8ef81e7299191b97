"""One host's plan from its knobs and its server's nodes: the check phase (filter_plugins/sglang_check_phase.py), the
role's plan (plan.yml) and the deploy transaction's re-plan from a measured boot (action_plugins/sglang_deploy.py)
call this one function."""

from collections.abc import Mapping

import sglang_kvplan

from sglang_checks import drafter, planspec


def plain(value):
    """A templated value as plain Python: dicts, lists, str, int, float. hostvars hand out lazy containers that
    carry the host's whole variable context (every group's host list among it); ansible-core's validator deep-copies
    its input, so each lazy value would copy that context, a cost that grows with the inventory for every host."""
    if isinstance(value, Mapping):
        return {plain(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    for kind in (str, int, float):  # a tagged str/int/float (its origin) as the plain type
        if isinstance(value, kind):
            return kind(value)
    return value


class Plain(Mapping):
    """One host's variables, each templated once on first use and handed out as a plain value (plain)."""

    def __init__(self, source):
        self._source, self._seen = source, {}

    def __getitem__(self, name):
        if name not in self._seen:
            self._seen[name] = plain(self._source[name])
        return self._seen[name]

    def __iter__(self):
        return iter(self._source)

    def __len__(self):
        return len(self._source)

    def __contains__(self, name):
        return name in self._source


class Once:
    """hostvars read once per host within one call (each hostvars[host] builds that host's whole variable set),
    their values plain (plain)."""

    def __init__(self, hostvars):
        self._hostvars, self._seen = hostvars, {}

    def __contains__(self, host):
        return host in self._seen or host in self._hostvars

    def __getitem__(self, host):
        if host not in self._seen:
            self._seen[host] = Plain(self._hostvars[host])
        return self._seen[host]


def plan_host(host, hostvars, knobs, measured=None, gpus=None, calibrations=None):
    """{spec, plan, node, server} for `host` (lib/sglang_checks/planspec.py), or {error: the planner's sentence}.

    knobs: this host's planner knobs, defaults applied (planspec.KNOBS); the other nodes' knobs are their
    inventory's (hostvars). gpus / calibrations: {node: nvidia_gpu} and {node: the calibration in use} for the
    server's nodes as the role sees them (plan.yml gathers them; a re-plan passes this host's measured
    calibration); without them (the check phase) the GPU facts are the inventory's and the calibration each
    node's sglang_calibration."""
    try:
        nodes = knobs.get("sglang_nodes") or [host]
        gpus, calibrations = gpus or {}, calibrations or {}
        per_node = [planspec.node_inputs(node, knobs if node == host else hostvars[node] if node in hostvars else {},
                                         gpus.get(node, _facts(hostvars, node).get("nvidia_gpu")),
                                         calibrations.get(node)) for node in nodes]
        rank0 = nodes[0]
        address = hostvars[rank0].get("ansible_host", rank0) if rank0 in hostvars else rank0
        spec, server, node = planspec.spec(host, knobs, per_node, address, measured)
        # a drafter of another model, refused by name before any plan (drafter.py: what SGLang 0.5.23 requires)
        mismatch = drafter.refusal(spec)
        if mismatch:
            return {"error": "%s: %s" % (host, mismatch)}
        # after spec(): its node placement has named a tp/pp that is not a GPU count, or nodes that do not split it
        short = planspec.gpu_count_refusals(host, knobs, per_node)
        if short:
            return {"error": " ".join(short)}
        plan = planspec.plan(spec, server)
        load_args, load_notes = planspec.loader_args(knobs)
        return {"spec": spec, "plan": dict(plan, args=plan["args"] + load_args,
                                           assumptions=plan["assumptions"] + load_notes
                                           + _count_unknown(knobs, per_node)),
                "node": node, "server": server}
    except sglang_kvplan.KVPlanError as error:
        return {"error": "%s: %s" % (host, error)}


def _count_unknown(knobs, per_node):
    """The plan's word on nodes whose GPU count nothing knows yet (make plan connects to nothing)."""
    missing = [n["node"] for n in per_node if n.get("gpu_count") in (None, "")]
    if not missing:
        return []
    needed = planspec.gpus_needed(knobs, len(per_node))
    if needed is None:
        return []
    # One node is not named: the same plan on many hosts is one picture for make plan (plan_pictures' key).
    where = " on %s" % ", ".join(missing) if len(per_node) > 1 else ""
    return ["GPU count not known%s (no nvidia_gpu facts yet): this plan takes %d GPU(s) on each node; preflight "
            "checks the count before any role changes the host" % (where, needed)]


def _facts(hostvars, host):
    return hostvars[host] if host in hostvars else {}
