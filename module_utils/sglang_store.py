"""The SGLang backup store's files: one folder per distinct state (unit, env file, config) with its manifest, written
whole or not at all. Shared by sglang_backup_store (which changes it) and sglang_backup_store_info (which reads it)."""

from __future__ import annotations

import json
import os
import re
import shutil
from contextlib import contextmanager
from datetime import datetime, timezone

from ansible.module_utils.sglang_files import copy_atomic, write_atomic
from ansible.module_utils.sglang_files import sha256 as digest
from ansible.module_utils.sglang_store_lock import LOCK, LockBusy, held
from ansible.module_utils.sglang_store_swap import SwapError, leftovers, swap

# datetime.UTC is Python 3.11+: these run on the hosts, whose Python can be older (Ubuntu 22.04: 3.10)
UTC = timezone.utc  # noqa: UP017

MANIFEST = "backup.json"
FORMAT = 1


class StoreError(Exception):
    pass


def live_digests(files):
    return {os.path.basename(path): digest(path) for path in files}


def context_target_of(unit_text):
    """--context-length from a unit, quoted ("--context-length" "200000") or not; 0 when absent."""
    found = re.search(r'--context-length"?\s+"?([0-9]+)', unit_text or "")
    return int(found.group(1)) if found else 0


def write_json(path, data):
    """Replace path whole (a reader never sees half a manifest), readable by its owner only."""
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n", 0o600)


# -- decisions (plain functions over manifests; the Store below performs them) ---------------------------------
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _kind(value):
    if value is None:
        return "null"
    return {list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__)


def manifest_problem(meta):
    """Why a parsed backup.json cannot describe a state (one phrase), or None when it can. Unknown keys are the
    caller's (a runtime, a plan, ...) and pass through untouched."""
    if not isinstance(meta, dict):
        return "%s holds %s, not an object" % (MANIFEST, _kind(meta))
    files = meta.get("files")
    if not isinstance(files, dict) or not files:
        return "%s has no files (the state's file names and sha256), it has %s" % (
            MANIFEST, "none" if "files" not in meta else _kind(files))
    for name, sha in files.items():
        if sha is not None and not (isinstance(sha, str) and _SHA256.match(sha)):
            return "%s: files[%s] is %s, not a sha256 or null" % (MANIFEST, name, _kind(sha))
        if "/" in name or name in ("", ".", "..", MANIFEST):
            return "%s: files names %r, not a file of the entry" % (MANIFEST, name)
    fmt = meta.get("format", FORMAT)
    if not isinstance(fmt, int) or isinstance(fmt, bool) or fmt > FORMAT:
        return "%s: format is %r, which this store (format %d) does not read" % (MANIFEST, fmt, FORMAT)
    if meta.get("proven") is not None and not isinstance(meta["proven"], dict):
        return "%s: proven is %s, not an object or null" % (MANIFEST, _kind(meta["proven"]))
    target = meta.get("context_target")
    if target is not None and (not isinstance(target, int) or isinstance(target, bool)):
        return "%s: context_target is %s, not a whole number" % (MANIFEST, _kind(target))
    return None


def newest_proven(entries, other_than=None):
    """The first proven entry of entries (newest first) whose name is not other_than, or None."""
    return next((e["name"] for e in entries if e.get("proven") and e["name"] != other_than), None)


def to_prune(entries, keep, current, protect=()):
    """Names of the entries a prune removes. Kept: the newest `keep` entries, and besides them always the live
    state's entry, the newest proven entry, the newest proven entry other than the live one (what a rollback and the
    rescue go back to: so after a successful deploy, keep 1 still leaves the state proven before it), and the
    protected ones. Entries with a corrupt manifest are not in entries: never pruned, left for a person."""
    if keep < 1:
        raise StoreError("sglang_backup_keep is %r: keep at least 1 entry (the store would delete what a "
                         "rollback needs). Set sglang_backup_keep to 1 or more." % (keep,))
    kept = {e["name"] for e in entries[:keep]} | set(protect)
    kept |= {current, newest_proven(entries), newest_proven(entries, other_than=current)}
    return [e["name"] for e in entries if e["name"] not in kept]


