"""Ansible filter over lib/sglang_state/correction.py (plain Python, tested without Ansible): roles/sglang/tasks/
calibrate.yml performs what it decides.

  {{ calibration | sglang_correction(own_boot, stored, pool_tokens, plan, context_target) }}
      {calibration, stale, store, correct, previous_args, previous_required}: whether a pool short of the plan is
      re-planned from the measured boot, and whether the calibration is stored
"""

import os
import sys

# Ansible loads filter plugins by path, not as a package: the decisions live in lib/, put on the path here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

import sglang_state  # noqa: E402


def correction(calibration, own_boot, stored, pool_tokens, plan, context_target):
    return sglang_state.correction(calibration, dict(own_boot or {}), dict(stored or {}), pool_tokens,
                                   dict(plan or {}), context_target)


class FilterModule:
    def filters(self):
        return {"sglang_correction": correction}
