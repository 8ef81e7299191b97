"""The SGLang backup store's files: one folder per distinct state (unit, env file, config) with its manifest, written
whole or not at all. Shared by sglang_backup_store (which changes it) and sglang_backup_store_info (which reads it)."""

from __future__ import annotations

import json
import os
import re
import shutil
from contextlib import contextmanager
from datetime import datetime, timezone

from ansible.module_utils.sglang_files import copy_atomic, load_json, read_plain, write_atomic
from ansible.module_utils.sglang_files import sha256 as digest
from ansible.module_utils.sglang_store_lock import LOCK, LockBusy, LockNotAFile, held
from ansible.module_utils.sglang_store_swap import SwapError, leftovers, swap

# datetime.UTC is Python 3.11+: these run on the hosts, whose Python can be older (Ubuntu 22.04: 3.10)
UTC = timezone.utc  # noqa: UP017

MANIFEST = "backup.json"
FORMAT = 1
# Written before a restore's first rename and removed after its last: a run that finds it finishes (or undoes) that
# restore before anything else, so a kill -9 mid-restore never leaves the live files mixing two states.
JOURNAL = ".restore-journal.json"


class StoreError(Exception):
    pass


def live_digests(files):
    return {os.path.basename(path): digest(path) for path in files}


def unit_context_target(path):
    """context_target_of a unit file; 0 when it is not a small regular file (odd bytes are read as U+FFFD)."""
    try:
        return context_target_of(read_plain(path, follow=True).decode("utf-8", "replace"))
    except OSError:
        return 0


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


def _parsed_time(text):
    """An ISO time as an aware datetime (a naive one is UTC), or None when it is not one."""
    try:
        when = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _name_time(name):
    """The time an entry's name says it was made (names are UTC timestamps, maybe with a -N suffix), or None."""
    try:
        return datetime.strptime(str(name).split("-", maxsplit=1)[0], "%Y%m%dT%H%M%S%fZ").replace(tzinfo=UTC)
    except ValueError:
        return None


_NEVER = datetime.min.replace(tzinfo=UTC)


def proof_time(entry):
    """When entry last served proven: its proof's `at`, which every proof and every proven restore moves forward
    (a manifest from before that holds its first proof's time there, the best it knows). An `at` that is not a time
    counts as the entry's own making, never as newer than a real proof."""
    proven = entry.get("proven") if isinstance(entry.get("proven"), dict) else {}
    return (_parsed_time(proven.get("at")) or _name_time(entry.get("name")) or _parsed_time(entry.get("created_at"))
            or _NEVER)


def newest_proven(entries, other_than=None):
    """The proven entry that served, proven, most recently (the newest proof time; of equal ones the newer entry),
    whose name is not other_than, or None. entries: newest first, as scan() lists them."""
    proven = [e for e in entries if e.get("proven") and e["name"] != other_than]
    # max() keeps the first of equal keys: entries are newest first, so the newer entry wins a tie
    return max(proven, key=proof_time)["name"] if proven else None


def refreshed_proof(stored, proof, now):
    """The `proven` an entry keeps after one more proof, or None when that proof proves nothing new.

    stored: the entry's `proven` (None when never proven); proof: this proof's fields, its `level` `full` (the long
    prompt at the target: what makes a state proven) or `check` (a short prompt on a state proven in full before:
    it moves the time, never proves an unproven state); now: this proof's time, an ISO string. The newest proof's
    time is `at` (what "last proven" orders by); the first one's stays in `first_at`; a check keeps the full proof's
    measurements."""
    level = proof.get("level") or "full"
    if level not in ("full", "check"):
        raise StoreError("The proof to record has level %r; it is 'full' or 'check'." % (level,))
    if level == "check" and not stored:
        return None
    first = (stored or {}).get("first_at") or (stored or {}).get("at") or now
    fields = dict(stored) if level == "check" else {k: v for k, v in proof.items() if k != "at"}
    fields.update(at=now, first_at=first, level=level)
    return fields


