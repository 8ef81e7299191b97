"""A server across nodes fails as one when a node did not come up, naming that node (roles/sglang/tasks/
nodes_ready.yml): every node fails at the same task, so all of them go to the rescue together."""

import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
INVENTORY = "ct400:\n  hosts:\n    ct400-a: {ansible_connection: local}\n    ct400-b: {ansible_connection: local}\n"
NEVER_JOINED = ("torch.distributed.DistStoreError: Timed out after 91 seconds waiting for clients. 8/16 clients "
                "joined. Its last lines:\nTraceback ...")


def run(tmp_path, ready_a, ready_b):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(INVENTORY)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    extra = {"ready_a": ready_a, "ready_b": ready_b, "ansible_python_interpreter": sys.executable}
    return subprocess.run([PLAYBOOK_BIN, "-i", str(inventory), "tests/integration/nodes_localhost.yml",
                           "-e", json.dumps(extra)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_both_nodes_up_passes(tmp_path):
    result = run(tmp_path, {"ready": True}, {"ready": True})
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_node_that_never_joined_fails_every_node_and_is_named(tmp_path):
    # Rank 0 timed out waiting for the other ranks; ct400-b's own wait failed too (its unit died).
    result = run(tmp_path, {"ready": False, "failed": True, "msg": NEVER_JOINED},
                 {"ready": False, "failed": True, "msg": "sglang died (exit 1) while loading weights."})
    assert result.returncode != 0
    out = result.stdout
    assert out.count("fatal: [ct400-") == 2, out  # both nodes fail, at the same task
    assert "ct400 did not come up: ct400-a (node rank 0): torch.distributed.DistStoreError: Timed out after 91" in out
    assert "ct400-b (node rank 1): sglang died (exit 1) while loading weights." in out
    assert "Traceback" not in out  # the wait's own journal excerpt is dropped: the journal follows once


def test_one_node_down_fails_the_node_that_came_up_too(tmp_path):
    result = run(tmp_path, {"ready": True}, {"ready": False, "failed": True, "msg": "timed out after 1800 s"})
    assert result.returncode != 0
    assert result.stdout.count("fatal: [ct400-") == 2, result.stdout
    assert "ct400-b (node rank 1): timed out after 1800 s" in result.stdout
    assert "ct400-a (node rank 0)" not in result.stdout
