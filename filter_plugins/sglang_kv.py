"""Ansible filters over the KV-pool planner in lib/sglang_kvplan/ (plain Python, tested without Ansible).

  {{ spec | sglang_kv_cell_bytes }}          KV bytes per token per GPU
  {{ spec | sglang_kv_pool_tokens }}         predicted max_total_num_tokens at spec.mem_fraction_static
  {{ spec | sglang_kv_pool_tokens(0.94) }}   ... at another fraction
  {{ spec | sglang_kv_plan }}                the flags for spec.context_target
  {{ spec | sglang_kv_calibration(boot) }}   P and A from a boot's log lines (see sglang_kvplan.calibrate)
  {{ version | sglang_release_rules(pool_rules) }}  what the planner knows of that SGLang release (releases.py)
  {{ sglang_nodes | sglang_kv_server_node(inventory_hostname[, tp, pp]) }}  {nnodes, node_rank, nodes, rank0}
  {{ per_node | sglang_kv_server_inputs }}   the least GPU memory and calibration over a server's nodes (server.py)

The spec's keys are the knobs without `sglang_` (docs/variables.md); docs/planner.md describes the filters.
"""

import os
import sys

from ansible.errors import AnsibleFilterError

# Ansible loads filter plugins by path, not as a package, and would try every .py file under
# filter_plugins/ as a plugin: the planner lives in lib/ and is put on the path here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

import sglang_kvplan


def _wrap(function):
    def filter_function(*args):
        try:
            return function(*args)
        except sglang_kvplan.KVPlanError as error:
            raise AnsibleFilterError(str(error)) from None

    filter_function.__name__ = function.__name__
    filter_function.__doc__ = function.__doc__
    return filter_function


def release_rules(version, pool_rules=None):
    """{name, torch, torch_cuda, min_driver_branch, kv_cache_dtypes, speculative_algorithms, ...}."""
    name, rules = sglang_kvplan.rules_for(version, pool_rules or None)
    return dict(rules, name=name, kv_cache_dtypes=list(rules["kv_cache_dtypes"]),
                speculative_algorithms=list(rules["speculative_algorithms"]))


class FilterModule:
    def filters(self):
        return {
            "sglang_kv_cell_bytes": _wrap(sglang_kvplan.cell_bytes),
            "sglang_kv_pool_tokens": _wrap(sglang_kvplan.pool_tokens),
            "sglang_kv_plan": _wrap(sglang_kvplan.plan),
            "sglang_kv_calibration": _wrap(sglang_kvplan.calibrate),
            "sglang_release_rules": _wrap(release_rules),
            "sglang_kv_server_node": _wrap(sglang_kvplan.node_placement),
            "sglang_kv_server_inputs": _wrap(sglang_kvplan.server_inputs),
        }
