"""Ansible filters over lib/sglang_state/ (plain Python, tested without Ansible).

  {{ live | sglang_proof_level(record, sglang_proof, sglang_reprove_after_days) }}
      {level: full|check, reason, last_full_at, expect}: the proof this run needs (proof_level.py)
  {{ live | sglang_proof_record(sglang_smoke) }}
      the record a passed full proof leaves on the host, for the next run's decision
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


class FilterModule:
    def filters(self):
        return {"sglang_proof_level": proof_level, "sglang_proof_record": proof_record}
