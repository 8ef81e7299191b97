#!/usr/bin/python
"""Ansible module: a systemd unit's state and serving process, and optionally the last full proof's record, read in
one call."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_unit_state
short_description: Read a unit's state and serving process (systemctl show), and the last full proof's record
description:
  - Runs C(systemctl show) for O(unit) with the properties the deploy decides from (C(ActiveState),
    C(UnitFileState), C(InvocationID), C(MainPID), C(ExecMainStartTimestamp)); the controller reads the serving
    process from them (lib/sglang_state/proof_level.py C(serving_process)).
  - With O(record), also reads that JSON file (the last full proof's record the sglang role keeps beside its backup
    store), a regular file of at most 4 MiB. A missing, unreadable or malformed record is returned as C({}) with
    RV(record_problem) saying why - the proof is then the full one.
  - The deploy transaction (the C(sglang_deploy) action) reads both at the start of a run in one call, where a slurp
    and a command cost two.
  - Changes nothing.
version_added: "1.2.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  unit:
    description: The systemd unit (e.g. C(sglang)).
    type: str
    required: true
  record:
    description: The last full proof's record file, when it is to be read too.
    type: path
  timeout:
    description:
      - Seconds C(systemctl show) may take before the task fails with a sentence (a systemd that does not answer
        would otherwise hold the run for ever). Its answer is read up to 1 MiB.
    type: int
    default: 30
notes:
  - Supports check mode (it only reads).
"""

EXAMPLES = r"""
- name: Read the serving process and the last full proof's record
  sglang_unit_state:
    unit: sglang
    record: /var/lib/sglang/backups/last-full-proof.json
  register: serving
"""

RETURN = r"""
properties:
  description: The unit's Id and the properties above, by name, as systemctl prints them (a unit systemd does not
    know has an empty InvocationID and MainPID 0).
  returned: success
  type: dict
  sample: {ActiveState: active, UnitFileState: enabled, InvocationID: 1f2e3d4c, MainPID: "4242",
           ExecMainStartTimestamp: Tue 2026-12-01 08:00:00 UTC}
record:
  description: The record's JSON object, or C({}) when there is none or it is not one.
  returned: when record is given
  type: dict
record_problem:
  description: Why the record is C({}) (missing, unreadable, not JSON, not an object); empty when it was read.
  returned: when record is given
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences
from ansible.module_utils.sglang_files import load_json
from ansible.module_utils.sglang_systemd import SYSTEMCTL_TIMEOUT, show

PROPERTIES = ("ActiveState", "UnitFileState", "InvocationID", "MainPID", "ExecMainStartTimestamp")


def read_record(path):
    """(the record as a dict or {}, why it is {} or '')."""
    try:
        value = load_json(path)
    except FileNotFoundError:
        return {}, "no record at %s (never proven)" % path
    except (OSError, ValueError) as error:
        return {}, "%s cannot be read: %s" % (path, getattr(error, "strerror", None) or error)
    if not isinstance(value, dict):
        return {}, "%s is not a JSON object" % path
    return value, ""


def main():
    module = AnsibleModule(argument_spec={"unit": {"type": "str", "required": True},
                                          "record": {"type": "path"},
                                          "timeout": {"type": "int", "default": SYSTEMCTL_TIMEOUT}},
                           supports_check_mode=True)
    with failures_as_sentences(module, "sglang_unit_state"):
        unit, timeout = module.params["unit"], module.params["timeout"]
        if timeout < 1:
            module.fail_json(msg="sglang_unit_state: timeout=%d is not a number of seconds of at least 1: give the "
                                 "seconds systemctl show may take, e.g. 30" % timeout)
        # show() refuses a unit that is not a unit's name (an option, a path, NUL or control characters, a pattern)
        result = {"changed": False, "properties": show(module, [unit], PROPERTIES, timeout)[unit]}
        if module.params["record"]:
            result["record"], result["record_problem"] = read_record(module.params["record"])
        module.exit_json(**result)


if __name__ == "__main__":
    main()
