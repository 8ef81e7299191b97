"""The two store modules as Ansible runs them (a process reading its arguments from a file): sglang_backup_store
changes the store, sglang_backup_store_info reads it and never changes it; neither takes a `list` state."""

import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(tmp_path, name, **args):
    path = tmp_path / ("%s.json" % name)
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    proc = subprocess.run([sys.executable, os.path.join(REPO, "library", name + ".py"), str(path)],
                          capture_output=True, text=True, timeout=60)
    return proc.returncode, json.loads(proc.stdout)


def test_info_reads_what_the_store_keeps_and_changes_nothing(tmp_path):
    unit, env = tmp_path / "sglang.service", tmp_path / "sglang.env"
    unit.write_text('ExecStart=/x "--context-length" "200000"\n')
    env.write_text("A=1\n")
    store = dict(dir=str(tmp_path / "backups"), files=[str(unit), str(env)])
    rc, empty = run(tmp_path, "sglang_backup_store_info", **store)
    assert rc == 0 and empty["entries"] == [] and empty["current"] is None and empty["changed"] is False
    assert not (tmp_path / "backups").exists()
    rc, added = run(tmp_path, "sglang_backup_store", state="snapshot", **store)
    assert rc == 0 and added["changed"] and added["current"] == added["name"]
    before = sorted(os.listdir(tmp_path / "backups"))
    rc, listed = run(tmp_path, "sglang_backup_store_info", **store)
    assert rc == 0 and listed["changed"] is False and listed["current"] == added["name"]
    assert [e["name"] for e in listed["entries"]] == [added["name"]]
    assert listed["entries"][0]["context_target"] == 200000
    assert listed["lines"] == ["%s: context 200000, not proven [serving now] - " % added["name"]]
    assert sorted(os.listdir(tmp_path / "backups")) == before


def test_the_lines_for_people_say_the_proof_the_release_and_the_rollback_default():
    from ansible.module_utils.sglang_store import entry_lines
    entries = [{"name": "b", "context_target": 180000, "current": True, "reason": "deployed",
                "versions": {"sglang": "0.5.22"}},
               {"name": "a", "context_target": 150000, "reason": "deployed", "versions": {"sglang": "0.5.23"},
                "proven": {"at": "2026-12-01T08:00:00Z", "pool_tokens": 150016, "prompt_tokens": 54}}]
    assert entry_lines(entries, "a") == [
        "b: context 180000, not proven, sglang 0.5.22 [serving now] - deployed",
        "a: context 150000, PROVEN 2026-12-01T08:00:00Z (pool 150016, prompt 54 tokens), sglang 0.5.23 "
        "[rollback default] - deployed"]


def test_the_store_module_takes_no_list_state(tmp_path):
    rc, out = run(tmp_path, "sglang_backup_store", dir=str(tmp_path), files=[str(tmp_path / "u")], state="list")
    assert rc != 0 and "value of state must be one of: snapshot, proven, restore" in out["msg"]
