#!/usr/bin/python
"""Documentation of the sglang_deploy action (action_plugins/sglang_deploy.py): it runs on the controller and
drives modules and templates on the host, as ansible.builtin.template does; this file is what ansible-doc reads."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_deploy
short_description: One phase of the SGLang deploy transaction (deploy, restore, proof, rescue)
description:
  - The deploy of roles/sglang as one transaction in Python (lib/sglang_state/transaction.py), run phase by phase
    so that the nodes of a server across nodes move in lockstep. Each phase keeps its result in this run's record
    on the controller (lib/sglang_state/run_record.py, one file per host in ansible-playbook's own temporary
    folder); the next phase reads it there, its own and that of every node of the server in O(batch).
  - C(render) keeps the serving state in the backup store (sglang_backup_store) and renders the unit, env file and
    config (the env file and config without diff or log).
  - C(start) restarts SGLang when its server's files changed (a node of a server across nodes restarts with its
    peers), keeps the new state in the store, waits for C(/health_generate) (sglang_wait_ready, one progress line per
    try) and reads the boot (sglang_boot_facts).
  - C(calibrate) takes the server's boot (the least-free node), stores the calibration when new or stale, and when
    an estimated plan fell short re-plans from the measured boot, renders, restarts and reads the boot once more.
  - C(verify) checks the server's pool holds the plan and the headroom is there, and returns the facts the proof,
    the summary and the report read, in C(facts).
  - C(restore) puts a backup store entry back (its runtime checked on the host first, the live state kept first),
    restarts, waits and reads the boot (playbooks/rollback.yml and the rescue).
  - The proof, the rescue and the runtime are actions of their own (sglang_prove, sglang_rescue,
    sglang_runtime_install).
  - An action plugin; it runs modules on the host. Every result carries C(run), what this run did to the host so far
    (failed phases too), kept in the run record, where the rescue (sglang_rescue) reads it.
  - Each phase takes only the options it reads (the table PHASE_OPTIONS in action_plugins/sglang_deploy.py), and all
    the keys of the O(common) it is passed, each of the type documented here (suboptions included; C(render),
    C(start) and C(calibrate) take O(files) as mappings, C(restore) as paths); it refuses any other option, a missing
    required one, and a value of the wrong type (a mapping or list where a scalar is wanted, or the reverse, or a
    value Ansible cannot convert) by name before it runs anything. An error inside a phase whose options passed is
    reported as a defect of the phase, its traceback in C(exception) (shown with -vvv). A module that fails without
    a result (a broken interpreter) is said with the end of its stderr and stdout.
version_added: "1.1.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  phase:
    description: The phase to run.
    type: str
    required: true
    choices: [render, start, calibrate, verify, restore]
  common:
    description:
      - Settings every phase of this host shares (the role passes one dict), under the phase's own.
      - C(render), C(start), C(calibrate), C(verify) - the role's C(_sglang_deploy) (O(host), O(server), O(rank0),
        O(order), O(multinode), O(batch), O(service), O(files), O(etc_dir), O(etc_group), O(store), O(state_manifest),
        O(wait), O(context_target)).
      - C(restore) - the role's C(_sglang_restore) (O(runtimes), O(store), O(files), O(unit_name), O(service),
        O(wait)).
    type: dict
  files:
    description:
      - C(render), C(start), C(calibrate) - the service's files, each a mapping C({src, dest, mode, group, secret})
        (src, dest and mode required; the action checks them).
      - C(restore) - their paths (strings).
    type: list
    elements: raw
  etc_dir:
    description: The service's folder under /etc (root, group O(etc_group), 0750).
    type: path
  etc_group:
    description: The group that reads the service's folder (the service's user).
    type: str
  store:
    description: The backup store.
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
  before_manifest:
    description: C(render) - the manifest of the state found on the host.
    type: dict
  plan_args:
    description: C(render) - the planned server flags, said in check mode when SGLang would restart.
    type: list
    elements: str
  state_manifest:
    description: C(start), C(calibrate) - the manifest of the state this run deploys.
    type: dict
  host:
    description: This host's inventory name.
    type: str
  server:
    description: The server's name (messages).
    type: str
  rank0:
    description: The server's rank-0 host.
    type: str
  order:
    description: The server's nodes in rank order.
    type: list
    elements: str
  multinode:
    description: Whether the server spans several hosts.
    type: bool
  batch:
    description: The server's nodes in this batch (a rolling run's batch holds a whole server, or none of it).
      C(start), C(calibrate) and C(verify) read each one's result of the phase before from this run's record.
    type: list
    elements: str
  service:
    description: The systemd unit.
    type: str
  wait:
    description: C(start), C(calibrate), C(restore) - the readiness wait (sglang_wait_ready's arguments).
    type: dict
    suboptions:
      url:
        description: The server's URL.
        type: str
      unit:
        description: The systemd unit.
        type: str
      timeout:
        description: Seconds from the unit's start.
        type: int
        required: true
      api_key:
        description: The server's API key (never logged).
        type: str
  spec:
    description: C(calibrate) - the planner's spec of the plan that booted.
    type: dict
  plan:
    description: C(calibrate) - the plan that booted.
    type: dict
  context_target:
    description: The context the pool must hold.
    type: int
  stored:
    description: C(calibrate) - the calibration this host stored for this setup.
    type: dict
  in_use:
    description: C(calibrate) - the calibration the plan used.
    type: dict
  calibration_store:
    description: C(calibrate) - where a calibration is stored.
    type: dict
    suboptions:
      folder:
        description: The local facts folder.
        type: path
        required: true
      path:
        description: The fact file.
        type: path
        required: true
      key:
        description: The key of this setup.
        type: str
        required: true
      entries:
        description: The entries other setups stored.
        type: dict
      setup:
        description: What the key stands for (model, parallelism).
        type: dict
        required: true
  plan_inputs:
    description: C(calibrate) - the planner's inputs for a re-plan.
    type: dict
    suboptions:
      knobs:
        description: The planner's knobs.
        type: dict
        required: true
      measured:
        description: What was measured on the host (checkpoint and draft).
        type: dict
        required: true
      gpus:
        description: Each node's GPU facts.
        type: dict
        required: true
      calibrations:
        description: Each node's calibration in use.
        type: dict
        required: true
  min_headroom_gib:
    description: C(verify) - the memory SGLang must have left after the pool.
    type: float
  name:
    description: C(restore) - the store entry to put back.
    type: str
  unit_path:
    description: C(restore) - the entry's copy of the unit (it names the entry's runtime).
    type: path
  runtimes:
    description: C(restore) - the runtimes' folder and the distributions a runtime reports.
    type: dict
    suboptions:
      dir:
        description: The runtimes' folder.
        type: path
        required: true
      names:
        description: The distributions a runtime reports.
        type: list
        elements: str
        required: true
  unit_name:
    description: C(restore) - the unit's file name in an entry; taken (and not read) as a key of O(common), which the
      rescue's C(restore) (sglang_rescue) shares.
    type: str
notes:
  - Check mode - C(render) shows what would change (the unit's diff with --diff); the role stops after it.
"""

EXAMPLES = r"""
- name: Keep the serving state, and render the unit, env file and config
  sglang_deploy:
    phase: render
    files: "{{ service_files }}"
    etc_dir: /etc/sglang
    etc_group: sglang
    store: {dir: /var/lib/sglang/backups, keep: 5, lock_owner: me}
    before_manifest: {reason: found on the host}
  register: _sglang_rendered
"""

RETURN = r"""
phase:
  description: The phase that ran.
  returned: always
  type: str
run:
  description: What this run did to the host so far - changed_this_run, restarted_this_run, run_backup, starts,
    corrective_restarts, before (the store's snapshot of the state found).
  returned: always
  type: dict
files_changed:
  description: C(render) - whether the unit, env file or config changed.
  returned: render
  type: bool
ready:
  description: C(start), C(calibrate) after a corrective restart - whether SGLang answered.
  returned: start
  type: bool
boot:
  description: This node's boot read (C(start), C(calibrate)); the server's (C(verify)).
  returned: start, calibrate, verify
  type: dict
facts:
  description: C(verify) - sglang_boot, sglang_kv_plan_result, sglang_kv_spec, the run's counts and flags, and the
    calibrations in use and stored.
  returned: verify
  type: dict
"""
