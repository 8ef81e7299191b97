"""The store under faults (issue 17 item 3): a full disk mid-restore, a file the entry lacks, corrupt manifests,
what a dead run left. Each ends with the last proven state restorable and every other entry intact."""

import errno
import hashlib
import json
import os
import re
import shutil

import pytest
import sglang_backup_store as module
from ansible.module_utils import sglang_store

SHA = "a" * 64


def tree(folder):
    """sha256 of every file under folder, by relative path: 'every entry intact' means this is unchanged."""
    out = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            out[os.path.relpath(path, folder)] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    return out


def hidden_beside(files):
    return sorted(n for d in {os.path.dirname(str(f)) for f in files} for n in os.listdir(d) if n.startswith("."))


@pytest.fixture
def host(tmp_path):
    """A store with a proven state A (unit, env, config) and a newer live state B (snapshotted, not proven)."""
    etc = tmp_path / "etc"
    etc.mkdir()
    files = [etc / "sglang.service", etc / "sglang.env", etc / "sglang.yaml"]
    ticks = iter(range(10**6))
    store = sglang_store.Store(str(tmp_path / "backups"), [str(f) for f in files],
                               now=lambda: sglang_store.datetime(2026, 11, 29, 14, 0, next(ticks) % 60,
                                                                 tzinfo=sglang_store.UTC))

    def deploy(target, env="A=1\n", key="k"):
        files[0].write_text('ExecStart=/x "--context-length" "%d"\n' % target)
        files[1].write_text(env)
        files[2].write_text('api-key: "%s"\n' % key)
        os.chmod(files[2], 0o640)

    deploy(200_000)
    proven, _ = store.mark_proven({"pool_tokens": 200_230}, {"runtime": "/opt/sglang/runtimes/r1"})
    proven_bytes = [f.read_bytes() for f in files]
    deploy(150_000, env="A=1\nLD_PRELOAD=/opt/evil.so\n", key="new")
    store.add({"reason": "deployed"})
    return store, files, proven, proven_bytes, deploy


# -- whole state or nothing ---------------------------------------------------------------------------------------
def test_a_file_the_entry_lacks_is_removed_not_kept(host):
    store, files, _, _, deploy = host
    files[1].unlink()  # a state without an env file ...
    old, _ = store.mark_proven({"pool_tokens": 1}, {})
    deploy(170_000, env="LD_PRELOAD=/opt/evil.so\n", key="new")  # ... and one that added an LD_PRELOAD since
    store.add({})
    before = tree(store.dir)
    name, changed, done = store.restore(old)
    assert changed and done == {"restored": [str(files[0])], "removed": [str(files[1])]}
    assert not files[1].exists()  # the LD_PRELOAD does not survive the restore
    assert store.view()[1] == old and tree(store.dir) == before and hidden_beside(files) == []


class Faults:
    """Counts the calls that write or rename; raises ENOSPC at the Nth (0: never)."""

    CALLS = ("fsync", "replace", "link", "rename")

    def __init__(self, monkeypatch, at):
        self.count, self.at = 0, at
        for call in self.CALLS:
            monkeypatch.setattr(os, call, self.wrap(getattr(os, call)))
        monkeypatch.setattr(shutil, "copyfileobj", self.wrap(shutil.copyfileobj))

    def wrap(self, real):
        def call(*args, **kwargs):
            self.count += 1
            if self.count == self.at:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real(*args, **kwargs)
        return call


