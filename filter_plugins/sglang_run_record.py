"""Ansible filter over lib/sglang_state/run_record.py: what this ansible-playbook run's phase actions kept, read by
the role where a task outside the transaction decides from it (plain Python, tested without Ansible).

  {{ _sglang_batch_nodes | sglang_run_results('deploy') }}
      {node: its result of the step} for the nodes of a server in this batch; a node without one is refused, named
"""

import os
import sys

from ansible import constants as C
from ansible.errors import AnsibleFilterError

# Ansible loads filter plugins by path, not as a package: the decisions live in lib/, put on the path here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

from sglang_state import run_record  # noqa: E402


def run_results(nodes, step):
    """The nodes' results of a step, from the records of this run (Ansible's local temporary folder of the run)."""
    try:
        return run_record.peers(run_record.folder_of(C.DEFAULT_LOCAL_TMP), list(nodes or []), step,
                                "the step %s" % step)
    except (ValueError, run_record.RecordError) as error:
        raise AnsibleFilterError(str(error)) from None


class FilterModule:
    def filters(self):
        return {"sglang_run_results": run_results}
