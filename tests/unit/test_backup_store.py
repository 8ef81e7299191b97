"""The backup store: one entry per distinct state, atomic, never pruning what a rollback needs."""

import itertools
import json
import os
from datetime import UTC, datetime, timedelta

import pytest
import sglang_backup_store as module


@pytest.fixture
def live(tmp_path):
    etc = tmp_path / "etc"
    etc.mkdir()
    files = [etc / "sglang.service", etc / "sglang.env", etc / "sglang.yaml"]
    clock = itertools.count()
    start = datetime(2026, 11, 29, 14, 0, tzinfo=UTC)

    def deploy(target, key="k1"):
        files[0].write_text('ExecStart="/opt/venv/bin/python" \\\n    "--context-length" "%d"\n' % target)
        files[1].write_text("SGLANG_DOUBLE_GPU=/x\n")
        files[2].write_text('api-key: "%s"\n' % key)
        os.chmod(files[2], 0o640)

    store = module.Store(str(tmp_path / "backups"), [str(f) for f in files],
                         now=lambda: start + timedelta(seconds=next(clock)))
    return store, deploy, files


def test_one_entry_per_state_and_the_manifest(live):
    store, deploy, _ = live
    deploy(200_000)
    name, changed = store.add({"plan": "p", "versions": {"sglang": "0.5.9"}})
    assert changed and store.add({})[1] is False  # the same files: no second entry
    (entry,) = store.entries()
    assert entry["name"] == name and entry["context_target"] == 200_000  # read from the quoted unit
    assert entry["versions"] == {"sglang": "0.5.9"} and entry["proven"] is None
    assert set(entry["files"]) == {"sglang.service", "sglang.env", "sglang.yaml"}
    assert oct(os.stat(os.path.join(entry["path"], "sglang.yaml")).st_mode & 0o777) == "0o640"
    assert oct(os.stat(store.dir).st_mode & 0o777) == "0o700"


def test_first_install_has_nothing_to_keep(live):
    store, _, _ = live
    assert store.add({}) == (None, False)
    with pytest.raises(module.StoreError, match="no live state"):
        store.mark_proven({"pool_tokens": 1}, {})


def test_a_proof_again_moves_the_time_keeps_the_first_and_last_proven_is_never_the_live_state(live):
    store, deploy, _ = live
    deploy(200_000)
    first, changed = store.mark_proven({"pool_tokens": 200_230, "prompt_tokens": 60_002}, {})
    assert changed
    was = store.entries()[0]["proven"]
    assert store.mark_proven({"pool_tokens": 200_231, "prompt_tokens": 60_002}, {}) == (first, True)
    again = store.entries()[0]["proven"]  # the newest proof's time and measurements; the first proof's time kept
    assert again["at"] > was["at"] and again["first_at"] == was["at"] and again["pool_tokens"] == 200_231
    _, current, last_proven, _ = store.view()
    assert current == first and last_proven is None  # nothing to roll back to but itself
    deploy(150_000)
    store.add({"reason": "estimate"})
    entries, current, last_proven, _ = store.view()
    assert current == entries[0]["name"] != first and last_proven == first
    assert entries[1]["proven"]["pool_tokens"] == 200_231 and entries[1]["proven"]["at"]


def test_keep_one_never_prunes_the_last_proven_the_live_or_the_protected(live):
    store, deploy, _ = live
    deploy(200_000)
    proven, _ = store.mark_proven({"pool_tokens": 200_230}, {})
    names = []
    for target in (150_000, 160_000, 170_000):
        deploy(target)
        names.append(store.add({})[0])
    pruned = store.prune(1, protect=[names[0]])
    left = {e["name"] for e in store.entries()}
    assert left == {proven, names[0], names[2]} and pruned == [names[1]]


def test_keep_below_one_is_refused_naming_the_knob(live):
    store, _, _ = live
    with pytest.raises(module.StoreError, match="sglang_backup_keep"):
        store.prune(0, [])


def test_restore_puts_back_byte_for_byte_and_keeps_its_source(live):
    store, deploy, files = live
    deploy(200_000, key="old")
    old, _ = store.mark_proven({"pool_tokens": 200_230}, {})
    before = [f.read_bytes() for f in files]
    deploy(150_000, key="new")
    store.add({})
    assert store.restore(old) == (old, True, {"restored": [str(files[0]), str(files[2])], "removed": []})
    assert [f.read_bytes() for f in files] == before
    assert oct(os.stat(files[2]).st_mode & 0o777) == "0o640"
    assert store.restore(old)[:2] == (old, False)  # already the live state
    assert old in {e["name"] for e in store.entries()}
    with pytest.raises(module.StoreError, match="No entry nope"):
        store.restore("nope")


def test_an_interrupted_snapshot_is_invisible_and_cleaned(live):
    store, deploy, _ = live
    deploy(200_000)
    os.makedirs(os.path.join(store.dir, ".incoming-20261129T000000000000Z"))
    assert store.entries() == []
    store.add({})
    assert store.clean_stale() == [os.path.join(store.dir, ".incoming-20261129T000000000000Z")]
    assert [n for n in os.listdir(store.dir) if n.startswith(".")] == []


def test_an_older_entry_without_a_manifest_is_still_listed(live):
    store, deploy, _ = live
    old = os.path.join(store.dir, "20261128T000000000000Z")
    os.makedirs(old)
    with open(os.path.join(old, "sglang.service"), "w") as handle:
        handle.write("ExecStart=/opt/venv/bin/python -m sglang.launch_server --context-length 120000\n")
    (entry,) = store.entries()
    assert entry["context_target"] == 120_000 and entry["proven"] is None


def test_manifest_is_valid_json_after_marking(live):
    store, deploy, _ = live
    deploy(200_000)
    name, _ = store.mark_proven({"pool_tokens": 5}, {"context_target": 200_000})
    with open(os.path.join(store.dir, name, "backup.json")) as handle:
        data = json.load(handle)
    assert data["format"] == 1 and data["proven"]["pool_tokens"] == 5
    assert not [n for n in os.listdir(os.path.join(store.dir, name)) if ".tmp-" in n]