def test_a_full_disk_at_any_write_or_rename_of_a_restore_leaves_the_live_state_whole(host, monkeypatch):
    store, files, proven, proven_bytes, _ = host
    live_bytes = [f.read_bytes() for f in files]
    entries = tree(store.dir)
    with monkeypatch.context() as patch:  # how many writes and renames a restore makes
        counter = Faults(patch, at=0)
        store.restore(proven)
        calls = counter.count
    # the journal (written, fsynced, renamed into place), then 3 files: copy and fsync each, then link and replace
    # each, then the folder's fsync
    assert calls == 15
    failures = []
    for at in range(1, calls + 1):
        for f, data in zip(files, live_bytes, strict=True):
            f.write_bytes(data)
        with monkeypatch.context() as patch:
            Faults(patch, at)
            try:
                store.restore(proven)
                failed = None
            except sglang_store.StoreError as error:
                failed = str(error)
        now = [f.read_bytes() for f in files]
        if failed is None:  # the folder's fsync after the renames is best effort: the restore is whole
            assert now == proven_bytes, at
        else:
            failures.append(at)
            assert now == live_bytes, (at, failed)  # the old state, whole: not the new env with the old unit
            assert "No space left on device" in failed and "every live file was put back" in failed \
                or "the live files were not touched" in failed, failed
        assert hidden_beside(files) == [], at  # no staged copy, no displaced original, no .tmp
        assert tree(store.dir) == entries, at
    assert failures == list(range(1, calls))  # every write and rename; only the folder's fsync is best effort


def test_an_original_that_cannot_be_put_back_stays_beside_it_and_is_named(host, monkeypatch):
    store, files, proven, proven_bytes, _ = host
    live_bytes = [f.read_bytes() for f in files]
    real = os.replace
    calls = []

    def replace(src, dest):
        if dest == store.journal_path():  # the journal is written before the first rename
            return real(src, dest)
        calls.append(dest)
        if len(calls) >= 2:  # the second rename fails, and so does every put-back
            raise OSError(errno.EIO, "I/O error")
        return real(src, dest)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(sglang_store.StoreError, match="could not be put back; the originals are kept") as error:
        store.restore(proven)
    monkeypatch.undo()
    kept = [os.path.join(os.path.dirname(str(files[0])), n) for n in hidden_beside(files) if n.endswith(".old")]
    assert len(kept) == 1 and kept[0] in str(error.value)
    assert open(kept[0], "rb").read() == live_bytes[0]  # the displaced unit is not lost
    # the journal stays: the next run finishes the restore before anything else, then cleans what is held
    assert store.recover() == {"entry": proven, "direction": "forward"}
    assert [f.read_bytes() for f in files] == proven_bytes
    assert store.clean_stale() == [kept[0]]  # the store holds that unit: the next run may remove the copy


def test_a_damaged_copy_in_the_entry_is_refused_before_anything_is_written(host):
    store, files, proven, _, _ = host
    live_bytes = [f.read_bytes() for f in files]
    with open(os.path.join(store.dir, proven, "sglang.env"), "a") as handle:
        handle.write("X=1\n")
    with pytest.raises(sglang_store.StoreError, match="damaged: its sglang.env differs"):
        store.restore(proven)
    assert [f.read_bytes() for f in files] == live_bytes and hidden_beside(files) == []


def test_a_live_state_no_entry_holds_is_kept_before_a_restore_replaces_it(host):
    store, files, proven, proven_bytes, deploy = host
    deploy(170_000, key="hand-edited")
    count = len(store.entries())
    store.restore(proven)
    entries = store.entries()
    assert len(entries) == count + 1 and entries[0]["reason"].startswith("replaced by a restore of " + proven)
    assert [f.read_bytes() for f in files] == proven_bytes


# -- corrupt manifests ---------------------------------------------------------------------------------------------
CORRUPT = {
    "null": ("null", "holds null, not an object"),
    "list": ("[]", "holds a list, not an object"),
    "string": ('"deployed"', "holds a string, not an object"),
    "not json": ('{"files": ', "is not JSON"),
    "no files": ('{"format": 1, "proven": null}', "has no files"),
    "bad sha": ('{"files": {"sglang.service": 5}}', "files[sglang.service] is a number"),
    "bad proven": ('{"files": {"sglang.service": "%s"}, "proven": "yes"}' % SHA, "proven is a string"),
    "missing copy": ('{"files": {"sglang.service": "%s"}}' % SHA, "names sglang.service, which the folder lacks"),
}


