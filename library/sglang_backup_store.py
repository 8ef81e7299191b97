#!/usr/bin/python
"""Ansible module: the SGLang backup store, a folder of timestamped states (unit, env file, config) with manifests."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_backup_store
short_description: Keep, list, mark proven and restore the states of an SGLang service (unit, env file, config)
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
  - C(list) changes nothing.
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
    choices: [list, snapshot, proven, restore]
    default: list
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

- name: Which states were proven
  sglang_backup_store:
    dir: /var/backups/sglang
    files: [/etc/systemd/system/sglang.service, /etc/sglang/sglang.env, /etc/sglang/sglang.yaml]
  register: store
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

import hashlib
import json
import os
import re
import shutil
from datetime import UTC, datetime

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences
from ansible.module_utils.sglang_files import copy_atomic, write_atomic

MANIFEST = "backup.json"
FORMAT = 1


class StoreError(Exception):
    pass


def digest(path):
    """sha256 of a file, or None when it does not exist."""
    if not os.path.isfile(path):
        return None
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 16), b""):
            sha.update(block)
    return sha.hexdigest()


def live_digests(files):
    return {os.path.basename(path): digest(path) for path in files}


def context_target_of(unit_text):
    """--context-length from a unit, quoted ("--context-length" "200000") or not; 0 when absent."""
    found = re.search(r'--context-length"?\s+"?([0-9]+)', unit_text or "")
    return int(found.group(1)) if found else 0


def write_json(path, data):
    """Replace path whole (a reader never sees half a manifest), readable by its owner only."""
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n", 0o600)


class Store:
    def __init__(self, folder, files, now=None):
        self.dir, self.files = folder, list(files)
        self.now = now or (lambda: datetime.now(UTC))

    # -- reading ---------------------------------------------------------------------------------
    def entries(self):
        """Manifests, newest first (names are UTC timestamps, so they sort by time)."""
        if not os.path.isdir(self.dir):
            return []
        found = []
        for name in sorted(os.listdir(self.dir), reverse=True):
            path = os.path.join(self.dir, name)
            if name.startswith(".") or not os.path.isdir(path):
                continue
            meta = {}
            try:
                with open(os.path.join(path, MANIFEST), encoding="utf-8") as handle:
                    meta = json.load(handle)
            except (OSError, ValueError):
                meta = {"reason": "an entry without a readable manifest (made before the store had one)"}
            if not isinstance(meta.get("files"), dict):  # an older entry: describe what it holds
                meta["files"] = {os.path.basename(f): digest(os.path.join(path, os.path.basename(f)))
                                 for f in self.files}
            if not meta.get("context_target"):
                unit = os.path.join(path, os.path.basename(self.files[0]))
                meta["context_target"] = context_target_of(open(unit, encoding="utf-8").read()) \
                    if os.path.isfile(unit) else 0
            meta.update(name=name, path=path)
            meta.setdefault("proven", None)
            found.append(meta)
        return found

    def view(self):
        live = live_digests(self.files)
        entries = self.entries()
        current = None
        if any(live.values()):
            current = next((e["name"] for e in entries if e["files"] == live), None)
        for e in entries:
            e["current"] = e["name"] == current
        last_proven = next((e["name"] for e in entries if e["proven"] and not e["current"]), None)
        newest_proven = next((e["name"] for e in entries if e["proven"]), None)
        return entries, current, last_proven, newest_proven

    # -- writing ---------------------------------------------------------------------------------
    def _new_name(self):
        base = name = self.now().strftime("%Y%m%dT%H%M%S%fZ")
        count = 0
        while os.path.exists(os.path.join(self.dir, name)):  # two snapshots in one microsecond
            count += 1
            name = "%s-%d" % (base, count)
        return name

    def add(self, manifest, check_mode=False):
        """Add the live state unless an entry holds it; (name, changed)."""
        entries, current = self.view()[:2]
        if current:
            return current, False
        live = live_digests(self.files)
        if not any(live.values()):
            return None, False
        name = self._new_name()
        if check_mode:
            return name, True
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        os.chmod(self.dir, 0o700)
        tmp = os.path.join(self.dir, ".incoming-" + name)
        os.mkdir(tmp, 0o700)
        for path in self.files:
            if os.path.isfile(path):
                copy_atomic(path, os.path.join(tmp, os.path.basename(path)))
        meta = dict(manifest)
        meta.update(format=FORMAT, created_at=self.now().isoformat(), files=live)
        if not meta.get("context_target") and os.path.isfile(self.files[0]):
            meta["context_target"] = context_target_of(open(self.files[0], encoding="utf-8").read())
        meta.setdefault("proven", None)
        write_json(os.path.join(tmp, MANIFEST), meta)
        os.rename(tmp, os.path.join(self.dir, name))
        return name, True

    def prune(self, keep, protect, check_mode=False):
        if keep < 1:
            raise StoreError("sglang_backup_keep is %r: keep at least 1 entry (the store would delete what a "
                             "rollback needs). Set sglang_backup_keep to 1 or more." % (keep,))
        entries, current, _last, newest_proven = self.view()
        kept = {e["name"] for e in entries[:keep]} | {current, newest_proven} | set(protect)
        doomed = [e for e in entries if e["name"] not in kept]
        if not check_mode:
            for e in doomed:
                shutil.rmtree(e["path"])
            for name in os.listdir(self.dir) if os.path.isdir(self.dir) else []:
                if name.startswith(".incoming-"):  # left by an interrupted snapshot
                    shutil.rmtree(os.path.join(self.dir, name), ignore_errors=True)
        return [e["name"] for e in doomed]

    def mark_proven(self, proof, manifest, check_mode=False):
        name, changed = self.add(manifest, check_mode)
        if name is None:
            raise StoreError("There is no live state to mark proven: %s missing." % ", ".join(self.files))
        if changed and check_mode:
            return name, True
        path = os.path.join(self.dir, name, MANIFEST)
        entry = next(e for e in self.entries() if e["name"] == name)
        if entry.get("proven"):
            return name, changed
        if not check_mode:
            stored = {k: v for k, v in entry.items() if k not in ("name", "path", "current")}
            stored["proven"] = dict(proof, at=proof.get("at") or self.now().isoformat())
            write_json(path, stored)
        return name, True

    def restore(self, name, check_mode=False):
        entries = self.view()[0]
        entry = next((e for e in entries if e["name"] == name), None)
        if entry is None:
            raise StoreError("No entry %s in %s. Entries: %s." % (name, self.dir,
                             ", ".join(e["name"] for e in entries) or "none"))
        unit = os.path.join(entry["path"], os.path.basename(self.files[0]))
        if not os.path.isfile(unit):
            raise StoreError("%s holds no %s: not a state of this service." % (entry["path"],
                             os.path.basename(self.files[0])))
        changed = False
        for path in self.files:
            kept = os.path.join(entry["path"], os.path.basename(path))
            if os.path.isfile(kept) and digest(kept) != digest(path):
                changed = True
                if not check_mode:
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    copy_atomic(kept, path)
        return name, changed


def main():
    module = AnsibleModule(argument_spec={
        "dir": {"type": "path", "required": True},
        "files": {"type": "list", "elements": "path", "required": True},
        "state": {"type": "str", "default": "list", "choices": ["list", "snapshot", "proven", "restore"]},
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
        entries, current, last_proven = store.view()[:3]
        result.update(entries=entries, current=current, last_proven=last_proven)
        module.exit_json(**result)


if __name__ == "__main__":
    main()
