"""The run lock's memory (action_plugins/sglang_run_lock.py): a renewal soon after this run's own is answered on the
controller, a release after this run's own release too; the first take, a take after a release, a renewal with
another folder, wait or lease, a late one, and one after a failure always reach the host."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_SPEC = importlib.util.spec_from_file_location("run_lock_action", os.path.join(REPO, "action_plugins",
                                                                                "sglang_run_lock.py"))
action = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(action)

CALL = {"state": "acquired", "dir": "/var/backups/sglang", "run_id": "ctl:1:2", "wait": 600, "lease": 21600}
HELD = {"holder": {"run_id": "ctl:1:2"}}


def memory_after(call, answer=HELD, at=1000.0):
    return action.remember(call, answer, at)


def test_a_renewal_soon_after_this_run_s_own_is_answered_without_the_host():
    known = action.remembered(memory_after(CALL), CALL, 1000.0 + 21600 / 20 - 1)
    assert known == {"holder": HELD["holder"], "taken_over": None, "taken_over_reason": None, "waited": 0.0,
                     "remembered": True}


@pytest.mark.parametrize("memory, call, now", [
    ({}, CALL, 1000.0),  # the first take of the run
    (memory_after(CALL), CALL, 1000.0 + 21600 / 20),  # a twentieth of the lease since: renewed on the host
    (memory_after(CALL), CALL, 999.0),  # a clock that went back is no evidence
    (memory_after(CALL), dict(CALL, dir="/srv/other"), 1001.0),
    (memory_after(CALL), dict(CALL, run_id="ctl:9:9"), 1001.0),  # another run's memory
    (memory_after(CALL), dict(CALL, lease=600), 1001.0),  # a lease the module has not accepted yet
    (memory_after(CALL), dict(CALL, wait=-1), 1001.0),  # a wait the module has not accepted yet
    (memory_after(dict(CALL, state="released")), CALL, 1001.0),  # a take after a release
    (memory_after(CALL, {"failed": True, "msg": "x"}), CALL, 1001.0),  # after a failure
    (memory_after(CALL), dict(CALL, state="released"), 1001.0),  # the first release
])
def test_the_host_is_asked(memory, call, now):
    assert action.remembered(memory, call, now) is None


def test_a_release_after_this_run_s_own_release_is_answered_without_the_host():
    released = dict(CALL, state="released")
    assert action.remembered(memory_after(released, {"holder": None}), released, 5000.0)["holder"] is None


def test_the_memory_is_one_file_per_host_replaced_whole(tmp_path):
    folder = str(tmp_path / "memory")
    action.write_memory(folder, "a/b", memory_after(CALL))
    assert action.read_memory(folder, "a/b") == memory_after(CALL) and os.listdir(folder) == ["a%2Fb.json"]
    (tmp_path / "memory" / "a%2Fb.json").write_text("not json")
    assert action.read_memory(folder, "a/b") == {} and action.read_memory(folder, "other") == {}


PLAY = """\
- name: Take, renew, release and release again, as site.yml and the role do
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - {name: Take, sglang_run_lock: {dir: "{{ lockdir }}", lease: "{{ lease }}"}, register: take}
    - {name: Read the record, ansible.builtin.command: "cat {{ lockdir }}/.run-lock.json", register: first,
       changed_when: false}
    - {name: Wait, ansible.builtin.command: "sleep {{ pause }}", changed_when: false}
    - {name: Renew, sglang_run_lock: {dir: "{{ lockdir }}", lease: "{{ lease }}"}, register: renew}
    - {name: Read the record again, ansible.builtin.command: "cat {{ lockdir }}/.run-lock.json", register: second,
       changed_when: false}
    - {name: Release, sglang_run_lock: {dir: "{{ lockdir }}", state: released}, register: release}
    - {name: Release again, sglang_run_lock: {dir: "{{ lockdir }}", state: released}, register: again}
    - name: Say what each call did
      ansible.builtin.debug:
        msg: "RESULT {{ {'take': take.remembered | default(false), 'renew': renew.remembered | default(false),
          'release': release.remembered | default(false), 'again': again.remembered | default(false),
          'same_record': first.stdout == second.stdout} | to_json }}"
"""


def run_play(tmp_path, lease, pause):
    (tmp_path / "play.yml").write_text(PLAY)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    extra = json.dumps({"lockdir": str(tmp_path / "backups"), "lease": lease, "pause": pause,
                        "ansible_python_interpreter": sys.executable})
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                           str(tmp_path / "play.yml"), "-e", extra], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert not (tmp_path / "backups" / ".run-lock.json").exists(), out  # given back
    line = next(line for line in out.splitlines() if '"msg": "RESULT ' in line)
    return json.loads(json.loads("{%s}" % line.strip())["msg"][len("RESULT "):])


def test_through_ansible_a_soon_renewal_and_a_second_release_stay_on_the_controller(tmp_path):
    said = run_play(tmp_path, 21600, 0)
    assert said == {"take": False, "renew": True, "release": False, "again": True, "same_record": True}


def test_through_ansible_a_renewal_after_a_twentieth_of_the_lease_reaches_the_host(tmp_path):
    said = run_play(tmp_path, 60, 4)  # 60 s, the least lease: 3 s of memory
    assert said == {"take": False, "renew": False, "release": False, "again": True, "same_record": False}
