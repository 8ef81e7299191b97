"""Two runs at once: the second is refused with a sentence naming the first (its pid, host, what it does, who),
never a bare errno or a traceback, and the store is as the first left it. Real processes: a holder that takes the
store's lock as the module does, and the module run as Ansible runs it."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

HOLDER = textwrap.dedent("""
    import sys, time
    from ansible.module_utils.sglang_store import Store
    with Store(sys.argv[1], sys.argv[2:]).locked("sglang_backup_store restore of X", "rollback.yml by alice"):
        print("held", flush=True)
        sys.stdin.read()  # until the test closes our stdin
""")


def run_module(tmp_path, name, args):
    path = tmp_path / ("%s.json" % name)
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    proc = subprocess.run([sys.executable, os.path.join(REPO, "library", name + ".py"), str(path)],
                          capture_output=True, text=True, timeout=60)
    assert "Traceback" not in proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout)


@pytest.fixture
def state(tmp_path):
    unit, env = tmp_path / "sglang.service", tmp_path / "sglang.env"
    unit.write_text('ExecStart=/x "--context-length" "200000"\n')
    env.write_text("A=1\n")
    args = {"dir": str(tmp_path / "backups"), "files": [str(unit), str(env)]}
    rc, out = run_module(tmp_path, "sglang_backup_store", dict(args, state="proven", proof={"pool_tokens": 1}))
    assert rc == 0
    unit.write_text('ExecStart=/x "--context-length" "150000"\n')
    return args, out["name"], unit


def snapshot_of(folder):
    return sorted((root, sorted(names)) for root, _, names in os.walk(folder))


def test_a_second_run_is_refused_naming_the_first(tmp_path, state):
    args, proven, unit = state
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, args["dir"]] + args["files"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        before = snapshot_of(args["dir"])
        for call in (dict(state="snapshot"), dict(state="restore", name=proven), dict(state="proven")):
            rc, out = run_module(tmp_path, "sglang_backup_store", dict(args, lock_timeout=1, **call))
            assert rc != 0 and out["failed"]
            assert out["msg"].startswith("The backup store %s is in use by another run: " % args["dir"]), out["msg"]
            assert "pid %d on " % holder.pid in out["msg"] and "rollback.yml by alice" in out["msg"]
            assert "restore of X" in out["msg"] and "Errno" not in out["msg"]
        assert snapshot_of(args["dir"]) == before  # nothing written, nothing pruned
        assert "150000" in unit.read_text()  # nothing restored
        rc, listed = run_module(tmp_path, "sglang_backup_store_info", args)  # reading needs no lock
        assert rc == 0 and listed["last_proven"] == proven
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    rc, out = run_module(tmp_path, "sglang_backup_store", dict(args, state="restore", name=proven, lock_timeout=1))
    assert rc == 0 and out["changed"] and "200000" in unit.read_text()  # the lock went with its process
    with open(os.path.join(args["dir"], ".lock")) as handle:
        assert handle.read() == ""  # released: the next refusal names no run that has finished


def test_a_run_that_died_holding_the_lock_blocks_nothing(tmp_path, state):
    args, proven, _ = state
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, args["dir"]] + args["files"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    holder.kill()
    holder.wait(timeout=30)
    rc, out = run_module(tmp_path, "sglang_backup_store", dict(args, state="restore", name=proven, lock_timeout=1))
    assert rc == 0 and out["changed"]


def test_runs_at_once_take_turns_and_lose_nothing(tmp_path, state):
    """Eight real module runs at the same moment (snapshots and proofs of the same state): each waits its turn;
    no bare errno, no entry pruned by another run."""
    args, proven, _ = state
    procs = []
    for i in range(8):
        path = tmp_path / ("run%d.json" % i)
        call = dict(args, state="snapshot" if i % 2 else "proven", keep=1, proof={"pool_tokens": 2})
        path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": call}))
        procs.append(subprocess.Popen([sys.executable, os.path.join(REPO, "library", "sglang_backup_store.py"),
                                       str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert all(not o.get("failed") for o in outs), [o.get("msg") for o in outs]
    names = {e["name"] for e in outs[-1]["entries"]}
    assert proven in names and len(names) == 2  # the proven state to go back to, and the live one, proven once
