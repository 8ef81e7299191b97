"""Ansible filter over lib/sglang_state/model_inputs.py (plain Python, tested without Ansible): roles/sglang/tasks/
model.yml keeps what it returns.

  {{ _sglang_checkpoints | sglang_model_inputs(setup) }}
      {model, model_config, checkpoint_gib, draft_model_config, draft_checkpoint_gib, draft_key, calibration_key}:
      what the planner reads from the checkpoints on the host, and the key of this setup's calibration
"""

import os
import sys

# Ansible loads filter plugins by path, not as a package: the decisions live in lib/, put on the path here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

import sglang_state


def model_inputs(checkpoints, setup):
    return sglang_state.model_inputs(dict(checkpoints or {}), dict(setup or {}))


class FilterModule:
    def filters(self):
        return {"sglang_model_inputs": model_inputs}