def restore_plan(entry, files, live_sha):
    """What restoring entry does to the live files: [(dest, 'write'|'remove'|'same')]. A file the entry's state
    lacks is removed (the entry is the whole state); live_sha(dest) is the live file's sha256 or None."""
    plan = []
    for dest in files:
        want = entry["files"].get(os.path.basename(dest))
        have = live_sha(dest)
        plan.append((dest, "same" if want == have else "remove" if want is None else "write"))
    return plan


class Store:
    def __init__(self, folder, files, now=None):
        self.dir, self.files = folder, list(files)
        self.now = now or (lambda: datetime.now(UTC))

    # -- reading ---------------------------------------------------------------------------------
    def _read(self, path):
        """(manifest, None) or (None, problem) for one entry folder."""
        manifest = os.path.join(path, MANIFEST)
        if not os.path.lexists(manifest):  # an entry made before the store kept manifests: described from its files
            return {"reason": "an entry without a manifest (made before the store had one)",
                    "files": {os.path.basename(f): digest(os.path.join(path, os.path.basename(f)))
                              for f in self.files}}, None
        try:
            with open(manifest, encoding="utf-8") as handle:
                meta = json.load(handle)
        except ValueError as error:
            return None, "%s is not JSON (%s)" % (MANIFEST, error)
        except OSError as error:
            return None, "%s cannot be read (%s)" % (MANIFEST, error.strerror or error)
        problem = manifest_problem(meta)
        if problem is None:
            missing = [n for n, sha in meta["files"].items() if sha and not os.path.isfile(os.path.join(path, n))]
            if missing:
                problem = "its manifest names %s, which the folder lacks" % ", ".join(sorted(missing))
        return (None, problem) if problem else (meta, None)

    def scan(self):
        """(entries newest first, corrupt [{name, path, problem}]). Names are UTC timestamps: they sort by time."""
        if not os.path.isdir(self.dir):
            return [], []
        found, corrupt = [], []
        for name in sorted(os.listdir(self.dir), reverse=True):
            path = os.path.join(self.dir, name)
            if name.startswith(".") or not os.path.isdir(path):
                continue
            meta, problem = self._read(path)
            if problem:
                corrupt.append({"name": name, "path": path, "problem": problem})
                continue
            if not meta.get("context_target"):
                unit = os.path.join(path, os.path.basename(self.files[0]))
                meta["context_target"] = context_target_of(open(unit, encoding="utf-8").read()) \
                    if os.path.isfile(unit) else 0
            meta.update(name=name, path=path)
            meta.setdefault("proven", None)
            found.append(meta)
        return found, corrupt

    def entries(self):
        return self.scan()[0]

    def view(self, entries=None):
        """(entries with `current` marked, the live state's entry, the newest proven other than it, the newest
        proven); entries: scan()'s, when the caller has them already."""
        live = live_digests(self.files)
        entries = self.entries() if entries is None else entries
        current = None
        if any(live.values()):
            current = next((e["name"] for e in entries if e["files"] == live), None)
        for e in entries:
            e["current"] = e["name"] == current
        return entries, current, newest_proven(entries, other_than=current), newest_proven(entries)

    # -- the lock and what a dead run left ---------------------------------------------------------
    @contextmanager
    def locked(self, doing, owner=None, timeout=10.0):
        """Hold the store's lock (creating the store) for a block that changes it; StoreError names the holder."""
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        os.chmod(self.dir, 0o700)
        try:
            with held(os.path.join(self.dir, LOCK), doing, owner, timeout) as holder:
                yield holder
        except LockBusy as busy:
            raise StoreError("The backup store %s is in use by another run: %s. Run again when it has finished "
                             "(its lock goes with its process: a run that died holds nothing)." % (self.dir, busy)) \
                from None

    def clean_stale(self):
        """Under the lock: remove what a run that died left (no other run can be writing it). A staged restore copy
        and an interrupted snapshot hold nothing the store lacks; a displaced original is removed only when an
        entry holds the same file, else it stays for a person. Returns the paths removed."""
        removed = []
        for name in os.listdir(self.dir) if os.path.isdir(self.dir) else []:
            if name.startswith(".incoming-"):
                shutil.rmtree(os.path.join(self.dir, name), ignore_errors=True)
                removed.append(os.path.join(self.dir, name))
        held_sha = {(n, sha) for e in self.entries() for n, sha in e["files"].items()}
        for dest in self.files:
            for path, kind in leftovers(dest):
                if kind == "new" or (kind == "old" and (os.path.basename(dest), digest(path)) in held_sha):
                    os.unlink(path)
                    removed.append(path)
        return removed

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
        current = self.view()[1]
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
        try:
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
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)  # a full disk: no half entry stays behind
            raise
        return name, True

    def prune(self, keep, protect, check_mode=False):
        entries, current = self.view()[:2]
        doomed = to_prune(entries, keep, current, protect)
        if not check_mode:
            for name in doomed:
                shutil.rmtree(os.path.join(self.dir, name))
        return doomed

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

    def _entry(self, name):
        entries, corrupt = self.scan()
        entry = next((e for e in entries if e["name"] == name), None)
        if entry is not None:
            return entry
        bad = next((c for c in corrupt if c["name"] == name), None)
        if bad is not None:
            raise StoreError("Entry %s in %s cannot be restored: %s. Restore another entry (%s), or repair or "
                             "remove that folder." % (name, self.dir, bad["problem"],
                                                      ", ".join(e["name"] for e in entries) or "none"))
        raise StoreError("No entry %s in %s. Entries: %s." % (name, self.dir,
                         ", ".join(e["name"] for e in entries) or "none"))

    def restore(self, name, check_mode=False):
        """Put entry name's whole state back: every file it holds, and no file it lacks. All or nothing (see
        sglang_store_swap). Returns (name, changed, {restored, removed}) with the live paths written and removed."""
        entry = self._entry(name)
        unit = os.path.basename(self.files[0])
        if not entry["files"].get(unit):
            raise StoreError("%s holds no %s: not a state of this service." % (entry["path"], unit))
        plan = restore_plan(entry, self.files, digest)
        report = {"restored": [d for d, a in plan if a == "write"], "removed": [d for d, a in plan if a == "remove"]}
        if not report["restored"] and not report["removed"]:
            return name, False, report
        if check_mode:
            return name, True, report
        for dest, action in plan:  # the entry's copies must be what its manifest recorded
            kept = os.path.join(entry["path"], os.path.basename(dest))
            if action == "write" and digest(kept) != entry["files"][os.path.basename(dest)]:
                raise StoreError("Entry %s is damaged: its %s differs from its manifest's sha256; nothing was "
                                 "restored." % (name, os.path.basename(dest)))
        if self.view()[1] is None:  # never replace a state the store does not hold (the caller's snapshot usually did)
            self.add({"reason": "replaced by a restore of %s (kept by the restore itself)" % name})
        try:
            swap([(d, os.path.join(entry["path"], os.path.basename(d)) if a == "write" else None)
                  for d, a in plan if a != "same"])
        except SwapError as error:
            raise StoreError("The restore of %s failed: %s. The store still holds every entry." % (name, error)) \
                from None
        return name, True, report


def store_facts(store):
    """What both modules return about the store: its entries, the live state's entry, the last proven one, and the
    entries skipped for a corrupt manifest."""
    entries, corrupt = store.scan()
    entries, current, last_proven = store.view(entries)[:3]
    return {"entries": entries, "current": current, "last_proven": last_proven, "corrupt": corrupt}
