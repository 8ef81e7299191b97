"""Ansible filter over lib/sglang_state/ and lib/sglang_report/clock.py (plain Python, tested without Ansible).

  {{ _sglang_batch_nodes | sglang_run_results('render') }}
      {node: its result of the step} from this ansible-playbook run's records (run_record.py), for the nodes of a
      server in this batch; a node without one is refused, named (the drain before a restart reads the renders)

  {{ inventory_hostname | sglang_run_result('download') }}
      this host's result of a step from this ansible-playbook run's record, {} when it has none (the download's entry:
      its part of the day-1 clock and the folders this run fetched into)

  {{ _nvidia_driver_clock | default({}) | sglang_clock_mark('driver', 'start') }}
      the day-1 clock's marks of the roles that keep them in a host fact (the driver's, CUDA's), on the controller's
      clock; the download's are kept in the run record by its action (action_plugins/hf_download.py)

  {{ nodes | sglang_nodes_refusals(server, inventory_hostname, ansible_play_batch, versions, checkpoints) }}
      a server across nodes before anything restarts: every node in this batch, the same code and weights on each
"""

import os
import sys
import time

# Ansible loads filter plugins by path, not as a package: the decisions live in lib/, put on the path here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

from ansible import constants as C
from ansible.errors import AnsibleFilterError
from sglang_report.clock import ClockError, mark
from sglang_state import run_record
from sglang_state.nodes import nodes_refusals


def run_results(nodes, step):
    """The nodes' results of a step, from the records of this run (Ansible's local temporary folder of the run)."""
    try:
        return run_record.peers(run_record.folder_of(C.DEFAULT_LOCAL_TMP), list(nodes or []), step,
                                "the step %s" % step)
    except (ValueError, run_record.RecordError) as error:
        raise AnsibleFilterError(str(error)) from None


def run_result(host, step):
    """This host's result of a step from the record of this run, {} when it has none."""
    try:
        return run_record.result(run_record.read(run_record.folder_of(C.DEFAULT_LOCAL_TMP), host), step) or {}
    except run_record.RecordError as error:
        raise AnsibleFilterError(str(error)) from None


def clock_mark(clock, phase, edge, note=None):
    """The controller's time now, as the phase's start or end."""
    try:
        return mark(clock, phase, edge, time.time(), note)
    except ClockError as error:
        raise AnsibleFilterError(str(error)) from None


class FilterModule:
    def filters(self):
        return {"sglang_nodes_refusals": nodes_refusals, "sglang_run_results": run_results,
                "sglang_run_result": run_result, "sglang_clock_mark": clock_mark}
