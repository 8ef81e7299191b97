"""callback_plugins/sglang_once.py through ansible-playbook: an error whose cause chain repeats the fatal line's
message is printed once, and from -vvv on the exception with its chain is printed as the default callback does."""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
# A filter failing inside a template: ansible-core 2.19 reports it with a cause chain ending in from_json's error.
PLAY = ("- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.debug:\n        msg: \"{{ '{' | from_json }}\"\n")
INNER = "Expecting property name enclosed in double quotes"


def play(tmp_path, *args, stdout_callback=None, text=PLAY, rc=2):
    path = tmp_path / "play.yml"
    path.write_text(text)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    if stdout_callback:
        env["ANSIBLE_STDOUT_CALLBACK"] = stdout_callback
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), str(path), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == rc, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def test_the_default_callback_prints_the_message_several_times(tmp_path):
    # What sglang_once is for: without it the same sentence comes in the [ERROR] block, its chain and the fatal line.
    output = play(tmp_path, stdout_callback="default")
    assert output.count(INNER) >= 2 and "[ERROR]" in output, output


def test_the_error_is_printed_once(tmp_path):
    output = play(tmp_path)
    assert output.count(INNER) == 1, output
    assert "fatal: [localhost]: FAILED!" in output and "[ERROR]" not in output and "<<< caused by >>>" not in output


def test_at_vvv_the_exception_and_its_chain_are_kept(tmp_path):
    output = play(tmp_path, "-vvv")
    assert "[ERROR]: Task failed" in output and "<<< caused by >>>" in output, output
    assert output.count(INNER) >= 2


LINES = ("- hosts: localhost\n  gather_facts: false\n  tasks:\n"
         "    - ansible.builtin.debug:\n        msg: [first line, second line]\n"
         "    - ansible.builtin.fail:\n        msg: \"refused: a\\nrefused: b\"\n")


def test_lines_for_a_person_are_printed_as_lines(tmp_path):
    output = play(tmp_path, text=LINES)
    assert "\nfirst line\nsecond line\n" in output and '"msg"' not in output, output
    assert "fatal: [localhost]: FAILED!\nrefused: a\nrefused: b\n" in output, output
    # with -v the results are Ansible's own again
    assert '"msg": [' in play(tmp_path, "-v", text=LINES)


def test_an_unreachable_host_is_reported_once(tmp_path):
    text = ("- hosts: nowhere\n  gather_facts: false\n  tasks:\n    - ansible.builtin.ping:\n")
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n    nowhere: {ansible_host: 192.0.2.1, ansible_connection: ssh, "
                         "ansible_ssh_common_args: '-o ConnectTimeout=3'}\n")
    output = play(tmp_path, "-i", str(inventory), text=text, rc=4)
    assert output.count("Failed to connect to the host") == 1, output
