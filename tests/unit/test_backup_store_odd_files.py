"""The store among things it did not make (issue 27, probe day 2 N2, N3, N14, N15, #11): a folder shared with other
data, a runtimes folder, a symlinked lock, a FIFO or /dev/zero as a manifest, a 200k-deep JSON, a symlinked entry,
a leftover copy that is a folder, a non-UTF-8 unit. Each odd item is named and skipped; nothing else is touched and
the rest of the store works. The module runs as Ansible runs it."""

import json
import os
import stat
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(tmp_path, module_name, **args):
    path = tmp_path / ("%s.json" % module_name)
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    proc = subprocess.run([sys.executable, os.path.join(REPO, "library", module_name + ".py"), str(path)],
                          capture_output=True, text=True, timeout=30)  # a FIFO read would hang past this
    assert "Traceback" not in proc.stdout + proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def live(tmp_path):
    unit, env = tmp_path / "sglang.service", tmp_path / "sglang.env"
    unit.write_text('ExecStart=/x "--context-length" "200000"\n')
    env.write_text("A=1\n")
    return tmp_path, [str(unit), str(env)], unit


def deploy(unit, n):
    unit.write_text('ExecStart=/x "--context-length" "%d"\n' % (100000 + n))


def test_a_shared_folder_keeps_its_other_folders_and_its_mode(live):
    tmp_path, files, unit = live
    shared = tmp_path / "shared"
    (shared / "0-old-notes").mkdir(parents=True)  # sorts before the timestamps
    (shared / "0-old-notes" / "x.txt").write_text("mine")
    runtime = shared / "0.5.23-845ede89454f"
    (runtime / "bin").mkdir(parents=True)
    shared.chmod(0o755)
    for n in range(3):
        deploy(unit, n)
        out = run(tmp_path, "sglang_backup_store", dir=str(shared), files=files, state="snapshot", keep=1)
        assert not out.get("failed"), out
    assert (shared / "0-old-notes" / "x.txt").read_text() == "mine"
    assert (runtime / "bin").is_dir()
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755  # not made 0700: the service user still reads its runtime
    assert all("notes" not in p and "845ede" not in p for p in out["pruned"])
    assert len(out["entries"]) == 1


def test_a_new_store_folder_is_made_0700(live):
    tmp_path, files, _ = live
    run(tmp_path, "sglang_backup_store", dir=str(tmp_path / "new"), files=files, state="snapshot")
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o700


def test_an_entry_without_a_manifest_is_listed_but_never_pruned(live):
    tmp_path, files, unit = live
    old = tmp_path / "store" / "20200101T000000Z"
    old.mkdir(parents=True)
    (old / "sglang.service").write_text('ExecStart=/old "--context-length" "1000"\n')
    for n in range(3):
        deploy(unit, n)
        out = run(tmp_path, "sglang_backup_store", dir=str(tmp_path / "store"), files=files, state="snapshot", keep=1)
    assert old.is_dir() and "20200101T000000Z" in [e["name"] for e in out["entries"]]


def test_a_symlinked_lock_is_refused_and_its_target_untouched(live):
    tmp_path, files, _ = live
    store = tmp_path / "store"
    store.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (store / ".lock").symlink_to(victim)
    out = run(tmp_path, "sglang_backup_store", dir=str(store), files=files, state="snapshot")
    assert out["failed"] and "symbolic link" in out["msg"] and str(store / ".lock") in out["msg"]
    assert victim.read_text() == "precious"


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "deep", "big"])
def test_a_special_manifest_is_named_and_skipped(live, kind):
    tmp_path, files, unit = live
    store = str(tmp_path / "store")
    first = run(tmp_path, "sglang_backup_store", dir=store, files=files, state="proven", proof={"p": 1})
    deploy(unit, 7)
    bad = os.path.join(store, "20200101T000000Z")
    os.makedirs(bad)
    manifest = os.path.join(bad, "backup.json")
    if kind == "fifo":
        os.mkfifo(manifest)
    elif kind == "dev_zero":
        os.symlink("/dev/zero", manifest)
    elif kind == "deep":
        open(manifest, "w").write("[" * 200_000 + "]" * 200_000)
    else:
        with open(manifest, "wb") as handle:
            handle.truncate(64 * 1024 * 1024)  # sparse: 64 MiB of NUL bytes
    info = run(tmp_path, "sglang_backup_store_info", dir=store, files=files)
    assert [c["name"] for c in info["corrupt"]] == ["20200101T000000Z"], info
    assert info["last_proven"] == first["name"]
    out = run(tmp_path, "sglang_backup_store", dir=store, files=files, state="restore", name=first["name"])
    assert not out.get("failed"), out
    assert os.path.lexists(manifest)  # left for a person


def test_a_symlinked_entry_and_a_leftover_folder_are_named_and_block_nothing(live):
    tmp_path, files, unit = live
    store = tmp_path / "store"
    first = run(tmp_path, "sglang_backup_store", dir=str(store), files=files, state="proven", proof={"p": 1})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    (store / "20200101T000000Z").symlink_to(elsewhere)
    odd = tmp_path / (".sglang.service.sglang-restore-abcdef012345.new")
    odd.mkdir()
    for n in range(3):
        deploy(unit, n)
        out = run(tmp_path, "sglang_backup_store", dir=str(store), files=files, state="snapshot", keep=1)
        assert not out.get("failed"), out
    assert (elsewhere / "keep.txt").read_text() == "mine" and odd.is_dir()
    assert [c["name"] for c in out["corrupt"]] == ["20200101T000000Z"]
    assert [s["path"] for s in out["skipped"]] == [str(odd)]
    assert str(odd) in json.dumps(out.get("warnings"))
    assert first["name"] in [e["name"] for e in out["entries"]]


def test_a_non_utf8_unit_in_an_unmarked_entry_does_not_fail_the_listing(live):
    tmp_path, files, _ = live
    store = tmp_path / "store"
    old = store / "20200101T000000Z"
    old.mkdir(parents=True)
    (old / "sglang.service").write_bytes(b"ExecStart=/x \xff\xfe\n")
    info = run(tmp_path, "sglang_backup_store_info", dir=str(store), files=files)
    assert not info.get("failed"), info
    assert [e["name"] for e in info["entries"]] == ["20200101T000000Z"]
