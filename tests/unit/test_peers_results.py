"""The nodes of a server gather their peers' registers through one filter (issue 37 item 3): a node without the
register is refused by name (it was read as {} before, and the server decided for fewer nodes than it has)."""

import os
import subprocess
import sys

import pytest
from sglang_state.nodes import peers_results

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_every_node_s_result_in_the_nodes_order():
    assert peers_results(["n1", "n0"], {"n0": {"a": 0}, "n1": {"a": 1}}, "sglang_deploy", "the render") == {
        "n1": {"a": 1}, "n0": {"a": 0}}


@pytest.mark.parametrize("found, named", [({"n0": {}}, "n1 has no sglang_deploy"),
                                          ({}, "n0, n1 have no sglang_deploy")])
def test_a_node_without_its_result_is_named(found, named):
    with pytest.raises(ValueError) as refused:
        peers_results(["n0", "n1"], found, "sglang_deploy", "the render")
    assert named + ": the render did not run there" in str(refused.value)
    assert "strategy other than linear" in str(refused.value)


def test_through_ansible_a_peer_that_skipped_the_step_fails_the_gather(tmp_path):
    (tmp_path / "hosts.yml").write_text(
        "all:\n  hosts:\n    n0: {ansible_connection: local}\n    n1: {ansible_connection: local}\n")
    (tmp_path / "play.yml").write_text(
        "- hosts: all\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.set_fact:\n        step_result: 1\n      when: inventory_hostname == 'n0'\n"
        "    - ansible.builtin.debug:\n"
        "        msg: \"{{ ['n0', 'n1'] | sglang_peers_results(hostvars, 'step_result', 'the step') }}\"\n")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i",
                             str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    output = " ".join(result.stdout.split())
    assert result.returncode != 0
    assert "the nodes of a server move in step, and n1 has no step_result: the step did not run there" in output
    assert "Traceback" not in result.stdout + result.stderr