def to_prune(entries, keep, current, protect=()):
    """Names of the entries a prune removes. Kept: the newest `keep` entries, and besides them always the live
    state's entry, the entry proven most recently, the one proven most recently other than the live one (what a
    rollback and the rescue go back to: so after a successful deploy, keep 1 still leaves the state proven before
    it), and the protected ones. Entries with a corrupt manifest are not in entries: never pruned, left for a person."""
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
        self.unmarked = set()  # entries without the store's manifest (older stores): listed, never pruned
        self.skipped = []  # [{path, problem}]: odd items the store did not make, named and left alone

    def _skip(self, path, problem):
        if not any(item["path"] == path for item in self.skipped):
            self.skipped.append({"path": path, "problem": problem})

    # -- reading ---------------------------------------------------------------------------------
    def _read(self, path):
        """(manifest, None) or (None, problem) for one entry folder."""
        manifest = os.path.join(path, MANIFEST)
        if not os.path.lexists(manifest):  # an entry made before the store kept manifests: described from its files
            return {"reason": "an entry without a manifest (made before the store had one)",
                    "files": {os.path.basename(f): digest(os.path.join(path, os.path.basename(f)))
                              for f in self.files}}, None
        try:
            meta = load_json(manifest)  # a regular file of bounded size, never through a link
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
        self.unmarked = set()
        unit_name = os.path.basename(self.files[0])
        for name in sorted(os.listdir(self.dir), reverse=True):
            path = os.path.join(self.dir, name)
            if name.startswith("."):
                continue
            if os.path.islink(path):
                corrupt.append({"name": name, "path": path,
                                "problem": "it is a symbolic link, not an entry folder the store made"})
                continue
            if not os.path.isdir(path):
                continue
            unit = os.path.join(path, unit_name)
            marked = os.path.lexists(os.path.join(path, MANIFEST))
            if not marked and (os.path.islink(unit) or not os.path.isfile(unit)):
                continue  # no manifest and no unit: a folder of something else sharing this folder, never touched
            meta, problem = self._read(path)
            if problem:
                corrupt.append({"name": name, "path": path, "problem": problem})
                continue
            if not marked:
                self.unmarked.add(name)
            if not meta.get("context_target"):
                meta["context_target"] = unit_context_target(unit) if os.path.isfile(unit) else 0
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
        self._make_dir()
        try:
            with held(os.path.join(self.dir, LOCK), doing, owner, timeout) as holder:
                yield holder
        except LockNotAFile as odd:
            raise StoreError("The backup store %s cannot be locked: %s. Remove it; the store makes its own lock "
                             "file." % (self.dir, odd)) from None
        except LockBusy as busy:
            raise StoreError("The backup store %s is in use by another run: %s. Run again when it has finished "
                             "(its lock goes with its process: a run that died holds nothing)." % (self.dir, busy)) \
                from None

    def _make_dir(self):
        """Create the store 0700 (it holds the API key). A folder that exists is the operator's: its mode is theirs
        (it may be shared; the entries inside are 0700 either way)."""
        if not os.path.isdir(self.dir):
            os.makedirs(self.dir, mode=0o700, exist_ok=True)
            os.chmod(self.dir, 0o700)

    def clean_stale(self):
        """Under the lock: remove what a run that died left (no other run can be writing it). A staged restore copy
        and an interrupted snapshot hold nothing the store lacks; a displaced original is removed only when an
        entry holds the same file, else it stays for a person. Returns the paths removed."""
        removed = []
        for name in os.listdir(self.dir) if os.path.isdir(self.dir) else []:
            path = os.path.join(self.dir, name)
            if name.startswith(".incoming-"):
                if os.path.islink(path) or not os.path.isdir(path):
                    self._skip(path, "is not a folder a snapshot made (left alone: remove it by hand)")
                    continue
                shutil.rmtree(path, ignore_errors=True)
                if not os.path.lexists(path):
                    removed.append(path)
        held_sha = {(n, sha) for e in self.entries() for n, sha in e["files"].items()}
        for dest in self.files:
            for path, kind in leftovers(dest):
                if not os.path.isfile(path) or os.path.islink(path):
                    self._skip(path, "is named like a restore's copy but is not a regular file (left alone: remove "
                                     "it by hand)")
                elif kind == "new" or (kind == "old" and (os.path.basename(dest), digest(path)) in held_sha):
                    os.unlink(path)
                    removed.append(path)
                elif kind == "old":
                    self._skip(path, "is the original of %s displaced by a restore that died, and no entry holds it "
                                     "(kept for a person: compare it with %s, then remove it)" % (dest, dest))
        return removed

    # -- a restore a killed run left half done -----------------------------------------------------
    def journal_path(self):
        return os.path.join(self.dir, JOURNAL)

    def recover(self):
        """Under the lock, before anything else: a journal means a restore was killed between its renames. Roll it
        forward (the entry it restored) or, when that entry cannot be put back whole, back (the entry of the state
        it replaced, which the restore stored first). Returns {entry, direction} or None; the live files are then
        exactly that entry's."""
        path = self.journal_path()
        if not os.path.lexists(path):
            return None
        try:
            journal = load_json(path)
        except (OSError, ValueError) as error:
            raise StoreError("%s, the journal of a restore that did not finish, cannot be read (%s), so the live files "
                             "%s may mix two states. Remove it, then restore one whole entry: playbooks/rollback.yml "
                             "-e sglang_rollback_to=<entry> (-e sglang_rollback_list=true lists them)."
                             % (path, getattr(error, "strerror", None) or error, ", ".join(self.files))) from None
        entries = {e["name"]: e for e in self.entries()}
        why = []
        for direction, key in (("forward", "to"), ("back", "from")):
            target = journal.get(key) if isinstance(journal, dict) else None
            entry = entries.get(target) if isinstance(target, str) else None
            if entry is None:
                why.append("%s is not a readable entry" % (target,))
                continue
            plan = restore_plan(entry, self.files, digest)
            problem = self._unrestorable(entry, plan)
            if problem:
                why.append(problem)
                continue
            try:
                swap([(d, os.path.join(entry["path"], os.path.basename(d)) if a == "write" else None)
                      for d, a in plan if a != "same"])
            except SwapError as error:
                raise StoreError("Finishing the restore of %s that a killed run left failed: %s. The journal %s stays, "
                                 "so the next run tries again." % (target, error, path)) from None
            os.unlink(path)
            return {"entry": target, "direction": direction}
        raise StoreError("A restore was killed mid-way (journal %s), and neither the entry it restored nor the one it "
                         "replaced can be put back whole (%s). Restore another entry by hand after removing the "
                         "journal: playbooks/rollback.yml -e sglang_rollback_to=<entry>."
                         % (path, "; ".join(why) or "the journal names none"))

    def _unrestorable(self, entry, plan):
        """Why entry cannot be restored whole (a phrase), or None."""
        unit = os.path.basename(self.files[0])
        if not entry["files"].get(unit):
            return "%s holds no %s: not a state of this service" % (entry["path"], unit)
        for dest, action in plan:  # the entry's copies must be what its manifest recorded
            kept = os.path.join(entry["path"], os.path.basename(dest))
            if action == "write" and digest(kept) != entry["files"][os.path.basename(dest)]:
                return "its %s differs from its manifest's sha256" % os.path.basename(dest)
        return None

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
        self._make_dir()
        tmp = os.path.join(self.dir, ".incoming-" + name)
        os.mkdir(tmp, 0o700)
        try:
            for path in self.files:
                if os.path.isfile(path):
                    copy_atomic(path, os.path.join(tmp, os.path.basename(path)))
            meta = dict(manifest)
            meta.update(format=FORMAT, created_at=self.now().isoformat(), files=live)
            if not meta.get("context_target") and os.path.isfile(self.files[0]):
                meta["context_target"] = unit_context_target(self.files[0])
            meta.setdefault("proven", None)
            write_json(os.path.join(tmp, MANIFEST), meta)
            os.rename(tmp, os.path.join(self.dir, name))
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)  # a full disk: no half entry stays behind
            raise
        return name, True

    def prune(self, keep, protect, check_mode=False):
        entries, current = self.view()[:2]
        # only entries the store made and marked with its manifest: an older, unmarked one is left for a person
        doomed = [n for n in to_prune(entries, keep, current, protect) if n not in self.unmarked]
        if not check_mode:
            for name in doomed:
                shutil.rmtree(os.path.join(self.dir, name))
        return doomed

    def mark_proven(self, proof, manifest, check_mode=False):
        """Record a passed proof on the live state's entry (added first if no entry holds it): the proof's time
        becomes the entry's `at`, so the state that served proven most recently is the last proven one
        (refreshed_proof()). A check on a state never proven in full marks nothing. Returns (name, changed)."""
        name, changed = self.add(manifest, check_mode)
        if name is None:
            raise StoreError("There is no live state to mark proven: %s missing." % ", ".join(self.files))
        if changed and check_mode:
            return name, True
        entry = next(e for e in self.entries() if e["name"] == name)
        proven = refreshed_proof(entry.get("proven"), proof, proof.get("at") or self.now().isoformat())
        if proven is None:
            return name, changed
        if not check_mode:
            stored = {k: v for k, v in entry.items() if k not in ("name", "path", "current")}
            stored["proven"] = proven
            write_json(os.path.join(self.dir, name, MANIFEST), stored)
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
        problem = self._unrestorable(entry, plan)
        if problem:
            raise StoreError("Entry %s is damaged: %s; nothing was restored." % (name, problem))
        before = self.view()[1]
        if before is None:  # never replace a state the store does not hold (the caller's snapshot usually did)
            before = self.add({"reason": "replaced by a restore of %s (kept by the restore itself)" % name})[0]
        # before the first rename: what to finish, or undo, if this process is killed between the renames
        try:
            write_json(self.journal_path(), {"format": FORMAT, "to": name, "from": before, "files": self.files})
        except OSError as error:
            raise StoreError("The restore of %s failed: writing its journal failed (%s); the live files were not "
                             "touched." % (name, error)) from None
        try:
            swap([(d, os.path.join(entry["path"], os.path.basename(d)) if a == "write" else None)
                  for d, a in plan if a != "same"])
        except SwapError as error:
            if not error.lost:  # every original is back: nothing left to finish
                os.unlink(self.journal_path())
            raise StoreError("The restore of %s failed: %s. The store still holds every entry." % (name, error)) \
                from None
        os.unlink(self.journal_path())
        return name, True, report


