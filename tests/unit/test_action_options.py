"""The run lock's and the report's actions refuse an option they do not take, by name, before they do anything
(Ansible's own check of _VALID_ARGS, as its pause action has it); sglang_deploy refuses per phase
(test_sglang_deploy_options.py)."""

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PLAY = """
- name: One action with an option it does not take
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: The action
      {action}:
        {given}
"""


@pytest.mark.parametrize("action, given", [
    ("sglang_run_lock", "state: acquired\n        dir: {tmp}\n        wiat: 3"),
    ("sglang_run_report", "root: {tmp}\n        host: h\n        facts: {{}}\n        colour: red"),
])
def test_an_unknown_option_is_refused_by_name_before_the_action_runs(tmp_path, action, given):
    play = tmp_path / "play.yml"
    play.write_text(PLAY.format(action=action, given=given.format(tmp=tmp_path)))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), str(play)],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    bad = "wiat" if action == "sglang_run_lock" else "colour"
    assert "Invalid options for %s: %s" % (action, bad) in result.stdout + result.stderr, result.stdout
    assert sorted(os.listdir(tmp_path)) == ["play.yml"]  # nothing written: no lock record, no report
