"""One host's variables checked against what the roles accept, before anything connects.

The roles' own meta/argument_specs.yml are the one source of what each knob is: a name with a role's prefix
that no role (and no playbook) knows is refused with the closest known name, and every known one is checked
against its spec with ansible-core's own validator, then against what may reach a file, path, unit or argv
(values.py). The release rules (the driver branch and CUDA toolkit the
release's torch needs) and the multi-node timing rule come after. Each refusal is one sentence that names the
host, the variable, the value and the fix; secrets are never quoted.
"""

import difflib
import functools
import math
import os
import re

import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from sglang_checks import router, service, values

# The roles a host of each group runs (site.yml), in play order.
ROLES_BY_GROUP = {
    "sglang_servers": ("preflight", "nvidia_driver", "cuda", "sglang"),
    "sglang_routers": ("sglang_router",),
}
# Every role's variables carry its prefix; sglang_router_ names are the router role's, checked with the rest.
PREFIXES = ("sglang_", "nvidia_driver_", "cuda_", "preflight_")
# The playbooks' own switches (given with -e), which no role's specs list.
PLAYBOOK_VARIABLES = {
    "sglang_serial": "site.yml's batch size",
    "sglang_rollback_to": "playbooks/rollback.yml's entry",
    "sglang_rollback_list": "playbooks/rollback.yml's listing switch",
    "sglang_monitoring_dir": "playbooks/monitoring.yml's folder on the controller",
    "sglang_monitoring_host": "playbooks/monitoring.yml's Prometheus host",
    "sglang_monitoring_remote_dir": "playbooks/monitoring.yml's folder on the Prometheus host",
    "sglang_monitoring_scrape_interval_s": "playbooks/monitoring.yml's scrape interval",
    "sglang_levers_prometheus_url": "playbooks/levers.yml's Prometheus",
    "sglang_levers_window": "playbooks/levers.yml's window of traffic",
    "sglang_levers_step_s": "playbooks/levers.yml's sampling step",
}
SECRET_WORDS = ("api_key", "token", "password", "secret")
# Names Ansible itself sets on every host: never a misspelled knob.
ANSIBLE_NAMES = frozenset({"group_names", "groups", "hostvars", "inventory_hostname", "inventory_hostname_short",
                           "inventory_dir", "inventory_file", "playbook_dir", "play_hosts", "omit", "environment",
                           "role_names", "ansible_play_hosts", "ansible_play_batch"})
# How close (difflib's ratio) a name must be to a known one to be taken for its misspelling when it lacks the
# roles' prefixes (sglan_tp_size, nvidia_drivr_branch): the operator's other variables must not be refused.
NEAR = 0.85


class Roles:
    """The argument specs, defaults and run-time fact names of the roles under `roles_dir`."""

    def __init__(self, roles_dir):
        self.roles_dir = roles_dir
        self.specs = {}
        self.defaults = {}
        self._validators = {}
        for role in sorted(os.listdir(roles_dir)):
            specs_file = os.path.join(roles_dir, role, "meta", "argument_specs.yml")
            if not os.path.isfile(specs_file):
                continue
            options = {}
            for entry in (_load_yaml(specs_file).get("argument_specs") or {}).values():
                options.update(entry.get("options") or {})
            self.specs[role] = options
            self.defaults[role] = _load_yaml(os.path.join(roles_dir, role, "defaults", "main.yml"))
        # Facts the sglang role sets while it runs (sglang_*, but no knobs): vars/main.yml lists them.
        role_vars = _load_yaml(os.path.join(roles_dir, "sglang", "vars", "main.yml"))
        self.run_facts = set(role_vars.get("sglang_run_facts") or [])
        self.known = set(PLAYBOOK_VARIABLES) | self.run_facts
        for options in self.specs.values():
            self.known |= set(options)

    def validator(self, role, names):
        """ansible-core's validator for these options of the role (built once: a fleet repeats the same names)."""
        key = (role, names)
        if key not in self._validators:
            self._validators[key] = ArgumentSpecValidator(_without_defaults({n: self.specs[role][n] for n in names}))
        return self._validators[key]

    def default(self, name):
        for defaults in self.defaults.values():
            if name in defaults:
                return defaults[name]
        return None


