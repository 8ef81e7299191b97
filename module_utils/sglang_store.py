"""The SGLang backup store's files: one folder per distinct state (unit, env file, config) with its manifest, written
whole or not at all. Shared by sglang_backup_store (which changes it) and sglang_backup_store_info (which reads it)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from datetime import UTC, datetime

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


def store_facts(store):
    """What both modules return about the store: its entries, the live state's entry and the last proven one."""
    entries, current, last_proven = store.view()[:3]
    return {"entries": entries, "current": current, "last_proven": last_proven}
