#!/usr/bin/python
"""Documentation of the sglang_check_inputs action (action_plugins/sglang_check_inputs.py): it runs on the controller;
this file is what ansible-doc reads."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_check_inputs
short_description: Check one host's inputs for a role as the check phase does, before anything changes
description:
  - Runs the check phase's own check of one host (lib/sglang_checks/inputs.py host_refusals) with the role's knobs as
    the task sees them, the role's defaults applied - each knob templated once, on the controller.
  - Refuses, one sentence each naming the host, the variable, the value and the fix - the names the roles do not
    know, the role's run facts set from outside it (the inventory, a play's vars, -e), a value its argument specs
    refuse, any value that would reach a file, a path, argv or a URL unsafely, the service, release and multi-node
    rules, and every name with a leading C(_) given with -e (extra vars beat every variable of a play).
  - A knob that does not template fails the task naming it.
  - An action plugin - nothing on the host is read or changed, and it never reports changed.
version_added: "1.2.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  role:
    description: The role whose knobs are checked (the options of its meta/argument_specs.yml).
    type: str
    default: sglang
  group:
    description:
      - The group the host is checked as a member of, whatever the inventory says (a playbook of the operator's own
        may run the role anywhere).
    type: str
    default: sglang_servers
"""

EXAMPLES = r"""
- name: Check this host's inputs as the check phase does
  sglang_check_inputs:
    role: sglang
    group: sglang_servers
"""

RETURN = r"""
msg:
  description: The refusals, one sentence each, when the check fails; else that the inputs pass.
  returned: always
  type: str
"""
