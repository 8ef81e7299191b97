"""The steps of a server across nodes that read the peers' results, run through Ansible as the role runs them.

The phase actions keep each step's result in this run's record on the controller (lib/sglang_state/run_record.py)
and read their peers' there; the one task outside the transaction that decides from them (the drain before a
restart, deploy.yml) reads them with the filter sglang_run_results. Here two local hosts a and b of one server,
each with its record as a phase would have left it (written by a test double's action, tests/unit/run_record_seed/),
in one ansible-playbook run; and the proof's server level as the action reads it from the records.
"""

import importlib.util
import json
import os
import subprocess
import sys

import pytest
import yaml
from sglang_state import phase_action, run_record

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def run(tmp_path, tasks, node_records):
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
        {"name": "What each node's phases kept", "sglang_seed_run_record": {
            "record": "{{ ('%s' | from_json)[inventory_hostname] }}" % json.dumps(node_records)}}] + tasks + [
        {"name": "Keep what the role decided", "delegate_to": "localhost", "ansible.builtin.copy": {
            "dest": str(out) + "/{{ inventory_hostname }}.json",
            "content": "{{ {'peers': _sglang_peers | default(none)} | to_json }}"}}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_ACTION_PLUGINS=os.pathsep.join([os.path.join(REPO, "action_plugins"),
                                                       os.path.join(REPO, "tests/unit/run_record_seed")]))
    result = subprocess.run([PLAYBOOK_BIN, "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")], cwd=REPO,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return {host: json.loads((out / ("%s.json" % host)).read_text()) for host in ("a", "b")}


def _drain_condition():
    """deploy.yml's drain task's condition, as the role writes it."""
    with open(os.path.join(REPO, "roles", "sglang", "tasks", "deploy.yml"), encoding="utf-8") as handle:
        (drain,) = [task for task in yaml.safe_load(handle) if "drain" in task["name"]]
    return drain["when"]


def test_the_drain_reads_every_node_s_render_from_the_run_s_records(tmp_path):
    """On every node, {node: that node's render}: a and b see the same peers, and the drain's condition holds when
    any node's files changed."""
    records = {host: {"results": {"render": {"phase": "render", "files_changed": host == "a"}}} for host in ("a", "b")}
    condition = _drain_condition()
    assert "sglang_run_results('render')" in condition
    keep = {"name": "Gather", "ansible.builtin.set_fact": {
        "_sglang_peers": "{{ _sglang_batch_nodes | sglang_run_results('render') }}"}}
    got = run(tmp_path, [keep], records)
    for host in ("a", "b"):
        assert {node: result["files_changed"] for node, result in got[host]["peers"].items()} == {"a": True,
                                                                                              "b": False}


def test_a_node_without_the_step_is_named_by_the_drain(tmp_path):
    records = {"a": {"results": {"render": {"phase": "render", "files_changed": False}}}, "b": {"results": {}}}
    keep = {"name": "Gather", "ansible.builtin.set_fact": {
        "_sglang_peers": "{{ _sglang_batch_nodes | sglang_run_results('render') }}"}}
    with pytest.raises(AssertionError, match="b has no render: the step render did not run there"):
        run(tmp_path, [keep], records)


def test_a_server_is_proven_in_full_when_one_node_needs_it(tmp_path):
    """The proof's prove and record phases read the nodes' own levels (the decide phase's, in each node's record): a
    needs only a check, b changed and needs the full proof, so the server is proven in full on both, with b's
    reason."""
    spec = importlib.util.spec_from_file_location("proof_action", os.path.join(REPO, "action_plugins",
                                                                               "sglang_prove.py"))
    action = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(action)
    levels = {"a": {"level": "check", "reason": "nothing changed since the last full proof"},
              "b": {"level": "full", "reason": "this run changed the unit"}}
    for host in ("a", "b"):
        run_record.write(str(tmp_path), host, {"results": {"decide": {"own": levels[host]}}})
    for host in ("a", "b"):
        records = phase_action.Records(str(tmp_path), host)
        records.mine = records.own()
        found = action.ActionModule.from_record(None, "prove", {"batch": ["a", "b"]}, records)
        assert found["planned"] == levels["b"]


def _nodes_check():
    """nodes.yml's first task, the check of a server's nodes before anything restarts, as the role writes it."""
    with open(os.path.join(REPO, "roles", "sglang", "tasks", "nodes.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)[0]


@pytest.mark.parametrize("b_sglang, said", [("0.5.23", None), ("0.5.9", r'b has versions \{\\"sglang\\": \\"0.5.9\\"\} '
                                                                        r'where a has \{\\"sglang\\": \\"0.5.23')])
def test_the_nodes_check_reads_each_nodes_runtime_from_its_install_in_the_run_s_record(tmp_path, b_sglang, said):
    check = dict(_nodes_check())
    assert "sglang_run_result', 'install'" in check["vars"]["_refusals"]  # not a peer's fact through hostvars
    check["vars"] = dict(check["vars"], sglang_server_name="s", sglang_nccl_socket_ifname="",
                         sglang_gloo_socket_ifname="", _sglang_model={"sha256": "same"})
    records = {host: {"results": {"install": {"versions": {"sglang": "0.5.23" if host == "a" else b_sglang}}}}
               for host in ("a", "b")}
    if said is None:
        run(tmp_path, [check], records)
    else:
        with pytest.raises(AssertionError, match="The nodes of s differ: " + said):
            run(tmp_path, [check], records)
