"""The steps of a server across nodes that gather the peers' values, run through Ansible as the role writes them.

The deploy transaction's phases and the proof gather each node's result from the other nodes of the server with
sglang_peers_results (a node without its register fails the task, named), and hand them on as one dict or list.
The expressions here are the role's own (vars/main.yml, not copied), run on two local hosts a and b of one server,
with what each node would have registered set by hand.
"""

import json
import os
import subprocess
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def run(tmp_path, tasks, node_facts):
    with open(os.path.join(REPO, "roles", "sglang", "defaults", "main.yml"), encoding="utf-8") as handle:
        play_vars = yaml.safe_load(handle)
    with open(os.path.join(REPO, "roles", "sglang", "vars", "main.yml"), encoding="utf-8") as handle:
        play_vars.update(yaml.safe_load(handle))  # the role's own vars (_sglang_nodes, _sglang_batch_nodes, ...)
    play_vars["sglang_nodes"] = ["a", "b"]
    inventory = {"all": {"hosts": {name: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
                                   for name in ("a", "b")}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    out = tmp_path / "out"
    out.mkdir()
    play = [{"hosts": "all", "gather_facts": False, "vars": play_vars, "tasks": [
        {"name": "What each node registered", "ansible.builtin.set_fact": {
            name: "{{ ('%s' | from_json)[inventory_hostname] }}"
            % json.dumps({host: facts[name] for host, facts in node_facts.items()})
            for name in node_facts["a"]}}] + tasks + [
        {"name": "Keep what the role decided", "delegate_to": "localhost", "ansible.builtin.copy": {
            "dest": str(out) + "/{{ inventory_hostname }}.json",
            "content": "{{ {'peers': _sglang_peers | default(none), 'level': _sglang_proof_level | default(none)}"
                       " | to_json }}"}}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    result = subprocess.run([PLAYBOOK_BIN, "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")], cwd=REPO,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return {host: json.loads((out / ("%s.json" % host)).read_text()) for host in ("a", "b")}


def test_each_deploy_phase_takes_every_node_s_result_of_the_phase_before(tmp_path):
    """The one gather of the deploy transaction (vars/main.yml's _sglang_deploy_nodes): on every node, {node: that
    node's registered sglang_deploy}, so a and b hand the same peers to the next phase."""
    facts = {host: {"sglang_deploy": {"phase": "render", "files_changed": host == "a", "run": {}}}
             for host in ("a", "b")}
    keep = {"name": "Gather", "ansible.builtin.set_fact": {"_sglang_peers": "{{ _sglang_deploy_nodes }}"}}
    got = run(tmp_path, [keep], facts)
    for host in ("a", "b"):
        assert {node: result["files_changed"] for node, result in got[host]["peers"].items()} == {"a": True,
                                                                                              "b": False}


def test_a_server_is_proven_in_full_when_one_node_needs_it(tmp_path):
    """vars/main.yml's gather of the nodes' own levels for prove.yml (the decide phase's, registered as
    sglang_proof_plan): a needs only a check, b changed and needs the full proof, so the server is proven in full
    on both, with b's reason."""
    levels = {"a": {"level": "check", "reason": "nothing changed since the last full proof"},
              "b": {"level": "full", "reason": "this run changed the unit"}}
    facts = {host: {"sglang_proof_plan": {"own": levels[host]}} for host in ("a", "b")}
    keep = {"name": "The server's proof",
            "ansible.builtin.set_fact": {"_sglang_proof_level": "{{ _sglang_proof_planned }}"}}
    got = run(tmp_path, [keep], facts)
    for host in ("a", "b"):
        assert got[host]["level"] == levels["b"]
