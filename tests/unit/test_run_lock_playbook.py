"""Two ansible-playbook runs at once on one host, through the role's run_lock entry point and the action plugin:
the second waits sglang_run_lock_wait seconds and fails naming the first (its play, controller, pid, user); a run
killed while it holds the lock is taken over at once by the next run from the same controller; the lock reports no
change, so a run that changes nothing else recaps changed=0."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAY = os.path.join(REPO, "tests", "unit", "run_lock_localhost.yml")


def start(tmp_path, hold, wait):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    extra = json.dumps({"sglang_backup_dir": str(tmp_path / "backups"), "hold": hold, "sglang_run_lock_wait": wait})
    return subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), PLAY, "-e", extra],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for_record(tmp_path, timeout=120):
    path = tmp_path / "backups" / ".run-lock.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return json.loads(path.read_text())
        time.sleep(0.2)
    raise AssertionError("the first run never took the lock")


def test_two_runs_at_once_the_second_waits_then_fails_naming_the_first(tmp_path):
    first = start(tmp_path, hold=60, wait=0)
    try:
        held = wait_for_record(tmp_path)
        assert held["pid"] == first.pid and held["controller"] == socket.gethostname()
        assert held["run_id"].startswith("%s:%d:" % (socket.gethostname(), first.pid))
        second = start(tmp_path, hold=0, wait=3)
        out, _ = second.communicate(timeout=240)
        assert second.returncode != 0, out
        assert "Traceback" not in out
        for part in ("This host is being changed by another run", "play 'Change localhost under its run lock'",
                     "pid %d" % first.pid, "controller %s" % socket.gethostname(), "Waited 3 s"):
            assert part in out, (part, out)
        assert json.loads((tmp_path / "backups" / ".run-lock.json").read_text())["run_id"] == held["run_id"]
    finally:
        first.kill()
        first.wait()


def test_a_run_killed_while_holding_the_lock_is_taken_over_and_a_clean_run_reports_no_change(tmp_path):
    first = start(tmp_path, hold=120, wait=0)
    held = wait_for_record(tmp_path)
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert (tmp_path / "backups" / ".run-lock.json").exists()  # a killed run cannot give it back
    third = start(tmp_path, hold=0, wait=0)  # wait 0: it is taken over at once, not after a wait
    out, _ = third.communicate(timeout=240)
    assert third.returncode == 0, out
    assert "changed=0" in out, out
    assert not (tmp_path / "backups" / ".run-lock.json").exists()  # given back at the end
    assert held["pid"] == first.pid


def _run_lock(item):
    role = item.get("ansible.builtin.import_role") or item.get("ansible.builtin.include_role") or {}
    return role.get("tasks_from") == "run_lock"


def test_site_and_rollback_take_the_lock_before_their_first_change_and_give_it_back_in_an_always():
    import yaml

    for path, play_name in (("site.yml", "Deploy SGLang for the context target, and prove it"),
                            ("playbooks/rollback.yml", "Roll SGLang back")):
        with open(os.path.join(REPO, path), encoding="utf-8") as handle:
            play = next(p for p in yaml.safe_load(handle) if p.get("name") == play_name)
        assert len(play["tasks"]) == 1, path  # everything under one block
        block = play["tasks"][0]
        assert _run_lock(block["block"][0]), "%s: the first task must take the run lock" % path
        assert _run_lock(block["always"][-1]) and block["always"][-1]["vars"] == {"_sglang_run_lock_state": "released"}
    with open(os.path.join(REPO, "roles", "sglang", "tasks", "main.yml"), encoding="utf-8") as handle:
        main = yaml.safe_load(handle)
    # the role's own entry point: only the input check (which changes nothing) comes before the lock
    assert [t.get("ansible.builtin.import_tasks") for t in main[:1]] == ["inputs.yml"]
    assert "sglang_run_lock" in main[1] and "block" in main[2]
    assert main[2]["always"][0]["sglang_run_lock"]["state"] == "released"