@pytest.mark.parametrize("kind", sorted(CORRUPT))
def test_a_corrupt_manifest_is_named_and_skipped_and_the_rest_works(host, kind):
    store, files, proven, proven_bytes, _ = host
    text, words = CORRUPT[kind]
    bad = os.path.join(store.dir, "20261129T235959000000Z")  # the newest entry, by name
    os.mkdir(bad)
    with open(os.path.join(bad, "backup.json"), "w") as handle:
        handle.write(text)
    others = tree(store.dir)
    entries, corrupt = store.scan()
    assert [c["name"] for c in corrupt] == ["20261129T235959000000Z"] and words in corrupt[0]["problem"]
    assert bad not in [e["path"] for e in entries]
    assert store.view()[2] == proven  # the rescue still finds the last proven state
    assert store.add({})[1] is False and store.prune(1, []) == []  # never pruned: left for a person
    refused = "20261129T235959000000Z in .* cannot be restored: .*" + re.escape(words[:8])
    with pytest.raises(sglang_store.StoreError, match=refused):
        store.restore("20261129T235959000000Z")
    assert tree(store.dir) == others
    assert store.restore(proven)[1] and [f.read_bytes() for f in files] == proven_bytes


def test_unknown_manifest_keys_pass_through(host):
    store, _, proven, _, _ = host
    entry = next(e for e in store.entries() if e["name"] == proven)
    assert entry["runtime"] == "/opt/sglang/runtimes/r1"


@pytest.mark.parametrize("meta, problem", [
    ({"files": {"sglang.service": SHA}}, None),
    ({"files": {"sglang.service": SHA, "sglang.env": None}, "proven": {"at": "x"}, "runtime": {}}, None),
    ({"files": {}}, "has no files"),
    ({"files": {"../x": SHA}}, "not a file of the entry"),
    ({"files": {"sglang.service": SHA}, "format": 2}, "format is 2"),
    ({"files": {"sglang.service": SHA}, "context_target": "200000"}, "context_target is a string"),
])
def test_manifest_problem(meta, problem):
    found = sglang_store.manifest_problem(meta)
    assert found == problem if problem is None else problem in found


# -- what a dead run left ------------------------------------------------------------------------------------------
def test_what_a_dead_run_left_is_cleaned_and_an_unheld_original_is_kept(host):
    store, files, _, _, _ = host
    entries = tree(store.dir)
    incoming = os.path.join(store.dir, ".incoming-20261129T000000000000Z")
    os.mkdir(incoming)
    open(os.path.join(incoming, "sglang.service"), "w").write("half")
    folder = os.path.dirname(str(files[0]))
    staged = os.path.join(folder, ".sglang.env.sglang-restore-dead.new")
    held_old = os.path.join(folder, ".sglang.service.sglang-restore-dead.old")
    unheld_old = os.path.join(folder, ".sglang.yaml.sglang-restore-dead.old")
    open(staged, "w").write("A=1\n")
    shutil.copy(str(files[0]), held_old)  # the store holds this unit
    open(unheld_old, "w").write("a config no entry holds\n")
    assert sorted(store.clean_stale()) == sorted([incoming, staged, held_old])
    assert os.path.exists(unheld_old) and tree(store.dir) == entries
    # kept, and said (probe day 2 N15: it stayed beside the live files with no word); the module warns with this
    said = [item["problem"] for item in store.skipped if item["path"] == unheld_old]
    assert said and "no entry holds it" in said[0] and "compare it with" in said[0], store.skipped


# -- keep ----------------------------------------------------------------------------------------------------------
def e(name, proven=False):
    return {"name": name, "proven": {"at": name} if proven else None}


@pytest.mark.parametrize("case, entries, current, protect, pruned", [
    # after a successful deploy: B is live and proven, A the proven state before it: a rollback needs A
    ("deployed", [e("B", True), e("A", True)], "B", [], []),
    ("deployed, older ones", [e("B", True), e("A", True), e("Z", True)], "B", [], ["Z"]),
    # a deploy whose proof failed and was rescued: A serves again, B stays for inspection (the newest)
    ("rescued", [e("B"), e("A", True)], "A", [], []),
    # a short-pool estimate C and the correction D, both unproven, then D proven
    ("corrected", [e("D", True), e("C"), e("A", True)], "D", [], ["C"]),
    # a rollback's source is protected, the newest proven is kept even when not live
    ("rollback", [e("D"), e("C"), e("B", True), e("A")], "D", ["A"], ["C"]),
    ("no proof yet", [e("C"), e("B"), e("A")], "C", [], ["B", "A"]),
])
def test_keep_one_always_leaves_a_proven_state_to_go_back_to(case, entries, current, protect, pruned):
    assert sglang_store.to_prune(entries, 1, current, protect) == pruned, case


