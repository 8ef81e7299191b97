"""Ansible filters over lib/sglang_state/restarts.py (plain Python, tested without Ansible): roles/sglang/tasks/
deploy.yml performs what they decide.

  {{ files_changed | sglang_deploy_changes(changed_this_run, run_backup, before) }}
      {files_changed, changed_this_run, run_backup} after rendering the service's files
  {{ nodes | sglang_peer_restart(inventory_hostname, multinode, changed, hostvars) }}
      {restart, changed}: whether this node restarts because other nodes of its server changed
  {{ nodes | sglang_server_boot(rank0, multinode, own_boot, hostvars) }}
      the server's boot: the least-free node's P, A and headroom across nodes
"""

import os
import sys

# Ansible loads filter plugins by path, not as a package: the decisions live in lib/, put on the path here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

import sglang_state  # noqa: E402


def deploy_changes(files_changed, changed_this_run, run_backup, before):
    return sglang_state.deploy_changes(files_changed, changed_this_run, run_backup, dict(before or {}))


def peer_restart(nodes, host, multinode, changed, hostvars):
    return sglang_state.peer_restart(list(nodes or []), host, bool(multinode), bool(changed), hostvars)


def server_boot(nodes, rank0, multinode, own_boot, hostvars):
    own = dict(own_boot) if isinstance(own_boot, dict) else None
    return sglang_state.server_boot(list(nodes or []), rank0, bool(multinode), own, hostvars)


class FilterModule:
    def filters(self):
        return {"sglang_deploy_changes": deploy_changes, "sglang_peer_restart": peer_restart,
                "sglang_server_boot": server_boot}
