"""Every action refuses an option it does not take, by name, before it does anything: the run lock's and the
report's by Ansible's own check of _VALID_ARGS, as its pause action has it; the phase actions per phase, with the
run record as it stands (each phase in test_phase_actions.py)."""

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


@pytest.mark.parametrize("action, given, said", [
    ("sglang_run_lock", "state: acquired\n        dir: {tmp}\n        wiat: 3",
     "Invalid options for sglang_run_lock: wiat"),
    ("sglang_run_report", "root: {tmp}\n        host: h\n        facts: {{}}\n        colour: red",
     "Invalid options for sglang_run_report: colour"),
    # the phase actions name the phase and what it takes (tests/unit/test_phase_actions.py has each phase)
    ("sglang_runtime_install", "dir: {tmp}\n        kernel_wheel: []", "sglang_runtime_install: unknown option "
     "'kernel_wheel'; missing required arguments: check, cuda_home, extras, "),
    ("sglang_deploy", "phase: render\n        files: []\n        etc_dir: {tmp}\n        wiat: 3",
     "sglang_deploy (phase render): unknown option 'wiat'; missing required arguments: before_manifest, "),
    ("sglang_prove", "phase: observe\n        record_path: {tmp}/r.json\n        service: s\n        recrod: 1",
     "sglang_prove (phase observe): unknown option 'recrod'; phase observe takes: record_path, service; requires: "
     "record_path, service"),
    ("sglang_rescue", "phase: look\n        service: s\n        url: http://127.0.0.1:1\n        api_keys: k",
     "sglang_rescue (phase look): unknown option 'api_keys'; missing required arguments: failure, files, store; "
     "phase look takes: api_key, failure, files, service, store, url; requires: failure, files, service, store, url"),
    # what an earlier phase found is read from the run record, never passed: a task that passes the run is refused
    ("sglang_deploy", "phase: verify\n        batch: [localhost]\n        run: {{changed_this_run: true}}",
     "sglang_deploy (phase verify): unknown option 'run'; missing required arguments: context_target, host, "),
])
def test_an_unknown_option_is_refused_by_name_before_the_action_runs(tmp_path, action, given, said):
    play = tmp_path / "play.yml"
    play.write_text(PLAY.format(action=action, given=given.format(tmp=tmp_path)))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), str(play)],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert said in result.stdout + result.stderr, result.stdout
    assert sorted(os.listdir(tmp_path)) == ["play.yml"]  # nothing written: no lock record, no report, no file
