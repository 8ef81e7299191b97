"""Ansible filter over lib/sglang_state/ (plain Python, tested without Ansible).

  {{ own_level | sglang_proof_server_level(nodes_levels) }}
      the proof the server needs: the full one when any of its nodes' levels is full, else this node's
      (prove.yml gathers the nodes' levels that the deploy transaction's decide phase registered)
  {{ nodes | sglang_nodes_refusals(server, inventory_hostname, ansible_play_batch, versions, checkpoints) }}
      a server across nodes before anything restarts: every node in this batch, the same code and weights on each
  {{ nodes | sglang_peers_results(hostvars, 'sglang_deploy', 'the deploy phase') }}
      {node: its register} for the nodes of a server; a node without it fails the task, named (never read as {})
"""

import os
import sys

# Ansible loads filter plugins by path, not as a package: the decisions live in lib/, put on the path here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

import sglang_state  # noqa: E402
from ansible.errors import AnsibleFilterError  # noqa: E402
from sglang_state.nodes import nodes_refusals, peers_results  # noqa: E402


def proof_server_level(own, nodes_levels):
    return sglang_state.server_proof_level(dict(own), list(nodes_levels or []))


def gather_peers(nodes, hostvars, name, step):
    """sglang_peers_results: {node: its register `name`} for the nodes of a server, read from hostvars (the play's
    registers, never its vars); a node without one is refused naming it and `step` (nodes.peers_results)."""
    nodes = list(nodes or [])
    found = {node: hostvars[node][name] for node in nodes if node in hostvars and name in hostvars[node]}
    try:
        return peers_results(nodes, found, name, step)
    except ValueError as error:
        raise AnsibleFilterError(str(error)) from None


class FilterModule:
    def filters(self):
        return {"sglang_proof_server_level": proof_server_level, "sglang_nodes_refusals": nodes_refusals,
                "sglang_peers_results": gather_peers}
