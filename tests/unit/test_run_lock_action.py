"""The run lock through the action plugin and ansible-playbook, as an operator sees it: another run's holder fields
with a newline or an ANSI escape reach the terminal escaped (probe 6 D4), and a wait that is not a number is refused
by name by the module, never an action plugin's exception."""

import json
import os
import subprocess
import sys

from ansible.module_utils.sglang_run_lease import acquire

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAY = """\
- name: Take the run lock once
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Take it
      sglang_run_lock:
        dir: "{{ lockdir }}"
        wait: "{{ lock_wait }}"
"""
EVIL = "other-ctl\n\x1b[31m:1:1"  # another controller: the action cannot prove it gone, so it is not taken over


def play(tmp_path, wait):
    (tmp_path / "play.yml").write_text(PLAY)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    extra = json.dumps({"lockdir": str(tmp_path / "backups"), "lock_wait": wait,
                        "ansible_python_interpreter": sys.executable})
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                           str(tmp_path / "play.yml"), "-e", extra], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=240)
    return proc.returncode, proc.stdout + proc.stderr


def test_probe6_d4_another_runs_newline_and_ansi_escape_reach_the_operator_escaped(tmp_path):
    acquire(str(tmp_path / "backups"), EVIL, {"play": "Deploy\n\x1b[2J", "user": "mallory"}, wait=0, lease=3600)
    rc, out = play(tmp_path, 0)
    assert rc != 0 and "This host is being changed by another run" in out, out
    assert "\x1b" not in out, out
    line = next(x for x in out.splitlines() if x.startswith("fatal: [localhost]: FAILED! => "))
    msg = json.loads(line.split(" => ", 1)[1])["msg"]
    assert "\n" not in msg and "run other-ctl\\n\\x1b[31m:1:1 (play 'Deploy\\n\\x1b[2J'" in msg, msg


def test_a_wait_that_is_not_a_number_is_refused_by_name_not_an_exception(tmp_path):
    acquire(str(tmp_path / "backups"), "other-ctl:1:1", {"play": "Deploy"}, wait=0, lease=3600)
    rc, out = play(tmp_path, "abc")
    assert rc != 0 and "wait" in out and "abc" in out, out
    assert "Traceback" not in out and "Unexpected failure" not in out and "ValueError" not in out, out
