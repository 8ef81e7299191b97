"""The check phase's filter: every host of a run checked on the controller, with no connection.

  {{ ansible_play_hosts_all | sglang_check_hosts(hostvars, groups['all']) }}   every refusal, one sentence each
  {{ inventory_hostname | sglang_check_host(hostvars) }}                     one host's own (a role checks itself)
  {{ sglang_host | sglang_local_host }}     where a check on the host reaches a server listening there ([::1])
  {{ ansible_host | sglang_url_host }}      the host part of a URL (an IPv6 address in brackets)

The checks are plain Python in lib/sglang_checks/ (tested without Ansible); this layer only reads hostvars.
"""

import os
import sys

from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader
from ansible.utils.vars import load_extra_vars

# As in sglang_kv.py: Ansible loads filter plugins by path; the checks live in lib/.
_LIB = os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib")
sys.path.insert(0, _LIB)

import sglang_kvplan  # noqa: E402
from sglang_checks import fleet, inputs, urls  # noqa: E402

_ROLES = os.path.realpath(os.path.join(_LIB, os.pardir, "roles"))


def _variables(host, hostvars):
    """The host's role-prefixed variables as plain values (each templated once; a broken template is refused)."""
    source = hostvars[host]
    out, broken = {}, []
    for name in list(source):
        if not isinstance(name, str) or not name.startswith(inputs.PREFIXES):
            continue
        try:
            out[name] = source[name]
        except AnsibleError as error:
            broken.append("%s: %s does not template: %s" % (host, name, str(error).splitlines()[0]))
    out["group_names"] = list(source.get("group_names", []))
    return out, broken


def check_hosts(hosts, hostvars, inventory_hosts=None):
    """Every refusal for the run's hosts (per host, then across them), in one list."""
    roles = inputs.roles_at(_ROLES)
    hosts = list(hosts)
    plain, refusals = {}, []
    for host in hosts:
        variables, broken = _variables(host, hostvars)
        plain[host] = variables
        refusals += broken or inputs.host_refusals(host, variables, variables["group_names"], roles,
                                                   sglang_kvplan.rules_for)
    extra_vars = load_extra_vars(DataLoader())
    refusals += fleet.serial_refusals(hosts, plain, extra_vars)
    refusals += fleet.node_refusals(hosts, plain, set(inventory_hosts or hosts))
    return refusals


def check_host(host, hostvars, group="sglang_servers"):
    """One host's refusals, as a role checks itself (the host is taken to be in `group`, whatever the inventory
    says: a playbook of the operator's own may run the role anywhere); the check phase does every host."""
    variables, broken = _variables(host, hostvars)
    groups = set(variables["group_names"]) | {group}
    return broken or inputs.host_refusals(host, variables, groups, inputs.roles_at(_ROLES), sglang_kvplan.rules_for)


class FilterModule:
    def filters(self):
        return {
            "sglang_check_hosts": check_hosts,
            "sglang_check_host": check_host,
            "sglang_url_host": urls.url_host,
            "sglang_local_host": urls.local_host,
        }