def test_keep_one_after_a_successful_deploy_end_to_end(host):
    store, files, first, first_bytes, deploy = host
    deploy(160_000)
    second, _ = store.add({})
    store.prune(1, [second])
    store.mark_proven({"pool_tokens": 160_100}, {})
    store.prune(1, [second])
    names = [x["name"] for x in store.entries()]
    assert names == [second, first] and store.view()[2] == first  # something proven to roll back to
    store.restore(first)
    assert [f.read_bytes() for f in files] == first_bytes


def test_the_module_reports_restored_removed_and_corrupt(host, tmp_path):
    store, files, proven, _, _ = host
    files[1].unlink()
    os.mkdir(os.path.join(store.dir, "20261129T235959000000Z"))
    open(os.path.join(store.dir, "20261129T235959000000Z", "backup.json"), "w").write("null")
    args = {"dir": store.dir, "files": [str(f) for f in files], "state": "restore", "name": proven}
    rc, out = run_module(tmp_path, "sglang_backup_store", args)
    assert rc == 0 and out["changed"] and out["restored"] == [str(files[0]), str(files[1]), str(files[2])]
    assert out["corrupt"][0]["name"] == "20261129T235959000000Z" and out["current"] == proven
    assert "20261129T235959000000Z skipped: backup.json holds null" in json.dumps(out["warnings"])
    rc, out = run_module(tmp_path, "sglang_backup_store_info", {"dir": store.dir, "files": args["files"]})
    assert rc == 0 and out["last_proven"] is None and out["current"] == proven and len(out["corrupt"]) == 1


def run_module(tmp_path, name, args):
    import subprocess
    import sys
    path = tmp_path / ("%s.json" % name)
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    proc = subprocess.run([sys.executable, os.path.abspath(module.__file__).replace("sglang_backup_store.py",
                                                                                     name + ".py"), str(path)],
                          capture_output=True, text=True, timeout=60)
    assert "Traceback" not in proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_a_full_disk_during_a_snapshot_leaves_no_half_entry(host, monkeypatch):
    store, _, proven, _, deploy = host
    deploy(180_000)
    entries = tree(store.dir)
    with monkeypatch.context() as patch:
        Faults(patch, at=3)  # the second file's copy
        with pytest.raises(OSError, match="No space left"):
            store.add({})
    assert tree(store.dir) == entries and [n for n in os.listdir(store.dir) if n.startswith(".")] == []
    assert store.view()[2] == proven


def test_restore_plan_writes_what_differs_and_removes_what_the_entry_lacks():
    live = {"/etc/u": "1" * 64, "/etc/e": "2" * 64, "/etc/c": None, "/etc/x": "4" * 64}
    entry = {"files": {"u": "1" * 64, "e": "3" * 64, "c": "5" * 64, "x": None}}  # x: the entry's state has none
    assert sglang_store.restore_plan(entry, list(live), live.get) == [
        ("/etc/u", "same"), ("/etc/e", "write"), ("/etc/c", "write"), ("/etc/x", "remove")]
    assert sglang_store.restore_plan({"files": {"u": "1" * 64}}, ["/etc/u", "/etc/new"], {"/etc/u": "1" * 64}.get) \
        == [("/etc/u", "same"), ("/etc/new", "same")]  # neither has it: nothing to do


def test_newest_proven():
    entries = [e("C"), e("B", True), e("A", True)]
    assert sglang_store.newest_proven(entries) == "B"
    assert sglang_store.newest_proven(entries, other_than="B") == "A"
    assert sglang_store.newest_proven([e("C")]) is None