@functools.lru_cache(maxsize=8)
def roles_at(roles_dir):
    return Roles(roles_dir)


def _load_yaml(path):
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def is_secret(name):
    return any(word in name for word in SECRET_WORDS)


def is_vaulted(value):
    """Whether a value came from the vault (ansible-vault encrypt_string or an encrypted file): never shown."""
    try:
        from ansible.parsing.vault import VaultHelper
        return VaultHelper.get_ciphertext(value, with_tags=False) is not None
    except Exception:  # an older ansible-core without data tags: is_secret's names still hide the usual ones
        return False


def shown(name, value):
    """A value as a refusal quotes it: secrets and vaulted values masked, long values cut."""
    if is_secret(name) or is_vaulted(value):
        return "(a secret, not shown)"
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def kind_of(value):
    """What a refusal says of a value it does not show: its type (an unknown name may be a misspelled secret)."""
    from collections.abc import Mapping, Sequence

    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, Sequence):
        return "a list"
    return "null" if value is None else "a %s" % type(value).__name__


def _normal(name):
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def misspelling_of(name, known):
    """The known name `name` misspells, or None. A name with a role's prefix is always a candidate (the prefix is
    the roles'); any other name only when, lower-cased with - and spaces as _, it is a known name, a known name
    without its prefix (tp_size), or within NEAR of one (sglan_tp_size, prefligth_weights_free_gib)."""
    return _misspelling(name, frozenset(known))


@functools.lru_cache(maxsize=4096)
def _misspelling(name, known):
    normal = _normal(name)
    by_normal = {_normal(k): k for k in known}
    if normal in by_normal:
        return by_normal[normal]
    bare = {}
    for k in known:
        for prefix in sorted(PREFIXES, key=len, reverse=True):
            if k.startswith(prefix) and "_" in k[len(prefix):]:
                bare.setdefault(k[len(prefix):], k)
                break
    if normal in bare:
        return bare[normal]
    close = difflib.get_close_matches(normal, sorted(by_normal), n=1, cutoff=NEAR)
    return by_normal[close[0]] if close else None


def is_checked_name(name, known):
    """Whether the check phase reads this host variable: a role-prefixed name, or the misspelling of a known one."""
    if not isinstance(name, str) or name in ANSIBLE_NAMES or name.startswith(("ansible_", "_")):
        return False  # Ansible's names, and private ones (_sglang_*: a role's or a test play's own facts)
    return name.startswith(PREFIXES) or misspelling_of(name, known) is not None


def roles_of(groups):
    roles = []
    for group, group_roles in ROLES_BY_GROUP.items():
        if group in groups:
            roles.extend(r for r in group_roles if r not in roles)
    return roles


def unknown_variables(host, variables, roles):
    """A refusal per name that no role or playbook reads and that is a role's (its prefix) or a known name's
    misspelling (any prefix, case or separators), with the closest known name. The value is never shown, only its
    type: an unknown name may be a misspelled secret (sglang_api_kye), which no list of secret words can catch."""
    refusals = []
    for name in sorted(n for n in variables if isinstance(n, str)):
        if name in roles.known or not is_checked_name(name, roles.known):
            continue
        close = misspelling_of(name, roles.known)
        if close is None:
            near = difflib.get_close_matches(name, sorted(roles.known), n=1, cutoff=0.75)
            close = near[0] if near else None
        hint = "Did you mean %s? " % close if close else ""
        if close and _normal(close) == _normal(name):
            hint = "Did you mean %s (Ansible's names are case-sensitive, and - is not _)? " % close
        refusals.append("%s: unknown variable %s (%s, not shown): no role or playbook reads it, so it would be "
                        "ignored. %sThe known names are in docs/variables.md."
                        % (host, name, kind_of(variables[name]), hint))
    return refusals


def _without_defaults(options):
    """A spec that checks only what is given: defaults (some are templates) and 'required' left to the roles."""
    spec = {}
    for name, option in options.items():
        option = {k: v for k, v in option.items()
                  if k not in ("default", "required", "description", "version_added")}
        if "options" in option:
            option["options"] = _without_defaults(option["options"])
        spec[name] = option
    return spec


