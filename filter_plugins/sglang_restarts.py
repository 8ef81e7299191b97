"""Ansible filters over lib/sglang_state/restarts.py (plain Python, tested without Ansible): roles/sglang/tasks/
deploy.yml performs what they decide.

  {{ files_changed | sglang_deploy_changes(changed_this_run, run_backup, before) }}
      {files_changed, changed_this_run, run_backup} after rendering the service's files
  {{ nodes_changed | sglang_peer_restart(inventory_hostname, multinode, changed) }}
      {restart, changed}: whether this node restarts because other nodes of its server changed
  {{ boots | sglang_server_boot(rank0, multinode, own_boot) }}
      the server's boot: the least-free node's P, A and headroom across nodes
"""

import os
import sys

# Ansible loads filter plugins by path, not as a package: the decisions live in lib/, put on the path here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

import sglang_state  # noqa: E402


def deploy_changes(files_changed, changed_this_run, run_backup, before):
    return sglang_state.deploy_changes(files_changed, changed_this_run, run_backup, dict(before or {}))


def peer_restart(nodes_changed, host, multinode, changed):
    return sglang_state.peer_restart(dict(nodes_changed or {}), host, multinode, changed)


def server_boot(boots, rank0, multinode, own_boot):
    return sglang_state.server_boot(dict(boots or {}), rank0, multinode, own_boot)


class FilterModule:
    def filters(self):
        return {"sglang_deploy_changes": deploy_changes, "sglang_peer_restart": peer_restart,
                "sglang_server_boot": server_boot}
