"""The host's run lock (library/sglang_run_lock.py), run as Ansible runs the module: two runs at once, the second
waits and then fails naming the first; the same run renews it across a reboot; a stale or gone holder is taken over;
a release leaves another run's lock as it is, and fails when that run took this one's over; no acquire or release
reports changed."""

import json
import os
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN1 = {"play": "Deploy SGLang for the context target, and prove it", "controller": "ctl-a", "pid": 4242,
        "user": "alice", "started": "2026-12-03T09:00:00+00:00"}
RUN2 = {"play": "Roll SGLang back", "controller": "ctl-b", "pid": 777, "user": "bob",
        "started": "2026-12-03T09:05:00+00:00"}


def lock(tmp_path, run_id, holder=None, **args):
    path = tmp_path / ("args-%s-%s.json" % (run_id, time.monotonic_ns()))
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(
        {"dir": str(tmp_path / "backups"), "run_id": run_id, "holder": holder or {}}, **args)}))
    proc = subprocess.run([sys.executable, os.path.join(REPO, "library", "sglang_run_lock.py"), str(path)],
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert out.get("changed") is False  # the lock's record is not a change of the host's state
    return out


def record(tmp_path):
    return json.loads((tmp_path / "backups" / ".run-lock.json").read_text())


def age(tmp_path, seconds):
    """Make the record look renewed `seconds` ago on both clocks it holds (the wall clock and this boot's uptime):
    a run that stopped renewing, not a clock jump."""
    rec = record(tmp_path)
    rec["renewed_at"] -= seconds
    rec["renewed_uptime"] -= seconds
    assert rec["renewed_uptime"] >= 0, "this host has been up for less than %d s" % seconds
    (tmp_path / "backups" / ".run-lock.json").write_text(json.dumps(rec))
    return rec


def test_a_second_run_waits_then_fails_naming_the_first(tmp_path):
    assert not lock(tmp_path, "ctl-a:4242:100", RUN1).get("failed")
    started = time.monotonic()
    out = lock(tmp_path, "ctl-b:777:200", RUN2, wait=2)
    assert time.monotonic() - started >= 2  # it waited its bounded time
    assert out["failed"]
    for part in ("ctl-a:4242:100", "Deploy SGLang for the context target", "controller ctl-a", "pid 4242",
                 "user alice", "started 2026-12-03T09:00:00+00:00", "sglang_run_lock_wait"):
        assert part in out["msg"], (part, out["msg"])
    assert record(tmp_path)["run_id"] == "ctl-a:4242:100"  # untouched


def test_the_second_run_gets_the_lock_when_the_first_releases_it_while_it_waits(tmp_path):
    lock(tmp_path, "ctl-a:4242:100", RUN1)
    threading.Timer(1.5, lambda: lock(tmp_path, "ctl-a:4242:100", state="released")).start()
    out = lock(tmp_path, "ctl-b:777:200", RUN2, wait=30)
    assert not out.get("failed"), out
    assert out["waited"] >= 1 and record(tmp_path)["run_id"] == "ctl-b:777:200"


def test_the_same_run_renews_it_across_a_reboot(tmp_path):
    lock(tmp_path, "ctl-a:4242:100", RUN1)
    rec = record(tmp_path)
    rec["boot_id"], rec["renewed_at"] = "another-boot", rec["renewed_at"] - 100
    (tmp_path / "backups" / ".run-lock.json").write_text(json.dumps(rec))
    out = lock(tmp_path, "ctl-a:4242:100", RUN1, wait=0)
    assert not out.get("failed") and out["taken_over"] is None
    assert record(tmp_path)["renewed_at"] > rec["renewed_at"] and record(tmp_path)["boot_id"] != "another-boot"
    assert record(tmp_path)["acquired_at"] == rec["acquired_at"]
    # another run does not take it over because the boot id changed: only the lease or a gone holder makes it stale
    assert lock(tmp_path, "ctl-b:777:200", RUN2, wait=0)["failed"]


def test_a_lock_not_renewed_for_the_lease_is_taken_over(tmp_path):
    lock(tmp_path, "ctl-a:4242:100", RUN1)
    age(tmp_path, 61)
    assert lock(tmp_path, "ctl-b:777:200", RUN2, wait=0, lease=120)["failed"]
    out = lock(tmp_path, "ctl-b:777:200", RUN2, wait=0, lease=60)
    assert not out.get("failed") and out["taken_over"]["run_id"] == "ctl-a:4242:100"
    assert "uptime clock" in out["taken_over_reason"], out
    assert record(tmp_path)["run_id"] == "ctl-b:777:200"


def test_take_over_only_replaces_the_run_it_names(tmp_path):
    lock(tmp_path, "ctl-a:4242:100", RUN1)
    assert lock(tmp_path, "ctl-b:777:200", RUN2, wait=0, take_over="ctl-a:1:1")["failed"]
    out = lock(tmp_path, "ctl-b:777:200", RUN2, wait=0, take_over="ctl-a:4242:100")
    assert out["taken_over"]["run_id"] == "ctl-a:4242:100" and record(tmp_path)["run_id"] == "ctl-b:777:200"


def test_a_release_by_another_run_leaves_the_lock_as_it_is(tmp_path):
    # a run refused at its start, or whose role gave its lock back already, releases in its playbook's always
    lock(tmp_path, "ctl-a:4242:100", RUN1)
    out = lock(tmp_path, "ctl-b:777:200", RUN2, state="released")
    assert not out.get("failed") and out["holder"]["run_id"] == "ctl-a:4242:100"
    assert record(tmp_path)["run_id"] == "ctl-a:4242:100"
    assert not lock(tmp_path, "ctl-a:4242:100", state="released").get("failed")
    assert not (tmp_path / "backups" / ".run-lock.json").exists()
    assert not lock(tmp_path, "ctl-a:4242:100", state="released").get("failed")  # twice: nothing to give back


def test_a_run_whose_lock_was_taken_over_fails_at_its_release_naming_the_other(tmp_path):
    lock(tmp_path, "ctl-a:4242:100", RUN1)
    age(tmp_path, 61)
    lock(tmp_path, "ctl-b:777:200", RUN2, wait=0, lease=60)
    lock(tmp_path, "ctl-b:777:200", RUN2, wait=0, lease=60)  # a renewal keeps whom it took over from
    assert record(tmp_path)["took_over"] == "ctl-a:4242:100"
    out = lock(tmp_path, "ctl-a:4242:100", state="released")
    assert out["failed"] and "taken over by" in out["msg"] and "pid 777" in out["msg"], out
    assert record(tmp_path)["run_id"] == "ctl-b:777:200"  # left as it is
    # a third run that finds ctl-b's lock is not the one it replaced: its release leaves it quietly
    assert not lock(tmp_path, "ctl-c:1:1", state="released").get("failed")
    assert not lock(tmp_path, "ctl-b:777:200", state="released").get("failed")
    assert not (tmp_path / "backups" / ".run-lock.json").exists()


def test_check_mode_neither_waits_nor_writes(tmp_path):
    out = lock(tmp_path, "ctl-a:4242:100", RUN1, _ansible_check_mode=True)
    assert not out.get("failed") and not (tmp_path / "backups" / ".run-lock.json").exists()


def test_odd_files_and_values_are_sentences(tmp_path):
    (tmp_path / "backups").mkdir()
    os.symlink("/etc/passwd", tmp_path / "backups" / ".run-lock.json")
    out = lock(tmp_path, "ctl-a:4242:100", RUN1)
    assert out["failed"] and "not a regular file" in out["msg"] and "move it away" in out["msg"]
    assert lock(tmp_path, "ctl-a:4242:100", RUN1, wait=-1)["msg"].startswith("sglang_run_lock: wait is -1")
    assert "run_id is empty" in lock(tmp_path, " ", RUN1)["msg"]


def test_the_check_phase_refuses_a_bad_wait_or_lease_by_name():
    import sglang_kvplan
    from sglang_checks import inputs

    roles = inputs.roles_at(os.path.join(REPO, "roles"))

    def refusals(variables):
        return inputs.host_refusals("ct200", variables, ["sglang_servers"], roles, sglang_kvplan.rules_for)

    for name, bad in (("sglang_run_lock_wait", "abc"), ("sglang_run_lock_wait", -1), ("sglang_run_lock_lease", 5)):
        found = refusals({name: bad})
        assert any(r.startswith("ct200: %s " % name) for r in found), found
    assert not refusals({"sglang_run_lock_wait": 0, "sglang_run_lock_lease": 3600})
