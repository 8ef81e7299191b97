"""Ansible filters over lib/sglang_state/ (plain Python, tested without Ansible).

  {{ live | sglang_proof_level(record, sglang_proof, sglang_reprove_after_days) }}
      {level: full|check, reason, last_full_at, expect}: the proof this run needs (proof_level.py)
  {{ live | sglang_proof_record(sglang_smoke) }}
      the record a passed full proof leaves on the host, for the next run's decision
  {{ before | sglang_proof_live(changed_this_run, restarted_this_run, runtime_changed, process, versions,
                                context_target) }}
      what the run knows of this host's live state (sglang_proof_level's input), each part an argument
  {{ own_level | sglang_proof_server_level(nodes_levels) }}
      the proof the server needs: the full proof when any of its nodes' levels is full, else this node's
  {{ planned_level | sglang_proof_ran(sglang_smoke) }}
      the proof that ran: the planned one, or the full one a check escalated to
  {{ stdout_lines | sglang_serving_process(record) }}
      {process, proven}: the serving process from systemctl show, and whether the last full proof saw it
"""

import os
import sys

from ansible.errors import AnsibleFilterError

# Ansible loads filter plugins by path, not as a package: the decisions live in lib/, put on the path here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

import sglang_state  # noqa: E402


def proof_level(live, record, asked="auto", reprove_after_days=7):
    try:
        return sglang_state.proof_level(dict(live or {}), dict(record or {}), asked, reprove_after_days)
    except sglang_state.ProofLevelError as error:
        raise AnsibleFilterError(str(error)) from None


def proof_record(live, smoke):
    return sglang_state.proof_record(dict(live or {}), dict(smoke or {}))


def proof_live(before, changed_this_run, restarted_this_run, runtime_changed, process, versions, context_target):
    try:
        return sglang_state.live_state(dict(before or {}), changed_this_run, restarted_this_run, runtime_changed,
                                       process, versions, context_target)
    except sglang_state.ProofLevelError as error:
        raise AnsibleFilterError(str(error)) from None


def proof_server_level(own, nodes_levels):
    return sglang_state.server_proof_level(dict(own), list(nodes_levels or []))


def proof_ran(planned, smoke):
    return sglang_state.proof_ran(dict(planned), dict(smoke or {}))


def serving_process(show_lines, record=None):
    return sglang_state.serving_process(list(show_lines or []), dict(record or {}))


class FilterModule:
    def filters(self):
        return {"sglang_proof_level": proof_level, "sglang_proof_record": proof_record,
                "sglang_proof_live": proof_live, "sglang_proof_server_level": proof_server_level,
                "sglang_proof_ran": proof_ran, "sglang_serving_process": serving_process}
