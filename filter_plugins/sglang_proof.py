"""Ansible filter over lib/sglang_state/ (plain Python, tested without Ansible).

  {{ own_level | sglang_proof_server_level(nodes_levels) }}
      the proof the server needs: the full one when any of its nodes' levels is full, else this node's
      (prove.yml gathers the nodes' levels that the deploy transaction's decide phase registered)
  {{ nodes | sglang_nodes_refusals(server, inventory_hostname, ansible_play_batch, versions, checkpoints) }}
      a server across nodes before anything restarts: every node in this batch, the same code and weights on each
"""

import os
import sys

# Ansible loads filter plugins by path, not as a package: the decisions live in lib/, put on the path here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

import sglang_state  # noqa: E402
from sglang_state.nodes import nodes_refusals  # noqa: E402


def proof_server_level(own, nodes_levels):
    return sglang_state.server_proof_level(dict(own), list(nodes_levels or []))


class FilterModule:
    def filters(self):
        return {"sglang_proof_server_level": proof_server_level, "sglang_nodes_refusals": nodes_refusals}