def entry_lines(entries, last_proven):
    """One line per entry, for people (playbooks/rollback.yml lists them): its name, context, proof, release, and
    whether it serves now or is what a rollback restores by default."""
    lines = []
    for entry in entries:
        proven = entry.get("proven")
        line = "%s: context %s" % (entry.get("name"), entry.get("context_target"))
        if proven:
            line += ", PROVEN %s (pool %s, prompt %s tokens)" % (
                proven.get("at"), proven.get("pool_tokens", "?"), proven.get("prompt_tokens", "?"))
        else:
            line += ", not proven"
        release = (entry.get("versions") or {}).get("sglang") if isinstance(entry.get("versions"), dict) else None
        line += ", sglang %s" % release if release else ""
        line += " [serving now]" if entry.get("current") else ""
        line += " [rollback default]" if entry.get("name") == last_proven else ""
        lines.append("%s - %s" % (line, entry.get("reason", "")))
    return lines


def store_facts(store):
    """What both modules return about the store: its entries, the live state's entry, the last proven one, the
    entries skipped for a corrupt manifest, and one line per entry for people."""
    entries, corrupt = store.scan()
    entries, current, last_proven = store.view(entries)[:3]
    return {"entries": entries, "current": current, "last_proven": last_proven, "corrupt": corrupt,
            "lines": entry_lines(entries, last_proven),
            "skipped": list(store.skipped),
            "interrupted_restore": os.path.lexists(store.journal_path())}
