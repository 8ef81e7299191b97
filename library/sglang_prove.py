#!/usr/bin/python
"""Documentation of the sglang_prove action (action_plugins/sglang_prove.py): it runs on the controller and drives
modules on the host; this file is what ansible-doc reads."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_prove
short_description: One phase of the proof of an SGLang server (observe, decide, prove, record)
description:
  - The proof of roles/sglang in Python (lib/sglang_state/transaction_proof.py), run phase by phase so that the nodes
    of a server across nodes move in lockstep; a server is proven as one, on rank 0 (its one HTTP API).
  - C(observe) reads the last full proof's record and the serving process in one module call (a re-run with nothing
    changed only checks).
  - C(decide) says this node's proof - the full one after a change, when never proven, asked for or old; else a
    check (lib/sglang_state/proof_level.py).
  - C(prove) runs on rank 0 the check, or the full proof (the real pool, a long prompt built on the host, the answer,
    decode at that context, then N short prompts at once) as an async job whose stage is said every 5 s.
  - C(record) says which proof ran and why; after a full one it marks the live state proven in the backup store and
    keeps the record the next run decides from. A failed proof on rank 0 fails every node with its message.
  - An action plugin; it runs modules on the host. What an earlier phase found (the record C(observe) read, each
    node's decision, rank 0's result, the deploy's plan, a rescue's restored entry) is read from this run's record on
    the controller (lib/sglang_state/run_record.py), never passed by the role. C(observe) begins the host's record.
  - After a rescue restored an entry (sglang_rescue), C(prove) proves it at the level the rescue planned, held to the
    entry's own target and to the API key in its config (O(config_path)).
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
    choices: [observe, decide, prove, record]
  files:
    description: C(record) - the service's files' paths (the state marked proven).
    type: list
    elements: str
  store:
    description: C(record) - the backup store.
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
  service:
    description: C(observe), C(decide) - the systemd unit.
    type: str
  context_target:
    description: C(decide) - the context the pool must hold.
    type: int
  record_path:
    description: C(observe), C(record) - the last full proof's record on the host.
    type: path
  versions:
    description: C(decide) - the serving runtime's versions (this run's install); after a restore, the restored
      runtime's, read from this run's record, take their place.
    type: dict
  runtime_changed:
    description: C(decide) - whether this run switched the runtime.
    type: bool
  asked:
    description: C(decide) - the proof asked for (auto, full, check).
    type: str
  reprove_after_days:
    description: C(decide) - the age in days after which the full proof runs again.
    type: raw
  batch:
    description: C(prove), C(record) - the server's nodes in this batch; the server's proof is the full one when any
      of their decisions (read from this run's record) asks for it.
    type: list
    elements: str
  rank0:
    description: C(record) - the server's rank-0 host, whose proof result (read from this run's record) every node
      records.
    type: str
  smoke:
    description: C(prove) - sglang_smoke_test's arguments (empty ones left out).
    type: dict
  config_path:
    description: C(prove) after a rescue's restore - the server's config, from which the API key the restored state
      serves with is read (a run that changed sglang_api_key put the old one back).
    type: path
  on_rank0:
    description: C(prove) - whether this node serves the server's HTTP API (only rank 0 is proven).
    type: bool
  progress_file:
    description: C(prove) - where the full proof keeps its stage while it runs.
    type: path
  limit:
    description: C(prove) - the full proof's backstop in seconds (its own deadlines end it first).
    type: int
  manifest:
    description: C(record) - the manifest of the state marked proven; its plan and versions are what the deploy's
      last phase found (the run record), when it found them.
    type: dict
"""

EXAMPLES = r"""
- name: Decide this node's proof
  sglang_prove:
    phase: decide
    service: sglang
    context_target: 200000
    asked: auto
  register: _sglang_proof_decided
"""

RETURN = r"""
phase:
  description: The phase that ran.
  returned: always
  type: str
record:
  description: C(observe) - the last full proof's record (C({}) when there is none); C(record) - the new one after a
    full proof.
  returned: observe, record
  type: dict
proven:
  description: C(observe) - whether the serving process is the one the record proved; C(record) - the store's answer
    after a full proof.
  returned: observe, record
  type: raw
live:
  description: C(decide) - the live state (what changed this run, the serving process and versions).
  returned: decide
  type: dict
own:
  description: C(decide) - this node's proof level and why.
  returned: decide
  type: dict
smoke:
  description: C(prove) - rank 0's proof result, failed or not (None on the other nodes).
  returned: prove
  type: dict
level:
  description: C(record) - which proof ran and why.
  returned: record
  type: dict
last_full:
  description: C(record) - the last full proof's record (this one's, or the one C(observe) read).
  returned: record
  type: dict
facts:
  description: C(record) - the run's facts for what comes after the role (roles/sglang/tasks/prove.yml sets them)
    - what the deploy's last phase found (C(sglang_boot), C(sglang_kv_plan_result), C(sglang_starts), ... after a
    verify; C(sglang_venv_versions), C(sglang_boot), ... after a restore), read from this run's record, with
    C(sglang_smoke), C(sglang_proof_level) and C(sglang_proof_record).
  returned: record
  type: dict
run:
  description: The C(run) it was given, as it stands.
  returned: decide, prove, record
  type: dict
"""