def spec_refusals(host, variables, roles, role_names):
    """A refusal per value that its role's argument spec rejects (type, choices, elements, sub-options)."""
    refusals = []
    for role in role_names:
        options = roles.specs.get(role, {})
        given = {name: variables[name] for name in options if name in variables and variables[name] is not None}
        for name in [n for n in given if options[n].get("type") in ("int", "float") and not_finite(given[n])]:
            # ansible-core's int check turns "inf" into an OverflowError that names no variable
            refusals.append("%s: %s is %s, which is not a finite number. Give a %s; roles/%s/meta/argument_specs.yml "
                            "describes it." % (host, name, shown(name, given.pop(name)),
                                               "whole number" if options[name]["type"] == "int" else "number", role))
        for name in [n for n in given if _not_a_container(options[n].get("type"), given[n])]:
            # ansible-core's words ("is of type list and we were unable to convert to dict: <class 'list'> ...")
            # name a Python class, not the shape to write
            shape = options[name]["type"]
            refusals.append("%s: %s is %s (%s), not a %s. Write it as %s; roles/%s/meta/argument_specs.yml "
                            "describes it." % (host, name, kind_of(given[name]), shown(name, given.pop(name)),
                                               "mapping" if shape == "dict" else "list",
                                               _SHAPES[shape] % (name, name), role))
        if not given:
            continue
        result = roles.validator(role, tuple(sorted(given))).validate(given)
        for error in result.errors:
            message = str(error)
            for name in given:
                if is_secret(name) and isinstance(given[name], str) and given[name]:
                    message = message.replace(given[name], "********")
            names = [n for n in given if n in message] or ["a %s variable" % role]
            refusals.append("%s: %s (role %s): %s. Fix it in the inventory or the -e value; %s describes it."
                            % (host, names[0], role, message.rstrip("."),
                               "roles/%s/meta/argument_specs.yml" % role))
    return refusals


_SHAPES = {"dict": "one name: value per line under %s: in YAML, or -e '{\"%s\": {\"NAME\": \"value\"}}'",
           "list": "one '- item' per line under %s: in YAML, or -e '{\"%s\": [\"item\"]}'"}


def _not_a_container(kind, value):
    """A mapping or list option given something ansible-core would not convert to it (text it may split: left to
    its validator and values.py)."""
    from collections.abc import Mapping

    if kind == "dict":
        return not isinstance(value, Mapping | str)
    if kind == "list":
        return isinstance(value, Mapping)
    return False


def not_finite(value):
    """inf, nan or a number past a float (1e999), as a float or as text."""
    if isinstance(value, bool) or not isinstance(value, str | float | int):
        return False
    try:
        return not math.isfinite(float(value))
    except (ValueError, OverflowError):
        return isinstance(value, int)  # an int too big for a float


def value(variables, roles, name):
    return variables[name] if name in variables else roles.default(name)


def release_refusals(host, variables, roles, rules_for):
    """The driver branch and CUDA toolkit the release's torch runs on (rules_for: sglang_kvplan.rules_for)."""
    version = value(variables, roles, "sglang_version")
    pool_rules = value(variables, roles, "sglang_pool_rules") or None
    try:
        rules_name, rules = rules_for(str(version), pool_rules)
    except ValueError as error:
        return ["%s: %s" % (host, error)]
    refusals = []
    branch = value(variables, roles, "nvidia_driver_branch")
    try:
        branch_number = int(str(branch))
    except ValueError:
        return ["%s: nvidia_driver_branch is %s: expected a driver branch number such as 580."
                % (host, shown("nvidia_driver_branch", branch))]
    if branch_number < rules["min_driver_branch"]:
        refusals.append(
            "%s: nvidia_driver_branch is %s, but SGLang %s (rules of %s) runs on torch %s built for CUDA %s, which "
            "needs driver branch %s or newer. Raise nvidia_driver_branch to %s, or pin an older sglang_version."
            % (host, branch, version, rules_name, rules["torch"], rules["torch_cuda"], rules["min_driver_branch"],
               rules["min_driver_branch"]))
    cuda = str(value(variables, roles, "cuda_version"))
    major = rules["torch_cuda"].split(".", maxsplit=1)[0]
    if value(variables, roles, "sglang_kernel_sources") and cuda.split(".", maxsplit=1)[0] != major:
        refusals.append(
            "%s: cuda_version is %s, but kernels built from source (sglang_kernel_sources) need the CUDA major of "
            "SGLang %s's torch (%s, CUDA %s). Set cuda_version to %s, or pin an older sglang_version."
            % (host, cuda, version, rules["torch"], rules["torch_cuda"], rules["torch_cuda"]))
    return refusals


