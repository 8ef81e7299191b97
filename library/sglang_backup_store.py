#!/usr/bin/python
"""Ansible module: the SGLang backup store, a folder of timestamped states (unit, env file, config) with manifests."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_backup_store
short_description: Keep, mark proven and restore the states of an SGLang service (unit, env file, config)
description:
  - A state is the service's files taken together (the systemd unit, its env file, SGLang's --config file).
    The store keeps one entry per distinct state, C(<dir>/<UTC timestamp>/), holding copies of the files
    (owner and mode preserved) and C(backup.json), the manifest.
  - Entries are written into a hidden folder and renamed into place, and manifests are replaced by rename;
    an interrupted run leaves no half entry (hidden folders are ignored and removed by the next snapshot).
  - C(snapshot) adds the live state unless an entry already holds the same files; then prunes to the newest
    C(keep), never deleting the newest proven entry, the live state's entry, the entry just added, or
    C(protect) (a restore protects its source).
  - C(proven) records the proof on the live state's entry (adding the entry first if needed); the first proof
    of a state is kept, so a re-run changes nothing.
  - C(restore) copies an entry's files over the live ones (each by rename); it never prunes.
  - To read the store without changing it, use C(sglang_backup_store_info).
version_added: "1.0.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  dir:
    description: The store's folder (created 0700 root when missing).
    type: path
    required: true
  files:
    description: The live files of one state, by full path; an entry keeps them by base name.
    type: list
    elements: path
    required: true
  state:
    description: What to do.
    type: str
    choices: [snapshot, proven, restore]
    required: true
  manifest:
    description:
      - What to record with a new entry (C(snapshot), C(proven)), e.g. C(context_target), C(plan),
        C(versions), C(pip_sources), C(reason). Without C(context_target), it is read from the unit's
        C(--context-length).
    type: dict
    default: {}
  proof:
    description: For C(proven), the proof to record (pool, prompt, when, ...).
    type: dict
    default: {}
  name:
    description: For C(restore), the entry to put back.
    type: str
  keep:
    description: Entries to keep (at least 1) besides those never pruned; the role passes sglang_backup_keep.
    type: int
    default: 10
  protect:
    description: Entry names never pruned by this call.
    type: list
    elements: str
    default: []
notes:
  - Supports check mode.
"""

EXAMPLES = r"""
- name: Keep the state being replaced
  sglang_backup_store:
    dir: /var/backups/sglang
    files: [/etc/systemd/system/sglang.service, /etc/sglang/sglang.env, /etc/sglang/sglang.yaml]
    state: snapshot
    keep: 10
    manifest: {reason: found on the host}
"""

RETURN = r"""
entries:
  description: The entries, newest first, each its manifest plus name, path and current (it is the live state).
  type: list
  returned: always
current:
  description: The entry holding the live state, or null.
  type: str
  returned: always
last_proven:
  description: The newest proven entry that is not the live state (what a rollback restores), or null.
  type: str
  returned: always
name:
  description: The entry this call added, marked or restored (null when there was nothing to keep).
  type: str
  returned: when state is snapshot, proven or restore
pruned:
  description: Entries this call removed.
  type: list
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences
from ansible.module_utils.sglang_store import Store, StoreError, store_facts

__all__ = ["Store", "StoreError"]


def main():
    module = AnsibleModule(argument_spec={
        "dir": {"type": "path", "required": True},
        "files": {"type": "list", "elements": "path", "required": True},
        "state": {"type": "str", "required": True, "choices": ["snapshot", "proven", "restore"]},
        "manifest": {"type": "dict", "default": {}},
        "proof": {"type": "dict", "default": {}},
        "name": {"type": "str"},
        "keep": {"type": "int", "default": 10},
        "protect": {"type": "list", "elements": "str", "default": []},
    }, supports_check_mode=True, required_if=[("state", "restore", ["name"])])
    with failures_as_sentences(module, "sglang_backup_store"):
        p, check = module.params, module.check_mode
        store = Store(p["dir"], p["files"])
        result = {"changed": False, "pruned": []}
        try:
            if p["keep"] < 1:
                raise StoreError("sglang_backup_keep is %d: keep at least 1 entry. Set sglang_backup_keep to 1 or "
                                 "more." % p["keep"])
            if p["state"] == "snapshot":
                result["name"], result["changed"] = store.add(p["manifest"], check)
                result["pruned"] = store.prune(p["keep"], p["protect"] + [result["name"]], check)
            elif p["state"] == "proven":
                result["name"], result["changed"] = store.mark_proven(p["proof"], p["manifest"], check)
                result["pruned"] = store.prune(p["keep"], p["protect"] + [result["name"]], check)
            elif p["state"] == "restore":
                result["name"], result["changed"] = store.restore(p["name"], check)
        except (StoreError, OSError) as error:
            module.fail_json(msg=str(error), **result)
        result["changed"] = result["changed"] or bool(result["pruned"])
        result.update(store_facts(store))
        module.exit_json(**result)


if __name__ == "__main__":
    main()
