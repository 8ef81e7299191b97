"""Ansible filter over lib/sglang_state/ (plain Python, tested without Ansible).

  {{ nodes | sglang_nodes_refusals(server, inventory_hostname, ansible_play_batch, versions, checkpoints) }}
      a server across nodes before anything restarts: every node in this batch, the same code and weights on each
"""

import os
import sys

# Ansible loads filter plugins by path, not as a package: the decisions live in lib/, put on the path here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

from sglang_state.nodes import nodes_refusals  # noqa: E402


class FilterModule:
    def filters(self):
        return {"sglang_nodes_refusals": nodes_refusals}
