"""A restore killed with SIGKILL after each of its renames (issue 27): the next run of the module finishes it (or
undoes it) before anything else, so the live files are exactly one entry's, by sha256, and no mix is ever stored as
an entry. Real processes: the module runs as Ansible runs it, and the kernel kills it
(tests/unit/kill_after_renames.py)."""

import hashlib
import json
import os
import signal
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STORE = os.path.join(REPO, "library", "sglang_backup_store.py")
KILLER = os.path.join(REPO, "tests", "unit", "kill_after_renames.py")


def run_module(tmp_path, args, kill_after=None):
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    argv = [sys.executable, STORE, str(path)] if kill_after is None else \
        [sys.executable, KILLER, str(kill_after), STORE, str(path)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert "Traceback" not in proc.stdout + proc.stderr
    return proc.returncode, (json.loads(proc.stdout) if proc.stdout.strip() else None)


def shas(files):
    return {os.path.basename(f): hashlib.sha256(open(f, "rb").read()).hexdigest() if os.path.exists(f) else None
            for f in files}


@pytest.fixture
def host(tmp_path):
    """Entry A (proven: a unit and an env file, no config) and the live state B (all three files, snapshotted).
    Restoring A writes the unit, writes the env file and removes the config: three renames of live files."""
    etc = tmp_path / "etc"
    etc.mkdir()
    files = [str(etc / "sglang.service"), str(etc / "sglang.env"), str(etc / "sglang.yaml")]
    args = {"dir": str(tmp_path / "backups"), "files": files}
    open(files[0], "w").write('ExecStart=/a "--context-length" "200000"\n')
    open(files[1], "w").write("A=1\n")
    rc, out = run_module(tmp_path, dict(args, state="proven", proof={"pool_tokens": 1}))
    assert rc == 0, out
    a_name, a_files = out["name"], shas(files)
    open(files[0], "w").write('ExecStart=/b "--context-length" "150000"\n')
    open(files[1], "w").write("A=2\n")
    open(files[2], "w").write('api-key: "k"\n')
    rc, out = run_module(tmp_path, dict(args, state="snapshot"))
    assert rc == 0, out
    return tmp_path, args, files, a_name, a_files, shas(files)


@pytest.mark.parametrize("after", [1, 2, 3])
def test_a_restore_killed_after_each_rename_leaves_one_whole_entry_after_the_next_run(host, after):
    tmp_path, args, files, a_name, a_files, b_files = host
    rc, _ = run_module(tmp_path, dict(args, state="restore", name=a_name), kill_after=after)
    assert rc == -signal.SIGKILL
    if after < 3:
        assert shas(files) not in (a_files, b_files)  # the kill left a mix of the two states
    entries_before = sorted(n for n in os.listdir(args["dir"]) if not n.startswith("."))
    rc, out = run_module(tmp_path, dict(args, state="snapshot"))  # the next run, whatever it does
    assert rc == 0, out
    assert shas(files) == a_files  # rolled forward: exactly entry A's files
    assert out["current"] == a_name and out["name"] == a_name
    assert next(e for e in out["entries"] if e["name"] == a_name)["proven"]  # one whole proven entry serves
    assert out["recovered"] == {"entry": a_name, "direction": "forward"}
    assert sorted(n for n in os.listdir(args["dir"]) if not n.startswith(".")) == entries_before  # no mix stored
    assert not out["interrupted_restore"]
    etc = os.path.dirname(files[0])
    assert [n for n in os.listdir(etc) if n.startswith(".")] == []  # no staged copy, no displaced original left
    again = run_module(tmp_path, dict(args, state="snapshot"))[1]
    assert not again["changed"] and again["recovered"] is None


def test_a_killed_restore_whose_entry_is_gone_is_rolled_back_to_the_state_it_replaced(host):
    tmp_path, args, files, a_name, a_files, b_files = host
    rc, _ = run_module(tmp_path, dict(args, state="restore", name=a_name), kill_after=2)
    assert rc == -signal.SIGKILL
    os.unlink(os.path.join(args["dir"], a_name, "sglang.env"))  # entry A can no longer be put back whole
    rc, out = run_module(tmp_path, dict(args, state="snapshot"))
    assert rc == 0, out
    assert shas(files) == b_files and out["recovered"]["direction"] == "back"


def test_an_unreadable_journal_stops_the_run_naming_it(host):
    tmp_path, args, files, a_name, _, b_files = host
    journal = os.path.join(args["dir"], ".restore-journal.json")
    open(journal, "w").write("{not json")
    rc, out = run_module(tmp_path, dict(args, state="snapshot"))
    assert rc == 1 and journal in out["msg"] and "may mix two states" in out["msg"]
    assert shas(files) == b_files and len([n for n in os.listdir(args["dir"]) if not n.startswith(".")]) == 2
