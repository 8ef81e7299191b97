"""A server across nodes through Ansible: `make plan` prints one plan per server, set by its least node.

The inventory is a temporary copy of the repository's (ct200 as it is) plus ct400, one server on two nodes whose
node b has less GPU memory and measured less free memory than node a.
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")

NODE_A = {"sglang_gpu_memory_mib": 97887, "sglang_calibration": {"pre_load_avail_gib": 85.334,
                                                                  "post_load_avail_gib": 68.9}}
NODE_B = {"sglang_gpu_memory_mib": 81559, "sglang_calibration": {"pre_load_avail_gib": 72.5,
                                                                  "post_load_avail_gib": 56.0}}
# A group_vars file, not the inventory's inline group vars: Ansible ranks group_vars/ files above inline vars,
# so group_vars/sglang_servers.yml would otherwise win over the child group's tp, model and policy.
CT400 = {"sglang_server_name": "ct400", "sglang_nodes": ["ct400-a", "ct400-b"], "sglang_model": "llama-3.1-70b",
         "sglang_speculative": {}, "sglang_tp_size": 8, "sglang_context_target": 100000, "sglang_pool_policy": "max"}


def inventory(tmp_path, ct400=CT400, nodes=("ct400-a", "ct400-b")):
    root = tmp_path / "inventory"
    (root / "group_vars").mkdir(parents=True)
    (root / "host_vars").mkdir()
    for group in ("sglang_servers", "kimi_k26_dflash"):  # ct200's model is its group's (inventory/hosts.yml)
        shutil.copy(os.path.join(REPO, "inventory", "group_vars", group + ".yml"), root / "group_vars")
    shutil.copy(os.path.join(REPO, "inventory", "host_vars", "ct200.yml"), root / "host_vars")
    hosts = {"sglang_servers": {"children": {"kimi_k26_dflash": {"hosts": {"ct200": {"ansible_host": "ct200"}}},
                                             "ct400": {"hosts": {name: {"ansible_host": "10.0.0.%d" % (i + 1)}
                                                                 for i, name in enumerate(nodes)}}}}}
    (root / "hosts.yml").write_text(yaml.safe_dump(hosts))
    (root / "group_vars" / "ct400.yml").write_text(yaml.safe_dump(ct400))
    for name, host_vars in zip(nodes, (NODE_A, NODE_B, NODE_A)[:len(nodes)], strict=True):
        (root / "host_vars" / ("%s.yml" % name)).write_text(yaml.safe_dump(host_vars))
    return str(root / "hosts.yml")


def run(*args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    return subprocess.run([PLAYBOOK_BIN, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def llama70_cell_bytes(tp):
    """docs/kv-pool-formula.md, MHA/GQA: max(1, kv_heads // attn_tp) x (head_dim + v_head_dim) x L x 2 (bf16)."""
    with open(os.path.join(REPO, "lib", "sglang_kvplan", "model_presets.yml"), encoding="utf-8") as handle:
        config = yaml.safe_load(handle)["llama-3.1-70b"]["config"]
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    return max(1, config["num_key_value_heads"] // tp) * (head_dim + head_dim) * config["num_hidden_layers"] * 2


def test_one_plan_for_the_server_set_by_its_least_node(tmp_path):
    result = run("-i", inventory(tmp_path), "playbooks/plan.yml", "-e", "sglang_report_dir=%s" % tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    plan_lines = re.findall(r'^((?:ct200|ct400)[^:\n]*): target ', result.stdout, re.M)  # make plan's plain lines
    assert sorted(plan_lines) == ["ct200", "ct400 (nodes ct400-a, ct400-b)"], result.stdout
    line = re.search(r'^ct400 \(nodes ct400-a, ct400-b\): (target .*)$', result.stdout, re.M).group(1)
    # pool policy max: the pin is what node b's A leaves above the 4 GiB headroom, floor((A - 4) x 2^30 / cell)
    # (in whole 64-token pages: without GPU facts the pin must hold on a B200, where trtllm_mha forces page 64)
    # and SGLang's reserve at 0.949 (1 - 4 GiB / node b's 79.65 GiB, floored) on that GPU, 4.062 GiB
    reserve = (1 - 0.949) * 81559 / 1024
    pool_b = int((56.0 - reserve) * 2**30 // llama70_cell_bytes(8)) // 64 * 64
    pool_a = int((68.9 - reserve) * 2**30 // llama70_cell_bytes(8)) // 64 * 64
    assert pool_b != pool_a
    assert line.startswith("target 100,000 -> pool %s tokens (pinned by --max-total-tokens %s, " % (
        format(pool_b, ","), format(pool_b, ",")))
    assert line.endswith("calibrated (P 72.500 GiB, A 56.000 GiB), limited by node ct400-b")
    assert ("--nnodes 2 --node-rank 0 --dist-init-addr 10.0.0.1:20000 --dist-timeout 300" in
            re.search(r'^flags: (.*)$', result.stdout[result.stdout.index(line):], re.M).group(1))
    assert "the plan takes the least P (node ct400-b) and the least A (node ct400-b)" in result.stdout
    # ct200 plans as it always did, beside the new server
    ct200 = ('\nct200: target 200,000 -> pool 217,612 tokens (--mem-fraction-static 0.953), headroom 4.0 GiB, '
             'calibrated (P 85.334 GiB, A 19.419 GiB)\n')
    assert ct200 in result.stdout
    assert sorted(os.listdir(tmp_path / "plan")) == ["ct200.png", "ct400.png"]


def test_a_node_list_the_gpus_do_not_split_over_fails_naming_the_knobs(tmp_path):
    hosts = inventory(tmp_path, dict(CT400, sglang_nodes=["ct400-a", "ct400-b", "ct400-c"]),
                      nodes=("ct400-a", "ct400-b", "ct400-c"))
    result = run("-i", hosts, "playbooks/plan.yml", "-l", "ct400", "-e", "sglang_report_dir=%s" % tmp_path)
    assert result.returncode != 0
    assert "sglang_nodes lists 3 nodes, but sglang_tp_size 8 x sglang_pp_size 1 = 8 GPUs" in result.stdout
    assert "List 2, 4 or 8 nodes in sglang_nodes" in result.stdout


@pytest.mark.parametrize("nodes, expected", [([], ""), (["ct200"], ""), (["ct400-a", "ct400-b"], " nodes2")])
def test_the_calibration_key_counts_the_nodes_of_a_server_only(tmp_path, nodes, expected):
    """The key as roles/sglang/tasks/model.yml keeps it (its own task's variables, rendered by Ansible)."""
    with open(os.path.join(REPO, "roles", "sglang", "tasks", "model.yml"), encoding="utf-8") as handle:
        tasks = yaml.safe_load(handle)
    task = next(t for t in tasks if "_sglang_calibration_key" in t.get("ansible.builtin.set_fact", {}))
    play = [{"hosts": "localhost", "connection": "local", "gather_facts": False,
             "vars": {"sglang_model_path": "/srv/models/kimi-k2.6",
                      "_sglang_checkpoint_list": [{"knob": "sglang_model_path"}],
                      "_read": {"sglang_model_path": {"sha256": "0123456789abcdef"}},
                      "sglang_tp_size": 8, "sglang_pp_size": 1, "sglang_dp_size": 1,
                      "sglang_enable_dp_attention": False, "sglang_version": "0.5.23", "sglang_pool_rules": "",
                      "sglang_kv_cache_dtype": "auto",
                      "sglang_speculative": {"algorithm": "dflash"}, "sglang_nodes": nodes,
                      "_complete": task["vars"]["_complete"], "_inputs": task["vars"]["_inputs"],
                      "_setup": task["vars"]["_setup"],
                      "key": task["ansible.builtin.set_fact"]["_sglang_calibration_key"]},
             "tasks": [{"name": "Key", "ansible.builtin.debug": {"msg": "KEY[{{ key }}]"}}]}]
    (tmp_path / "key.yml").write_text(yaml.safe_dump(play))
    result = run(str(tmp_path / "key.yml"))
    assert result.returncode == 0, result.stdout + result.stderr
    # A one-node key is the one ct200 stored its calibration under, before servers across nodes existed.
    assert "KEY[/srv/models/kimi-k2.6@0123456789ab tp8 pp1 dp1 sglang-0.5.23 kv-auto draft-DFLASH%s]" % expected \
        in result.stdout


def test_each_node_of_a_deploy_plans_the_same_pool_from_every_nodes_facts(tmp_path):
    """As in a deploy: preflight set each node's nvidia_gpu and model.yml its stored calibration in use
    (_sglang_calibration_in_use), which win over host_vars; each node renders its own rank."""
    hosts = inventory(tmp_path)
    stored = {"ct400-a": [97887, 85.0, 66.0], "ct400-b": [81559, 70.0, 50.0]}
    play = [{"hosts": "ct400", "connection": "local", "gather_facts": False, "tasks": [
        {"name": "What preflight and model.yml set on each node", "ansible.builtin.set_fact": {
            "nvidia_gpu": {"memory_mib_min": "{{ _stored[0] }}"},
            "_sglang_calibration_in_use": {"pre_load_avail_gib": "{{ _stored[1] }}",
                                           "post_load_avail_gib": "{{ _stored[2] }}"}},
         "vars": {"_stored": "{{ %r[inventory_hostname] }}" % (stored,)}},
        {"name": "Plan", "ansible.builtin.include_role": {"name": "sglang", "tasks_from": "plan"}},
        {"name": "Show", "ansible.builtin.debug": {
            "msg": "PLAN {{ inventory_hostname }} {{ sglang_kv_plan_result.args | join(' ') }} | "
                   "{{ sglang_kv_plan_result.explanation }}"}}]}]
    (tmp_path / "deploy.yml").write_text(yaml.safe_dump(play))
    result = run("-i", hosts, str(tmp_path / "deploy.yml"))
    assert result.returncode == 0, result.stdout + result.stderr
    # the message as debug prints it: JSON, so the loader option's JSON comes with its quotes escaped
    plans = {host: json.loads('"%s"' % msg) for host, msg in
             re.findall(r'"PLAN (ct400-[ab]) ((?:[^"\\]|\\.)*)"', result.stdout)}
    assert sorted(plans) == ["ct400-a", "ct400-b"], result.stdout
    # node b's stored A, not its host_vars' 56.0; whole 64-token pages (no GPU family known: a B200 forces 64)
    # and SGLang's reserve at 0.949 on node b's 79.65 GiB GPU, (1 - 0.949) x 79.65 = 4.062 GiB
    pool = int((50.0 - (1 - 0.949) * 81559 / 1024) * 2**30 // llama70_cell_bytes(8)) // 64 * 64
    for rank, name in enumerate(("ct400-a", "ct400-b")):
        args, explanation = plans[name].split(" | ")
        assert ("--max-total-tokens %d " % pool) in args
        # the node's flags, then the release's loader options (lib/sglang_kvplan/loader.py)
        assert args.endswith("--nnodes 2 --node-rank %d --dist-init-addr 10.0.0.1:20000 --dist-timeout 300 "
                             '--weight-loader-prefetch-checkpoints --model-loader-extra-config '
                             '{"enable_multithread_load":true}' % rank)
        assert explanation.endswith("calibrated (P 70.000 GiB, A 50.000 GiB), limited by node ct400-b")


def test_a_replan_takes_the_calibration_it_is_given_as_a_task_variable(tmp_path):
    # calibrate.yml re-plans with include_tasks' vars (_sglang_calibration_in_use = what the boot measured),
    # which hostvars do not hold: the plan must use that calibration, not the inventory's.
    play = [{"hosts": "ct200", "connection": "local", "gather_facts": False, "tasks": [
        {"ansible.builtin.include_role": {"name": "sglang", "tasks_from": "plan"},
         "vars": {"_sglang_calibration_in_use": {"pre_load_avail_gib": 85.334, "post_load_avail_gib": 12.0}}}]}]
    path = tmp_path / "replan.yml"
    path.write_text(yaml.safe_dump(play))
    result = run(str(path), "-e", "ansible_host=192.0.2.1")
    assert result.returncode != 0, result.stdout
    assert "context_target 200,000 does not fit" in result.stdout, result.stdout


def test_a_later_pass_of_the_model_step_uses_the_calibration_stored_since_though_nothing_is_read_again(tmp_path):
    """model.yml's set_fact runs on every pass: a later play of the same run (molecule default's side effect puts
    the default plan back after a deploy stored its calibration) gathers ansible_local again, and must plan from the
    calibration stored meanwhile, though its checkpoints were read already (the read task skipped)."""
    with open(os.path.join(REPO, "roles", "sglang", "tasks", "model.yml"), encoding="utf-8") as handle:
        task = next(t for t in yaml.safe_load(handle) if "_sglang_calibration_in_use" in
                    t.get("ansible.builtin.set_fact", {}))
    setup = {"sglang_model_path": "/srv/models/m", "sglang_tp_size": 8, "sglang_pp_size": 1, "sglang_dp_size": 1,
             "sglang_enable_dp_attention": False, "sglang_version": "0.5.23", "sglang_pool_rules": "",
             "sglang_kv_cache_dtype": "auto", "sglang_speculative": {}, "sglang_nodes": [],
             "sglang_calibration": {"pre_load_avail_gib": 80.0}, "sglang_calibration_fact": "sglang_calibration",
             "_sglang_checkpoint_list": [{"knob": "sglang_model_path"}]}
    key = "/srv/models/m@0123456789ab tp8 pp1 dp1 sglang-0.5.23 kv-auto draft-NONE"
    stored = {"pre_load_avail_gib": 85.33, "post_load_avail_gib": 19.42}
    keep = {"name": "Keep", "delegate_to": "localhost", "ansible.builtin.copy": {
        "dest": str(tmp_path) + "/{{ pass_name }}.json",
        "content": "{{ {'in_use': _sglang_calibration_in_use, 'key': _sglang_calibration_key} | to_json }}"}}
    first = {"_sglang_checkpoint_read": {"checkpoints": {"sglang_model_path": {"sha256": "0123456789abcdef"}}},
             "ansible_local": {}, "pass_name": "first"}
    later = {"_sglang_checkpoint_read": {"skipped": True},
             "ansible_local": {"sglang_calibration": {"entries": {key: stored}}}, "pass_name": "later"}
    plays = [{"hosts": "localhost", "connection": "local", "gather_facts": False, "vars": dict(setup, **given),
              "tasks": [task, keep]} for given in (first, later)]
    (tmp_path / "passes.yml").write_text(yaml.safe_dump(plays))
    result = run(str(tmp_path / "passes.yml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads((tmp_path / "first.json").read_text()) == {"in_use": {"pre_load_avail_gib": 80.0}, "key": key}
    assert json.loads((tmp_path / "later.json").read_text()) == {"in_use": stored, "key": key}