def multinode_refusals(host, variables, roles):
    nodes = value(variables, roles, "sglang_nodes") or []
    if not isinstance(nodes, list) or len(nodes) < 2:
        return []
    dist, ready = value(variables, roles, "sglang_dist_timeout"), value(variables, roles, "sglang_ready_timeout")
    try:
        if int(dist) < int(ready):
            return []
    except (TypeError, ValueError):
        return []  # the argument specs name a non-number
    return ["%s: sglang_dist_timeout (%s s) must be shorter than sglang_ready_timeout (%s s): a node that never "
            "joins must end the boot with SGLang's own error before the readiness wait gives up without one. "
            "Lower sglang_dist_timeout or raise sglang_ready_timeout." % (host, dist, ready)]


def run_fact_refusals(host, names):
    """One sentence per run fact of the sglang role that comes from outside it (names: those the inventory, the play
    or -e sets; the Ansible layer tells them apart from the role's own set_fact and register)."""
    return ["%s: %s is the sglang role's own run fact (roles/sglang/vars/main.yml, sglang_run_facts): the role sets "
            "it while it runs, and one set from the inventory, the play or -e would stand in for what the role found "
            "(with -e over the role's own value: extra vars beat set_fact). Remove %s from the inventory, the play's "
            "vars and the command line." % (host, name, name) for name in sorted(names)]


def private_extra_var_refusals(where, extra_vars):
    """One sentence per name with a leading _ that -e gives: Ansible's extra vars beat every variable and fact of a
    play, so such a name would replace what a role or the check computes (-e _refusals=[] the check's own result)."""
    return ["%s: -e sets %s, a private name (a leading _): extra vars beat every variable and fact of a play, so it "
            "would replace what the roles and the check compute for themselves. Remove it from the command line; "
            "the knobs are in docs/variables.md." % (where, name)
            for name in sorted(n for n in extra_vars if isinstance(n, str) and n.startswith("_"))]


class Others:
    """What the checks that read other hosts need (router.py): the inventory's host names, and one host's variables
    as plain values ({} for a name the inventory does not have)."""

    def __init__(self, inventory_hosts, peer):
        self.inventory_hosts, self.peer = inventory_hosts, peer


def host_refusals(host, variables, groups, roles, rules_for, with_values=True, others=None, outside=()):
    """Every refusal for one host: unknown names, run facts given from outside (`outside`), the specs, then (when the
    values have their types) what they may reach (values.py; with_values False: a role that checks them itself,
    with its defaults), the rules, and a router's workers and ports (others: an Others; None skips them)."""
    role_names = roles_of(groups)
    typed = spec_refusals(host, variables, roles, role_names)
    refusals = values.host_name_refusals(host) + unknown_variables(host, variables, roles) + \
        run_fact_refusals(host, set(outside) & roles.run_facts) + typed
    if typed:
        return refusals
    if with_values and {"sglang", "sglang_router"} & set(role_names):
        refusals += values.refusals(host, {k: v for k, v in variables.items() if k != "group_names"},
                                    hidden={k for k, v in variables.items() if is_vaulted(v)})
    if "preflight" in role_names:
        refusals += values.preflight_refusals(host, variables)
    if "sglang_router" in role_names and others is not None:
        refusals += router.refusals(host, lambda name: value(variables, roles, name), others.inventory_hosts,
                                    others.peer, roles.default)
    if "sglang" in role_names:
        refusals += values.folder_refusals(host, {name: value(variables, roles, name) for name in values.FOLDERS}
                                           | {name: value(variables, roles, name) for name in (
                                               "sglang_speculative", "sglang_hf_token_file", "sglang_user")})
    if "sglang" in role_names:
        refusals += service.refusals(host, lambda name: value(variables, roles, name))
        refusals += release_refusals(host, variables, roles, rules_for)
        refusals += multinode_refusals(host, variables, roles)
    return refusals
