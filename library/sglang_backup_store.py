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
    an interrupted run leaves no half entry (hidden folders are ignored, and removed under the lock by the next
    run that changes the store).
  - One run at a time changes the store. Every call except in check mode holds an flock on C(<dir>/.lock) while
    it works, waiting at most C(lock_timeout) seconds for another run to finish; past that it fails naming the
    run that holds it (its pid, host, start, what it does and C(lock_owner)). The kernel releases the lock of a
    run that dies. Check mode takes no lock and writes nothing.
  - An entry whose C(backup.json) is not a manifest (C(null), a list, a string, not JSON, no C(files), a
    C(files) naming a file the folder lacks) is skipped by every state and returned in C(corrupt) with the
    problem, with a warning naming it; it is never pruned (it is left for a person). Restoring it by name fails
    saying why. Keys of a manifest this module does not know pass through to C(entries) unchanged.
  - C(snapshot) adds the live state unless an entry already holds the same files; then prunes. Pruning keeps the
    newest C(keep) entries and, besides them, always the live state's entry, the entry proven most recently, the
    one proven most recently other than the live one (what a rollback and the rescue go back to), the entry just
    added, and C(protect) (a restore protects its source). So after a successful deploy C(keep=1) leaves the new proven
    state and the proven state before it.
  - C(proven) records the proof on the live state's entry (adding the entry first if needed). Every passed proof
    moves the entry's C(proven.at) to its own time (the first proof's stays in C(proven.first_at)), so the last
    proven state is the one that served, proven, most recently, whichever entry was made first. A C(proof) of
    C(level=check) (a short prompt on a restored state) only moves the time of an entry proven in full before; on
    an entry never proven it marks nothing. Then it prunes as C(snapshot) does.
  - C(restore) puts an entry's whole state back or nothing. The entry's files are the whole state, so a live
    file that the entry lacks is removed (C(removed)). Every file that differs is first written beside its
    live file under a hidden name and flushed to disk, then all are renamed into place; a failure while writing
    (a full disk) leaves every live file untouched and removes the copies, a failure while renaming puts every
    original back. A live state that no entry holds is added to the store before it is replaced. It never
    prunes.
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
    description: For C(proven), the proof to record (pool, prompt, C(at), ...; C(at) defaults to now) and its
      C(level), C(full) (default) or C(check).
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
  lock_timeout:
    description: Seconds to wait for another run's lock on the store before failing with the holder's name.
    type: int
    default: 10
  lock_owner:
    description: Who this run is, written in the lock file for a refused run's message (e.g. the playbook and
      the user).
    type: str
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
lines:
  description: One line per entry, for people (as sglang_backup_store_info returns them).
  type: list
  elements: str
  returned: success
entries:
  description: The entries, newest first, each its manifest plus name, path and current (it is the live state).
  type: list
  elements: dict
  returned: always
current:
  description: The entry holding the live state, or null.
  type: str
  returned: always
last_proven:
  description: The entry that served, proven, most recently (the newest C(proven.at)) and is not the live state
    (what a rollback and the rescue restore), or null.
  type: str
  returned: always
name:
  description: The entry this call added, marked or restored (null when there was nothing to keep).
  type: str
  returned: when state is snapshot, proven or restore
pruned:
  description: Entries this call removed.
  type: list
  elements: str
  returned: always
corrupt:
  description: Entries skipped for a corrupt manifest, each C(name), C(path) and C(problem); never pruned.
  type: list
  elements: dict
  returned: always
cleaned:
  description: What a run that died had left (C(.incoming-*) folders, a restore's staged copies) and this call
    removed under the lock.
  type: list
  elements: str
  returned: always
skipped:
  description: Odd items the store did not make (a restore's copy that is not a file, a displaced original no entry
    holds), each C(path) and C(problem); named and left alone, never blocking the run.
  type: list
  elements: dict
  returned: always
interrupted_restore:
  description: Whether a restore's journal is still there (a restore killed between its renames, not yet finished).
  type: bool
  returned: always
recovered:
  description: A restore a killed run left half done, finished before anything else, C(entry) and C(direction)
    (forward to the entry it restored, or back to the one it replaced); null when there was none.
  type: dict
  returned: when the store was changed under its lock
restored:
  description: For C(restore), the live files written from the entry.
  type: list
  elements: str
  returned: when state is restore
removed:
  description: For C(restore), the live files removed because the entry's state does not have them.
  type: list
  elements: str
  returned: when state is restore
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences
from ansible.module_utils.sglang_store import Store, StoreError, store_facts

__all__ = ["Store", "StoreError"]


def _change(store, p, check, result):
    if p["state"] == "snapshot":
        result["name"], result["changed"] = store.add(p["manifest"], check)
        result["pruned"] = store.prune(p["keep"], p["protect"] + [result["name"]], check)
    elif p["state"] == "proven":
        result["name"], result["changed"] = store.mark_proven(p["proof"], p["manifest"], check)
        result["pruned"] = store.prune(p["keep"], p["protect"] + [result["name"]], check)
    else:
        result["name"], result["changed"], done = store.restore(p["name"], check)
        result.update(done)
        if done["removed"]:
            result["note"] = ("The entry's files are the whole state: %s, which it does not hold, %s removed."
                              % (", ".join(done["removed"]), "would be" if check else "was"))


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
        "lock_timeout": {"type": "int", "default": 10},
        "lock_owner": {"type": "str"},
    }, supports_check_mode=True, required_if=[("state", "restore", ["name"])])
    with failures_as_sentences(module, "sglang_backup_store"):
        p, check = module.params, module.check_mode
        store = Store(p["dir"], p["files"])
        result = {"changed": False, "pruned": [], "cleaned": []}
        try:
            if p["keep"] < 1:
                raise StoreError("sglang_backup_keep is %d: keep at least 1 entry. Set sglang_backup_keep to 1 or "
                                 "more." % p["keep"])
            if check:  # writes nothing, so it needs no lock: entries and manifests appear whole, by rename
                _change(store, p, check, result)
            else:
                doing = p["state"] + (" of " + p["name"] if p["state"] == "restore" else "")
                with store.locked("sglang_backup_store " + doing, p["lock_owner"], p["lock_timeout"]):
                    result["recovered"] = store.recover()  # a restore a killed run left: finished before all else
                    result["cleaned"] = store.clean_stale()
                    _change(store, p, check, result)
        except StoreError as error:
            module.fail_json(msg=str(error), **result)
        except OSError as error:  # e.g. a full disk under the store: entries and manifests appear by rename
            module.fail_json(msg="The backup store %s could not be changed (%s of %s): %s. No half entry is left "
                                 "(entries and manifests appear whole, by rename)." % (
                                     p["dir"], p["state"], p["name"] or "the live state", error), **result)
        result["changed"] = (result["changed"] or bool(result["pruned"]) or bool(result["cleaned"])
                             or bool(result.get("recovered")))
        result.update(store_facts(store))
        for bad in result["corrupt"]:
            module.warn("Backup store entry %s skipped: %s." % (bad["path"], bad["problem"]))
        for odd in result["skipped"]:
            module.warn("%s %s." % (odd["path"], odd["problem"]))
        if result.get("recovered"):
            module.warn("A restore killed between its renames was rolled %s: the live files are entry %s's."
                        % (result["recovered"]["direction"], result["recovered"]["entry"]))
        module.exit_json(**result)


if __name__ == "__main__":
    main()
