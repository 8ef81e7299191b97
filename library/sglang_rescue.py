#!/usr/bin/python
"""Documentation of the sglang_rescue action (action_plugins/sglang_rescue.py): it runs on the controller and drives
modules on the host; this file is what ansible-doc reads."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_rescue
short_description: One phase of the rescue of a failed SGLang deploy or proof (look, rescue, end)
description:
  - The one rescue of roles/sglang (main.yml's, over the deploy and the proof) in Python
    (lib/sglang_state/transaction_rescue.py), in phases so that a server across nodes decides and proves as one.
  - C(look) reads the journal's last lines (the key redacted), whether the server answers C(/health_generate), and
    the backup store.
  - C(rescue) takes every node's look and decides for the server (lib/sglang_state/rescue.py) - put the last proven
    state back (the restore of sglang_deploy, its runtime checked first), stop SGLang, or leave it. Without a
    restore it fails with one sentence, what was done, and the journal's last lines. After a restore it returns
    C(said) and C(proof), the proof roles/sglang/tasks/rescue.yml runs with sglang_prove's C(prove) phase (the check
    at least, as a rollback proves its restore). docs/when-things-go-wrong.md lists what each failure leaves behind.
  - C(end) reads rank 0's proof of the restored state; a passed one is recorded in the backup store (the entry's
    proof time moves forward) and lets the replica rejoin its routers. It fails with the run's message, which says
    whether the restored state proved.
  - An action plugin; it runs modules on the host. What an earlier phase found is read from this run's record on
    the controller (lib/sglang_state/run_record.py) - the deploy's C(run) and last phase (a failure after a verified
    deploy is the proof's), every node's C(look), the C(rescue) phase's decision, and rank 0's proof of the restored
    state (none when rank 0 ran none).
  - Each phase takes only the options it reads (the table PHASE_OPTIONS in the action), each of the type documented
    here (suboptions included); it refuses any other option, a missing required one, and a value of the wrong type
    (a mapping or list where a scalar is wanted, or the reverse, or a value Ansible cannot convert) by name before it
    runs anything. An error inside a phase whose options passed is reported as a defect of the phase, its traceback
    in C(exception) (shown with -vvv). A module that fails without a result (a broken interpreter) is said with the
    end of its stderr and stdout.
version_added: "1.1.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  phase:
    description: The phase to run.
    type: str
    required: true
    choices: [look, rescue, end]
  files:
    description: C(look), C(end) - the service's files' paths (the store's entries are read for them).
    type: list
    elements: str
  store:
    description: C(look), C(end) - the backup store.
    type: dict
    suboptions:
      dir:
        description: The store's folder.
        type: path
        required: true
      keep:
        description: How many entries it keeps.
        type: int
      lock_owner:
        description: Who holds the run lock (the store's lock names it).
        type: str
  host:
    description: C(rescue) - this host's inventory name.
    type: str
  rank0:
    description: C(rescue), C(end) - the server's rank-0 host (C(end) reads its proof of the restored state).
    type: str
  batch:
    description: C(rescue) - the server's nodes in this batch; it reads each one's C(look) from this run's record
      (the server decides as one).
    type: list
    elements: str
  service:
    description: The systemd unit (C(rescue) stops it when it decides to).
    type: str
  restore:
    description: C(rescue) - what sglang_deploy's C(restore) takes besides the entry (its options of the same names).
    type: dict
    suboptions:
      runtimes:
        description: The runtimes' folder and the distributions a runtime reports, C({dir, names}).
        type: dict
        required: true
      store:
        description: The backup store, C({dir, keep, lock_owner}).
        type: dict
        required: true
      files:
        description: The service's files' paths.
        type: list
        elements: str
        required: true
      unit_name:
        description: The unit's file name in an entry.
        type: str
        required: true
      service:
        description: The systemd unit.
        type: str
        required: true
      wait:
        description: The readiness wait (sglang_wait_ready's arguments).
        type: dict
        required: true
  versions:
    description: C(rescue) - the serving runtime's versions.
    type: dict
  url:
    description: C(look) - the server's URL (for C(/health_generate)).
    type: str
  api_key:
    description: C(look), C(rescue), C(end) - the server's API key (redacted from the journal; never returned).
    type: str
  failure:
    description: C(look), C(rescue) - the failure's sentence; C(look) fails with it at once when this run changed
      nothing on the host (nothing to undo).
    type: str
  rollback_on_failure:
    description: C(rescue) - restore after a failed proof of a state that still answers.
    type: bool
"""

EXAMPLES = r"""
- name: Read the journal's last lines, whether the server answers, and the backup store
  sglang_rescue:
    phase: look
    failure: "{{ ansible_failed_result | sglang_failure_reason(ansible_failed_task | default({})) }}"
    service: sglang
    url: http://127.0.0.1:30000
    store: {dir: /var/lib/sglang/backups, keep: 5, lock_owner: me}
    files: [/etc/systemd/system/sglang.service]
"""

RETURN = r"""
phase:
  description: The phase that ran.
  returned: always
  type: str
journal:
  description: C(look) - the journal's last lines, the API key replaced by C(<api key>).
  returned: look
  type: str
status:
  description: C(look) - the status of C(/health_generate); -1 when the server did not answer.
  returned: look
  type: int
store:
  description: C(look) - the backup store's entries, current and last proven entry (C(problem) when it cannot be
    read).
  returned: look
  type: dict
said:
  description: C(rescue) after a restore - the decision and what the run's message says (without the key), for
    C(end).
  returned: rescue, after a restore
  type: dict
proof:
  description: C(rescue) after a restore - the proof of the restored state, C(planned) (sglang_prove's) and
    C(smoke) (what replaces the role's smoke arguments - the entry's own target).
  returned: rescue, after a restore
  type: dict
run:
  description: The C(run) it was given, as it stands; C(end), and C(rescue) without a restore, fail, their C(msg)
    the run's message.
  returned: always
  type: dict
"""
