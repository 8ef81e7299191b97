"""Ansible filter over lib/sglang_state/rescue.py (plain Python, tested without Ansible).

  {{ ansible_failed_result | sglang_failure_reason(ansible_failed_task) }}
      one sentence for a failure (the rescue's, lib/sglang_state/transaction_rescue.py, takes it as its argument)
"""

import os
import sys

# Ansible loads filter plugins by path, not as a package: the decisions live in lib/, put on the path here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

import sglang_state


def failure_reason(failed_result, failed_task=None):
    return sglang_state.failure_reason(dict(failed_result or {}), dict(failed_task or {}))


class FilterModule:
    def filters(self):
        return {"sglang_failure_reason": failure_reason}
